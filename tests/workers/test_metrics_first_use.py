"""The process's metrics are made once even when many threads use them first at the same
moment (the bus threads of `labrxiv resume`, all taking their first step at once: two
made them twice and one step's end raised `DuplicateTimeseries` on the console)."""

import subprocess
import sys

SCRIPT = """
import threading
from workers.metrics import metrics

start = threading.Barrier(32)
made, failed = [], []

def first_use():
    start.wait()
    try:
        made.append(metrics())
    except Exception as exc:
        failed.append(repr(exc))

threads = [threading.Thread(target=first_use) for _ in range(32)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert not failed, failed[0]
assert len({id(m) for m in made}) == 1
"""


def test_many_threads_using_the_metrics_first_at_once_get_one_set() -> None:
    for _ in range(5):  # each a fresh process: a first use
        done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
