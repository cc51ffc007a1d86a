"""Recompute the numbers the card records: `python baselines/reproduce.py`, from the bundle.

Runs the starter solution in a fresh temporary copy of `workspace/` once per config —
`baseline` (the starter `config.json`, plain fine-tuning), `reference` (`reference.json`,
joint training on all data seen so far: the upper bound the card records as SOTA) and
`replay` (`replay.json`, rehearsal within the memory budget, for context) — grades each
with the trusted grader exactly as labrxiv does, and prints one JSON object:
`{"<config>": {"<subtask>": score, ...}, ...}`, scores rounded to 4 decimals.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

BUNDLE = Path(__file__).resolve().parent.parent
CONFIGS = {
    "baseline": BUNDLE / "workspace" / "config.json",
    "reference": BUNDLE / "baselines" / "reference.json",
    "replay": BUNDLE / "baselines" / "replay.json",
}


def run(card: dict, config: Path) -> dict[str, float]:
    """Run the solution with `config` in a temporary workspace and grade it."""
    with tempfile.TemporaryDirectory(prefix="continual-digits-") as temp:
        workspace = Path(temp) / "workspace"
        shutil.copytree(BUNDLE / "workspace", workspace)
        shutil.copyfile(config, workspace / "config.json")
        entrypoint = card.get("entrypoint", "solution.py")
        subprocess.run([sys.executable, entrypoint], cwd=workspace, check=True, timeout=120)
        command = card["grader"]["command"]
        argv = [sys.executable, *command[1:]] if command[0] == "python" else list(command)
        graded = subprocess.run(
            [*argv, str(workspace)], cwd=BUNDLE, check=True, capture_output=True, text=True
        )
    scores = json.loads(graded.stdout)["scores"]
    return {name: round(value, 4) for name, value in scores.items()}


def main() -> None:
    card = tomllib.loads((BUNDLE / "task.toml").read_text())
    results = {name: run(card, config) for name, config in CONFIGS.items()}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
