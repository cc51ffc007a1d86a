"""The math-prompting bundle, graded through the real `openai` client against a local simulator.

No model is reachable in tests, so this file starts the *reference simulator*: a stdlib
HTTP server on a free port that answers `POST /v1/chat/completions` in the OpenAI format.
It plays a model whose skill depends on the prompt, by a fixed, documented rule, so a
better technique scores higher deterministically; the card's numbers were measured
against it. Serve it for `baselines/reproduce.py` with
`python tests/gym/test_math_prompting.py --port 8000`.

The simulator's rule. It reads the question in the last user message (by the bundle's
templates; unreadable: it answers with no number) and works out its chain of steps. It
carries out `capacity` of them and answers the last result it reached, so a too-short
chain gives the result of an earlier step, a plausible mistake. The capacity is

    1  + 2 if the system or user messages say "step by step", or a few-shot answer
           shows its work (more than one line)
       + 1 if they say "plan"
       + 1 if there are at least two few-shot examples (assistant turns)

and, when the temperature is above 0, each sample's capacity moves by -1 (20 %), 0 (30 %)
or +1 (50 %), drawn from a hash of the question and the request's `seed`. With chain of
thought it writes one line per step and ends "The answer is N."; otherwise it writes the
number alone. Usage: characters // 4 as input tokens, of the reply // 4 + 1 as output.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from events import Event
from events.ids import new_id, utcnow
from events.payloads import ExperimentScored, RunStarted
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from projections.ledger import ledger_calls, ledger_totals
from runstate import fold
from workers.gym.card import TaskCard
from workers.gym.validate import validate_bundle
from workers.tools.invoke import invoke

BUNDLE = Path(__file__).resolve().parents[2] / "gym" / "math-prompting"
KINDS = ("shopping", "rates", "percent", "remainder")
API_KEY = "sk-test-4f7c2a9e1b3d5f6a8c0e2b4d6f8a1c3e"
"""A key shaped like a real one; it must never appear in anything the grader prints."""


# The reference simulator.


def chain(question: str) -> list[int]:
    """The intermediate results of the bundle's problem `question`; [] if unreadable."""
    numbers = {
        name: [int(n) for n in re.findall(pattern, question)]
        for name, pattern in {
            "coupon": r"coupon for \$(\d+) off",
            "bill": r"with a \$(\d+) bill",
            "holds": r"holds (\d+) liters",
            "already": r"already contains (\d+) liters",
            "inflow": r"adds (\d+) liters per minute",
            "leak": r"drains (\d+) liters per minute",
            "delay": r"after a (\d+)-minute delay",
            "price": r"priced at \$(\d+)",
        }.items()
    }
    if numbers["bill"]:
        return _shopping(question, numbers)
    if numbers["holds"] and numbers["inflow"]:
        return _rates(numbers)
    if numbers["price"]:
        return _percent(question, numbers["price"][0])
    if "packed into" in question:
        return _remainder(question)
    return []


def _shopping(question: str, numbers: dict[str, list[int]]) -> list[int]:
    steps, total = [], 0
    for quantity, price in re.findall(r"(\d+) \w+ at \$(\d+) each", question):
        total += int(quantity) * int(price)
        steps.append(total)
    if numbers["coupon"]:
        total -= numbers["coupon"][0]
        steps.append(total)
    return [*steps, numbers["bill"][0] - total]


