"""What watching a tool call's workspace costs, beside the tool call's own time.

For a workspace of 10, 1,000 and 10,000 files (1 KiB each, 100 a folder), `--calls`
`python` tool calls are made through `invoke`, as a lab step makes them, each writing 5
files. Printed, as medians over the calls:
- `look ms`: one look at the workspace (`workers.tools.look.look`, an `lstat` an entry);
- `watch ms`: everything the watch adds to a call: both looks, the journal kept beside
  the workspace, the diff and the hashing (the call's time through `invoke` minus the
  tool's own `duration_s`);
- `tool ms`: the tool's own time (`duration_s`: a jailed `python -c`);
- `watch / tool`: the share the watch adds.

    .venv/bin/python bench/workspace_look.py [--sizes 10 1000 10000] [--calls 7]

Needs what the sandbox needs (root, `unshare`), as the lab does.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from events.payloads import ToolReturned  # noqa: E402
from events.streams import run_stream  # noqa: E402
from workers.gym.registry import find_bundle  # noqa: E402
from workers.sandbox.local import LocalSandbox  # noqa: E402
from workers.tools.env import ToolEnv, ToolRun  # noqa: E402
from workers.tools.invoke import invoke  # noqa: E402

TASK = "continual-digits"
CODE = "for i in range(5):\n    open(f'made_{i}.txt', 'w').write('result %d' % i)"


def workspace(base: Path, files: int) -> ToolEnv:
    """A prepared workspace of `files` files of 1 KiB, 100 a folder."""
    run = ToolRun(run_stream(str(files)), "bench", TASK, None, False, 0)
    sandbox = LocalSandbox(base / run.stream)
    block = os.urandom(1024)
    for i in range(files):
        folder = sandbox.root / f"d{i // 100:03}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05}.bin").write_bytes(block)
    sandbox.prepare()
    bundle = find_bundle(TASK)
    return ToolEnv(sandbox=sandbox, card=bundle.card, bundle=bundle.path, archive=None, run=run)  # type: ignore[arg-type]


def measure(env: ToolEnv, calls: int) -> dict[str, float]:
    looks, watches, tools = [], [], []
    for call in range(calls):
        began = time.perf_counter()
        env.sandbox.look()
        looks.append(time.perf_counter() - began)
        began = time.perf_counter()
        outcome = invoke(env, "python", {"code": CODE}, call_id=f"bench-{call}")
        total = time.perf_counter() - began
        (returned,) = [p for p in outcome.payloads if isinstance(p, ToolReturned)]
        assert returned.exit_code == 0 and len(returned.files_written) == 5, returned
        watches.append(total - returned.duration_s)
        tools.append(returned.duration_s)
    return {
        "look": statistics.median(looks) * 1000,
        "watch": statistics.median(watches) * 1000,
        "tool": statistics.median(tools) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000, 10000])
    parser.add_argument("--calls", type=int, default=7)
    options = parser.parse_args()
    print("| files | look ms | watch ms | tool ms | watch / tool |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="labrxiv-look-") as folder:
        base = Path(folder)
        os.chmod(base, 0o755)  # the sandbox user walks through it to its workspace
        for files in options.sizes:
            got = measure(workspace(base, files), options.calls)
            share = got["watch"] / got["tool"]
            print(
                f"| {files:,} | {got['look']:.1f} | {got['watch']:.1f} | {got['tool']:.1f} "
                f"| {share:.0%} |"
            )


if __name__ == "__main__":
    main()
