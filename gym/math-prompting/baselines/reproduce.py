"""Measure the card's numbers against a model endpoint (cwd = the bundle):

    OPENAI_API_KEY=... python baselines/reproduce.py --base-url http://127.0.0.1:8000/v1

This task's scores depend on the model, so this script needs one: `--base-url` (default
`$OPENAI_BASE_URL`) names an OpenAI-compatible endpoint, `--model` (default
`$LABRXIV_GRADER_MODEL`, else the grader's default) the model, and `OPENAI_API_KEY` the key
(any non-empty value for a local server). The card records the numbers measured against
the reference simulator in `tests/gym/test_math_prompting.py` (run it as a script to serve
it); re-measure them for a real model.

Runs the starter solution in a fresh temporary copy of `workspace/` once per config —
`baseline` (the starter `config.json`: direct answering), `step_by_step` (zero-shot chain
of thought, for context) and `sota` (`reference.json`: plan-then-solve with four worked
examples and five majority-voted samples) — grades each with the trusted grader exactly as
labrxiv does, and prints one JSON object `{"<config>": {"<subtask>": score, ...}, ...}`.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BUNDLE = Path(__file__).resolve().parent.parent
CONFIGS = {
    "baseline": BUNDLE / "workspace" / "config.json",
    "step_by_step": BUNDLE / "baselines" / "step_by_step.json",
    "sota": BUNDLE / "baselines" / "reference.json",
}


def run_and_grade(config: Path, env: dict[str, str]) -> dict[str, float]:
    """Scores of the starter solution run with `config` in a temporary workspace."""
    with tempfile.TemporaryDirectory(prefix="math-prompting-") as tmp:
        workspace = Path(tmp) / "workspace"
        shutil.copytree(BUNDLE / "workspace", workspace)
        shutil.copyfile(config, workspace / "config.json")
        subprocess.run([sys.executable, "solution.py"], cwd=workspace, check=True)
        graded = subprocess.run(
            [sys.executable, "grader/grade.py", str(workspace)],
            cwd=BUNDLE,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if graded.returncode != 0:
        sys.exit(f"reproduce: {config.name}: {graded.stderr.strip()}")
    return json.loads(graded.stdout)["scores"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("LABRXIV_GRADER_MODEL"))
    args = parser.parse_args()
    if not args.base_url:
        parser.error("give --base-url (or set OPENAI_BASE_URL): the scores depend on the model")
    if not os.environ.get("OPENAI_API_KEY"):
        parser.error("set OPENAI_API_KEY (any non-empty value for a local server)")
    env = {**os.environ, "OPENAI_BASE_URL": args.base_url}
    if args.model:
        env["LABRXIV_GRADER_MODEL"] = args.model
    results = {name: run_and_grade(config, env) for name, config in CONFIGS.items()}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
