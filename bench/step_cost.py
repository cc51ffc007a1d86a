"""CPU per lab step at event 100, 1,000 and 10,000 of one run, search and llm policies.

For each size, a run's stream is written to a fresh SQLite log up to that many events
(the policy's usual cycle: for `search`, write a configuration, evaluate it, the
grader's score; for `llm`, a model call, its answer with a tool call, the tool's
result), then `--steps` consecutive real steps are taken with `lab_step` on a worker
whose cache holds the run as the worker that took the previous step would, each step's
events appended as the recorder appends them. Printed: the median CPU time of a step
(this process: `time.process_time`, so a grader's subprocess is not counted), and the
ratio to the step at the smallest size. The target: the step at 10,000 costs at most
1.5x the step at 100.

    .venv/bin/python bench/step_cost.py [--sizes 100 1000 10000] [--steps 8]
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))

from fake_server import FakeServer, completion, usage  # noqa: E402

from events import Event, EventStore  # noqa: E402
from events.blobs import blob_ref  # noqa: E402
from events.ids import new_id  # noqa: E402
from events.payloads import (  # noqa: E402
    Budget,
    ExperimentScored,
    LlmConfig,
    ModelCalled,
    ModelResponded,
    Payload,
    PhaseEntered,
    RunStarted,
    ToolInvoked,
    ToolReturned,
    Usage,
)
from events.streams import run_stream  # noqa: E402
from labrxiv.settings import load_settings  # noqa: E402
from labrxiv.wiring import open_embedded  # noqa: E402
from workers.bus.memory import MemoryBus  # noqa: E402
from workers.context import WorkerContext  # noqa: E402
from workers.lab.lease import Leases  # noqa: E402
from workers.lab.step import lab_step  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)
STREAM = run_stream("bench")
MODEL = "gpt-4o-mini"


def _record(store: EventStore, batch: str) -> None:
    import base64

    body = orjson.loads(batch)
    events = [Event.model_validate(e) for e in body["events"]]
    blobs = {k: base64.b64decode(v) for k, v in (body.get("blobs") or {}).items()}
    store.append(events, blobs)


def search_cycle(attempt: int, rng: random.Random) -> list[Payload]:
    config = json.dumps(
        {
            "method": rng.choice(["finetune", "replay", "ncm"]),
            "replay_per_class": rng.choice([5, 10, 20, 40]),
            "learning_rate": rng.choice([0.01, 0.03, 0.1, 0.3]),
        },
        sort_keys=True,
    )
    call = f"c{attempt}"
    score = rng.random()
    return [
        ToolInvoked(
            call_id=f"{call}w", tool="write_file", args={"path": "config.json", "content": config}
        ),
        ToolReturned(
            call_id=f"{call}w", tool="write_file", exit_code=0, duration_s=0.001, preview="ok"
        ),
        ToolInvoked(call_id=f"{call}e", tool="evaluate", args={}),
        ToolReturned(
            call_id=f"{call}e", tool="evaluate", exit_code=0, duration_s=1.0, preview="scored"
        ),
        ExperimentScored(
            attempt=attempt,
            subtask_scores={"final_accuracy": score, "average_forgetting": 1 - score},
            score=score,
            normalized_score=score,
        ),
    ]


ANSWER = completion(
    text="Reading the configuration again.",
    tool_calls=[("read_file", '{"path": "config.json"}')],
    usage=usage(2000, 80, cached=1500),
    model=MODEL,
)


def llm_cycle(index: int, blobs: dict[str, bytes]) -> list[Payload]:
    body = dict(ANSWER.body)  # type: ignore[arg-type]
    body["id"] = f"chatcmpl-{index}"
    data = orjson.dumps(body)
    ref = blob_ref(data)
    blobs[ref.sha256] = data
    call = f"{STREAM}:{index}/1"
    return [
        ModelCalled(
            call_id=call,
            request_id=f"{STREAM}:{index}",
            attempt=1,
            model=MODEL,
            provider="bench",
            messages=9,
        ),
        ModelResponded(
            call_id=call,
            model=MODEL,
            usage=Usage(input_tokens=2000, cached_input_tokens=1500, output_tokens=80),
            latency_s=0.5,
            price=None,
            cost_usd=None,
            cost_known=False,
            tool_calls=1,
            preview="Reading the configuration again.",
            response=ref,
        ),
        ToolInvoked(call_id="call_1", tool="read_file", args={"path": "config.json"}),
        ToolReturned(
            call_id="call_1", tool="read_file", exit_code=0, duration_s=0.001, preview="x" * 600
        ),
    ]


def write_run(store: EventStore, policy: str, size: int, context_tokens: int) -> None:
    """`size` events of one run, in batches as a recorder would append them."""
    rng = random.Random(size)
    if policy == "search":
        started = RunStarted(
            task="continual-digits",
            lab="lab-0",
            policy="search",
            seed=1,
            budget=Budget(attempts=1_000_000),
        )
        payloads: list[Payload] = [started]
        blobs: dict[str, bytes] = {}
        attempt = 0
        while len(payloads) < size:
            attempt += 1
            payloads += search_cycle(attempt, rng)
    else:
        config = LlmConfig(model=MODEL, phase_calls=1_000_000, context_tokens=context_tokens)
        started = RunStarted(task="continual-digits", lab="lab-0", policy="llm", llm=config)
        payloads = [started, PhaseEntered(phase="plan"), PhaseEntered(phase="experiment")]
        blobs = {}
        index = 0
        while len(payloads) < size:
            index += 1
            payloads += llm_cycle(index, blobs)
    # End on a whole cycle (after a score; after a tool's result), as a real run pauses.
    end = ExperimentScored if policy == "search" else ToolReturned
    while not isinstance(payloads[size - 1], end):
        size -= 1
    events = [
        Event(
            id=new_id(),
            stream=STREAM,
            version=v,
            occurred_at=T0 + timedelta(seconds=v),
            correlation_id=None,
            actor="lab-0",
            payload=p,
        )
        for v, p in enumerate(payloads[:size])
    ]
    for start in range(0, len(events), 500):
        store.append(events[start : start + 500], blobs if start == 0 else None)


def measure(
    policy: str, size: int, steps: int, workdir: Path, context_tokens: int
) -> tuple[float, list[float], int]:
    """(cold fold ms, CPU ms of each step, events at the end) of `steps` steps after `size`;
    the first step is this worker's first of the run (it measures the conversation once)."""
    settings = load_settings(data_dir=workdir / f"{policy}-{size}")
    system = open_embedded(settings, threads=1)
    try:
        store = system.store
        write_run(store, policy, size, context_tokens)
        bus = MemoryBus()
        # With a step lease, as every worker labrxiv starts takes a step (the lease taken
        # and the run looked at again under it).
        leases = Leases(store, ttl=settings.stall_seconds)
        ctx = WorkerContext(store=store, bus=bus, labs=system.ctx.labs, leases=leases)
        # `run_state` is the cache's fold; a checkout whose cache holds events only has
        # `read` instead, which the bench warms there (so it measures older commits too).
        warm = getattr(ctx.streams, "run_state", None) or getattr(ctx.streams, "read", None)
        assert warm is not None
        began = time.process_time()
        warm(STREAM)
        cold = (time.process_time() - began) * 1000
        costs = []
        for _ in range(steps + 1):
            last = store.last_record(STREAM)
            assert last is not None and last.type != "run.finished", last
            began = time.process_time()
            lab_step(ctx, STREAM, last.version)
            costs.append((time.process_time() - began) * 1000)
            ((_task, (batch,)),) = bus.sent
            bus.sent.clear()
            _record(store, batch)
        last = store.last_record(STREAM)
        assert last is not None and last.type != "run.finished", last
        return cold, costs, last.version + 1
    finally:
        system.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--policies", nargs="+", default=["search", "llm"])
    parser.add_argument(
        "--context-tokens",
        type=int,
        default=8000,
        help="the llm run's context: 8,000 fills the kept window by event 100, so every "
        "size sends a request of the same size and the figure is the step's own growth",
    )
    args = parser.parse_args()
    with (
        FakeServer(models=(MODEL,), default=ANSWER) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        os.environ["OPENAI_BASE_URL"] = server.url
        os.environ["OPENAI_API_KEY"] = "sk-bench-0123456789abcdef0123"
        for policy in args.policies:
            base: float | None = None
            print(f"\n{policy} policy: CPU per step (median of {args.steps} consecutive steps)")
            columns = ("events", "cold fold ms", "1st step ms", "step ms", "min", "max", "x first")
            print("{:>8} {:>13} {:>12} {:>9} {:>7} {:>7} {:>8}".format(*columns))
            for size in args.sizes:
                cold, costs, _ = measure(policy, size, args.steps, Path(tmp), args.context_tokens)
                first, rest = costs[0], costs[1:]
                median = statistics.median(rest)
                base = base or median
                print(
                    f"{size:>8} {cold:>13.1f} {first:>12.1f} {median:>9.2f} {min(rest):>7.2f} "
                    f"{max(rest):>7.2f} {median / base:>8.2f}"
                )


if __name__ == "__main__":
    main()