def _rates(numbers: dict[str, list[int]]) -> list[int]:
    steps, missing, net = [], numbers["holds"][0], numbers["inflow"][0]
    if numbers["already"]:
        missing -= numbers["already"][0]
        steps.append(missing)
    if numbers["leak"]:
        net -= numbers["leak"][0]
        steps.append(net)
    steps.append(missing // net)
    if numbers["delay"]:
        steps.append(steps[-1] + numbers["delay"][0])
    return steps


def _percent(question: str, price: int) -> list[int]:
    ops = {
        r"on sale for (\d+)% off": lambda p, n: p * (100 - n) // 100,
        r"a further (\d+)% is taken off": lambda p, n: p * (100 - n) // 100,
        r"(\d+)% sales tax": lambda p, n: p * (100 + n) // 100,
        r"buys (\d+) of them": lambda p, n: p * n,
        r"\$(\d+) shipping fee": lambda p, n: p + n,
    }
    found = sorted(
        (match.start(), int(match.group(1)), apply)
        for pattern, apply in ops.items()
        for match in re.finditer(pattern, question)
    )
    steps = []
    for _, n, apply in found:
        price = apply(price, n)
        steps.append(price)
    return steps


def _remainder(question: str) -> list[int]:
    two = re.search(r"has (\d+) red \w+ and (\d+) blue", question)
    one = re.search(r"has (\d+) \w+\.", question)
    size = re.search(r"into \w+ of (\d+)", question)
    if not (two or one) or not size:
        return []
    steps = []
    held = int(two.group(1)) + int(two.group(2)) if two else int(one.group(1))
    if two:
        steps.append(held)
    for pattern, sign in ((r"gives (\d+) of them", -1), (r"finds (\d+) more", 1)):
        if match := re.search(pattern, question):
            held += sign * int(match.group(1))
            steps.append(held)
    left = held % int(size.group(1))
    steps.append(left)
    if "more" in question.split("packed into")[-1]:
        steps.append(int(size.group(1)) - left)
    return steps


def simulate(request: dict) -> str:
    """The simulator's reply to a chat completion request (see the module's docstring)."""
    messages = request["messages"]
    prompts = " ".join(m["content"] for m in messages if m["role"] in ("system", "user")).lower()
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    shows_work = any(len(a.strip().splitlines()) > 1 for a in answers)
    thinks = "step by step" in prompts or shows_work
    capacity = 1 + 2 * thinks + bool(re.search(r"\bplan\b", prompts)) + (len(answers) >= 2)
    question = messages[-1]["content"]
    if request.get("temperature", 1.0) > 0:
        seed = request.get("seed", 0)
        draw = hashlib.sha256(f"{question}|{seed}".encode()).digest()[0] / 256
        capacity += -1 if draw < 0.2 else 0 if draw < 0.5 else 1
    steps = chain(question)
    if not steps:
        return "I am not sure how to solve this."
    reached = steps[: max(1, capacity)]
    if not thinks:
        return str(reached[-1])
    lines = [f"Step {i}: the result is {value}." for i, value in enumerate(reached, 1)]
    return "\n".join([*lines, f"The answer is {reached[-1]}."])


class Simulator(ThreadingHTTPServer):
    """The simulator's server; `mode` scripts failures, `requests` records what it got."""

    daemon_threads = True

    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.mode = "simulate"
        self.requests: list[dict] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: Simulator

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(request)
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
        elif self.server.mode in ("echo_key_401", "echo_key_400"):
            # As some servers do: the key, masked or not, in the error text.
            if self.server.mode == "echo_key_401":
                self._send(401, {"error": {"message": f"Incorrect API key provided: {key}"}})
            else:
                masked = f"{key[:7]}{'*' * 20}{key[-4:]}"
                self._send(400, {"error": {"message": f"Bad request for key {masked}"}})
        else:
            text = simulate(request)
            prompt = sum(len(m["content"]) for m in request["messages"]) // 4
            self._send(
                200,
                {
                    "id": f"chatcmpl-{len(self.server.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": request["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": len(text) // 4 + 1,
                        "total_tokens": prompt + len(text) // 4 + 1,
                    },
                },
            )


# Fixtures and helpers.


@pytest.fixture(scope="module")
def simulator() -> Iterator[Simulator]:
    server = Simulator()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def card() -> TaskCard:
    with (BUNDLE / "task.toml").open("rb") as handle:
        return TaskCard.model_validate(tomllib.load(handle))


def grader_env(base_url: str | None, key: str | None = API_KEY) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LABRXIV_"))}
    if base_url:
        env["OPENAI_BASE_URL"] = base_url
    if key:
        env["OPENAI_API_KEY"] = key
    env["LABRXIV_GRADER_MODEL"] = "simulator"
    return env


def workspace(root: Path, config: dict | None = None) -> Path:
    """A copy of the starter workspace under `root`, its solution run with `config`."""
    copy = shutil.copytree(BUNDLE / "workspace", root / "workspace")
    if config is not None:
        (copy / "config.json").write_text(json.dumps(config))
    subprocess.run([sys.executable, "solution.py"], cwd=copy, check=True, timeout=30)
    return copy


def write_technique(root: Path, technique: object) -> Path:
    (root / "outputs").mkdir(parents=True, exist_ok=True)
    text = technique if isinstance(technique, str) else json.dumps(technique)
    (root / "outputs" / "technique.json").write_text(text)
    return root


def run_grader(work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "grader/grade.py", str(work)],
        cwd=BUNDLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def config(style: str, few_shot: int = 0, samples: int = 1, temperature: float = 0.0) -> dict:
    return {
        "style": style,
        "few_shot": few_shot,
        "self_consistency": samples,
        "temperature": temperature,
    }


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# The bundle.


def test_the_card_validates_and_is_for_llm_labs_only(card: TaskCard) -> None:
    assert validate_bundle(BUNDLE) == []
    assert card.policies == ["llm", "agent"]
    assert {s.name for s in card.subtasks} == {"accuracy", *KINDS}
    assert set(card.search_space) == set(json.loads((BUNDLE / "workspace/config.json").read_text()))
    assert "simulator" in card.subtask("accuracy").description


def test_prepare_regenerates_the_committed_problems(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "prepare.py", "--out", str(tmp_path)],
        cwd=BUNDLE,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for name in ("workspace/data/dev.jsonl", "hidden/test.jsonl"):
        assert (tmp_path / name).read_bytes() == (BUNDLE / name).read_bytes(), name


def test_splits_are_balanced_and_every_answer_follows_from_its_question() -> None:
    dev = read_jsonl(BUNDLE / "workspace/data/dev.jsonl")
    test = read_jsonl(BUNDLE / "hidden/test.jsonl")
    assert [sum(p["kind"] == k for p in test) for k in KINDS] == [10] * 4
    assert [sum(p["kind"] == k for p in dev) for k in KINDS] == [15] * 4
    for problem in dev + test:
        steps = chain(problem["question"])
        assert steps[-1] == problem["answer"] and len(steps) == problem["steps"], problem["id"]
    for problem in dev:
        assert problem["solution"].count("\n") + 1 == problem["steps"]


def test_the_workspace_holds_no_test_question_or_answer() -> None:
    test = read_jsonl(BUNDLE / "hidden/test.jsonl")
    texts = [f.read_text() for f in (BUNDLE / "workspace").rglob("*") if f.is_file()]
    public = "\n".join(texts)
    assert not [p["id"] for p in test if p["question"] in public]
    dev_questions = {p["question"] for p in read_jsonl(BUNDLE / "workspace/data/dev.jsonl")}
    assert not dev_questions & {p["question"] for p in test}


# Grading against the simulator.


def test_reproduce_measures_the_cards_numbers_and_a_better_technique_scores_higher(
    simulator: Simulator, card: TaskCard
) -> None:
    done = subprocess.run(
        [sys.executable, "baselines/reproduce.py", "--base-url", simulator.base_url],
        cwd=BUNDLE,
        env=grader_env(None),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    accuracy = [printed[name]["accuracy"] for name in ("baseline", "step_by_step", "sota")]
    assert accuracy[0] < accuracy[1] < accuracy[2], accuracy
    for subtask in card.subtasks:
        assert printed["baseline"][subtask.name] == pytest.approx(subtask.baseline, abs=1e-9)
        assert printed["sota"][subtask.name] == pytest.approx(subtask.sota, abs=1e-9)
    without = subprocess.run(
        [sys.executable, "baselines/reproduce.py"],
        cwd=BUNDLE,
        env=grader_env(None),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert without.returncode != 0 and "--base-url" in without.stderr


def test_the_grader_sends_the_technique_and_reports_usage(
    simulator: Simulator, tmp_path: Path
) -> None:
    work = workspace(tmp_path, config("plan_then_solve", few_shot=2, samples=2, temperature=0.7))
    technique = json.loads((work / "outputs/technique.json").read_text())
    simulator.requests.clear()
    done = run_grader(work, grader_env(simulator.base_url))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == {"scores", "notes", "usage", "model"}
    assert result["model"] == "simulator"
    assert (result["usage"]["cached_input_tokens"], result["usage"]["without_usage"]) == (0, 0)
    assert set(result["scores"]) == {"accuracy", *KINDS}
    assert result["notes"].startswith("simulator on 40 hidden questions x 2 samples")
    assert len(simulator.requests) == result["usage"]["calls"] == 80
    reported = [sum(len(m["content"]) for m in r["messages"]) // 4 for r in simulator.requests]
    assert result["usage"]["input_tokens"] == sum(reported), "the usage the server reported"
    first = simulator.requests[0]
    assert first["model"] == "simulator" and first["temperature"] == 0.7
    roles = ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["role"] for m in first["messages"]] == roles
    assert first["messages"][2]["content"] == technique["few_shot"][0]["answer"]
    assert sorted({r["seed"] for r in simulator.requests}) == [0, 1]
    assert API_KEY not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"samples": 6}, "samples: Input should be less than or equal to 5"),
        ({"template": "no slot"}, "template must contain {question} exactly once"),
        ({"tools": []}, "tools: Extra inputs are not permitted"),
        ({"system_prompt": "x" * 4001}, "system_prompt: String should have at most 4000"),
        ({"answer": {"rule": "after_marker"}}, "needs a non-empty marker"),
        ({"few_shot": [{"question": "q", "answer": "a"}] * 9}, "few_shot: List should have"),
        ({"samples": "3"}, "samples: Input should be a valid integer"),
    ],
)
def test_a_malformed_technique_is_refused_before_any_call(
    simulator: Simulator, tmp_path: Path, change: dict, reason: str
) -> None:
    technique = {"template": "Q: {question}", "samples": 1} | change
    simulator.requests.clear()
    done = run_grader(write_technique(tmp_path, technique), grader_env(simulator.base_url))
    assert done.returncode == 2
    assert reason in done.stderr and "technique.json" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == "" and simulator.requests == []


