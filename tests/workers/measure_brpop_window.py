"""Measure kombu's loss window: a worker killed between BRPOP and its unacked bookkeeping.

kombu's Redis transport takes a message off the queue with BRPOP, then records it in
the `unacked` hash; a worker killed in between loses the message (no redelivery, ever).
This script kills a worker at increasing delays after its first batch is committed,
when it acknowledges that batch and fetches the next, and counts the messages that
are then neither recorded, queued nor unacked.

    LABRXIV_REDIS_URL=redis://127.0.0.1:6379/9 python tests/workers/measure_brpop_window.py \\
        --pool prefork --trials 16 --first 0.015 --step 0.0025

It flushes the Redis database it is given: use a scratch one.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

from events import EventStore

HERE = Path(__file__).resolve().parent
LABRXIV = Path(sys.executable).with_name("labrxiv")


def trial(
    redis_url: str, pool: str, attempts: int, delay: float, workdir: Path
) -> tuple[int, int, int, int]:
    """One kill `delay` s after the first commit: (messages, recorded, queued, unacked)."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    store_url = f"sqlite:///{workdir / 'log.db'}"
    env = dict(os.environ, LABRXIV_DATABASE_URL=store_url, LABRXIV_VISIBILITY_TIMEOUT="3600")
    store = EventStore.from_url(store_url)
    publisher = [sys.executable, str(HERE / "publish_simulated.py"), "40", str(attempts)]
    done = subprocess.run(
        [*publisher, "--runs-per-message", "4"], env=env, capture_output=True, check=True
    )
    messages = json.loads(done.stdout)["messages"]
    size = 4 * (3 * attempts + 2)  # events a message: 4 runs
    with (workdir / "worker.log").open("ab") as log:
        worker = subprocess.Popen(
            [str(LABRXIV), "worker", "--queues", "events", "-c", "1", "-P", pool],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        while store.count() == 0:
            time.sleep(0.002)
        time.sleep(delay)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    recorded = store.count() // size
    store.engine.dispose()
    return messages, recorded, client.llen("events"), client.hlen("unacked")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pool", default="prefork")
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--attempts", type=int, default=250, help="250: 1.7 MB messages")
    parser.add_argument("--first", type=float, default=0.0, help="first delay, seconds")
    parser.add_argument("--step", type=float, default=0.004, help="delay step, seconds")
    args = parser.parse_args()
    redis_url = os.environ["LABRXIV_REDIS_URL"]
    lost_in = 0
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(args.trials):
            delay = args.first + index * args.step
            workdir = Path(scratch) / str(index)
            workdir.mkdir()
            messages, recorded, queued, unacked = trial(
                redis_url, args.pool, args.attempts, delay, workdir
            )
            # A batch committed but not yet acknowledged is both recorded and unacked
            # (and then nothing else is in flight: prefetch 1), hence the max.
            lost = max(0, messages - recorded - queued - unacked)
            lost_in += lost > 0
            print(
                f"kill {delay * 1000:5.1f} ms after the first commit: {recorded} recorded, "
                f"{queued} queued, {unacked} unacked, {lost} lost",
                flush=True,
            )
    print(f"{args.pool}: a message lost in {lost_in} of {args.trials} kills")


if __name__ == "__main__":
    main()
