"""Recompute the numbers the card records: `python baselines/reproduce.py`, from the bundle.

Runs the starter solution in a fresh temporary copy of `workspace/` once per run and
grades each with the trusted grader exactly as labrxiv does:
- `baseline`: the starter `config.json` on the noisy labels;
- `reference`: `reference.json`, a configuration of the search space that combines
  several of its ingredients, on the noisy labels;
- `sota`: the starter `config.json` trained on the true training labels (read from
  `hidden/`, copied into the temporary workspace only): the upper bound the card records
  as SOTA. No lab can run it; it says how much the noise costs.
Prints one JSON object `{"<run>": {"<subtask>": score, ...}, ...}`, scores rounded to
4 decimals.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import numpy as np

BUNDLE = Path(__file__).resolve().parent.parent
RUNS = {
    "baseline": (BUNDLE / "workspace" / "config.json", False),
    "reference": (BUNDLE / "baselines" / "reference.json", False),
    "sota": (BUNDLE / "workspace" / "config.json", True),
}


def run(card: dict, config: Path, clean: bool) -> dict[str, float]:
    """Run the solution with `config` in a temporary workspace (on the true labels when
    `clean`) and grade it."""
    with tempfile.TemporaryDirectory(prefix="noisy-digits-") as temp:
        workspace = Path(temp) / "workspace"
        shutil.copytree(BUNDLE / "workspace", workspace)
        shutil.copyfile(config, workspace / "config.json")
        if clean:
            data = dict(np.load(workspace / "data" / "digits.npz"))
            data["y_noisy"] = np.load(BUNDLE / "hidden" / "labels.npz")["y_train"]
            np.savez_compressed(workspace / "data" / "digits.npz", **data)
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
    results = {name: run(card, config, clean) for name, (config, clean) in RUNS.items()}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
