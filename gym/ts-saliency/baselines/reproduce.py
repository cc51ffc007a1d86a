"""Reproduce the card's numbers: `python baselines/reproduce.py` (cwd = the bundle).

Runs the starter solution twice, each time in a fresh temporary copy of `workspace/`:
with the baseline config (the starter's own `config.json`) and with the reference
config (`baselines/reference.json`, the best point of the card's search space); grades
each run with the trusted grader and prints `{"baseline": scores, "sota": scores}` as
JSON. The card's `baseline` and `sota` fields are these numbers.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BUNDLE = Path(__file__).resolve().parent.parent
CONFIGS = {
    "baseline": BUNDLE / "workspace" / "config.json",
    "sota": BUNDLE / "baselines" / "reference.json",
}


def run_and_grade(config: Path) -> dict[str, float]:
    """Scores of the starter solution run with `config` in a temporary workspace."""
    with tempfile.TemporaryDirectory(prefix="ts-saliency-") as tmp:
        workspace = Path(tmp) / "workspace"
        shutil.copytree(BUNDLE / "workspace", workspace)
        shutil.copyfile(config, workspace / "config.json")
        subprocess.run([sys.executable, "solution.py"], cwd=workspace, check=True)
        graded = subprocess.run(
            [sys.executable, "grader/grade.py", str(workspace)],
            cwd=BUNDLE,
            check=True,
            capture_output=True,
            text=True,
        )
    return json.loads(graded.stdout)["scores"]


def main() -> None:
    results = {name: run_and_grade(config) for name, config in CONFIGS.items()}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