def test_a_file_that_is_not_json_or_too_large_is_refused(tmp_path: Path) -> None:
    env = grader_env("http://127.0.0.1:9/v1")
    done = run_grader(write_technique(tmp_path / "a", "{not json"), env)
    assert done.returncode == 2 and "is not valid JSON" in done.stderr
    big = {"template": "{question}", "system_prompt": "x" * 70_000}
    done = run_grader(write_technique(tmp_path / "b", big), env)
    assert done.returncode == 2 and "larger than 64000 bytes" in done.stderr


def test_an_unconfigured_endpoint_is_named(tmp_path: Path) -> None:
    work = write_technique(tmp_path, {"template": "{question}"})
    done = run_grader(work, grader_env(None, key=None))
    assert done.returncode == 2
    assert "not configured: set OPENAI_API_KEY" in done.stderr and "Traceback" not in done.stderr


def test_an_unreachable_endpoint_is_named(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    work = write_technique(tmp_path, {"template": "{question}"})
    done = run_grader(work, grader_env(f"http://user:pw@127.0.0.1:{port}/v1"))
    assert done.returncode == 2
    assert f"cannot reach the model endpoint http://127.0.0.1:{port}" in done.stderr
    assert "pw" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("mode", ["echo_key_401", "echo_key_400"])
def test_the_api_key_is_never_printed(simulator: Simulator, tmp_path: Path, mode: str) -> None:
    work = write_technique(tmp_path, {"template": "{question} Let's think step by step."})
    simulator.mode = mode
    try:
        done = run_grader(work, grader_env(simulator.base_url))
    finally:
        simulator.mode = "simulate"
    assert done.returncode == 2
    if mode == "echo_key_401":
        assert "rejected the API key (HTTP 401)" in done.stderr
    if mode == "echo_key_400":
        assert "HTTP 400" in done.stderr and "sk-***" in done.stderr
    for secret in (API_KEY, API_KEY[3:], API_KEY[-12:]):
        assert secret not in done.stdout + done.stderr


def main() -> None:
    """Serve the reference simulator until interrupted (for `baselines/reproduce.py`)."""
    parser = argparse.ArgumentParser(description="Serve the math-prompting reference simulator.")
    parser.add_argument("--port", type=int, default=8000)
    server = Simulator(parser.parse_args().port)
    print(f"simulator at {server.base_url} (any model name, any non-empty key)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()


# The grading's cost, through the lab's `evaluate` tool and into the ledger.


@pytest.mark.parametrize("priced", [True, False], ids=["priced", "no-price"])
def test_evaluate_prices_the_graders_usage_and_the_ledger_counts_it(
    simulator: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, priced: bool
) -> None:
    for name, value in grader_env(simulator.base_url).items():
        if name.startswith(("OPENAI_", "LABRXIV_")):
            monkeypatch.setenv(name, value)
    prices = tmp_path / "prices.toml"
    prices.write_text(
        "[models.simulator]\ninput = 2.0\ncached_input = 1.0\noutput = 8.0\n" if priced else ""
    )
    system = open_embedded(load_settings(data_dir=tmp_path / "data", prices=prices), threads=1)
    try:
        started = RunStarted(task="math-prompting", lab="lab-0", policy="llm")
        run = Event(id=new_id(), stream="run-g", version=0, occurred_at=utcnow(), payload=started)
        env = system.ctx.labs.env_for(fold([run]))
        technique = json.dumps(config("step_by_step", samples=2, temperature=0.7))
        invoke(env, "write_file", {"path": "config.json", "content": technique}, call_id="c1")
        simulator.requests.clear()
        outcome = invoke(env, "evaluate", {}, call_id="c2")
        (scored,) = [p for p in outcome.payloads if isinstance(p, ExperimentScored)]
        usage = scored.grader_usage
        assert usage is not None and usage["calls"] == len(simulator.requests) == 80
        assert scored.grader_model == "simulator"
        if priced:
            assert scored.grader_price is not None and scored.grader_price.input_per_mtok == 2.0
            expected = (usage["input_tokens"] * 2.0 + usage["output_tokens"] * 8.0) / 1e6
            assert scored.grader_cost_usd == pytest.approx(expected, rel=1e-9)
        else:
            assert scored.grader_price is None and scored.grader_cost_usd is None
        events = [
            Event(id=new_id(), stream="run-g", version=v, occurred_at=utcnow(), payload=p)
            for v, p in enumerate([started, *outcome.payloads])
        ]
        system.store.append(events)
        system.runner.catch_up()
        with system.store.engine.connect() as conn:
            (grading,) = [c for c in ledger_calls(conn, run="run-g") if c["kind"] == "grader"]
            (totals,) = ledger_totals(conn, by="run")
        assert grading["call_id"] == "grader/1" and grading["grader_calls"] == 80
        assert totals.tokens == usage["input_tokens"] + usage["output_tokens"]
        assert totals.dollars == pytest.approx(scored.grader_cost_usd or 0.0, rel=1e-9)
        assert totals.unknown_cost_calls == (0 if priced else 1)
    finally:
        system.close()
