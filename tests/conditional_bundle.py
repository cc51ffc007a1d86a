"""A task bundle with conditional parameters (kNN, ridge or a tree, each with its own
settings), written into a test's folder: its solution and grader run in milliseconds."""

import json
from pathlib import Path

CARD = """
id = "pick-a-model"
title = "Pick a regression model"
primary = "score"
policies = ["search"]
goal = "Choose the model and its settings that score best."

[[subtasks]]
name = "score"
metric = "r2"
direction = "maximize"
baseline = 0.5
sota = 1.0

[budgets]
attempts = 16

[grader]
command = ["python", "grader/grade.py"]
timeout_seconds = 30

[reproduce]
baselines = "python baselines/reproduce.py"

[search_space]
model = ["knn", "ridge", "tree"]
n_neighbors = [1, 5, 15, 30]
weights = ["uniform", "distance"]
alpha = [0.01, 0.1, 1.0, 10.0]
max_depth = [2, 4, 8, 16]
scale = [true, false]
features = ["raw", "poly2", "poly3"]

[search_space_conditions]
n_neighbors = { model = "knn" }
weights = { n_neighbors = [5, 15, 30] }
alpha = { model = ["ridge"] }
max_depth = { model = "tree" }
"""
STARTER = {
    "model": "knn",
    "n_neighbors": 5,
    "weights": "uniform",
    "alpha": 1.0,
    "max_depth": 4,
    "scale": True,
    "features": "raw",
    "note": "not searched",
}
SOLUTION = """
import json, pathlib
pathlib.Path("outputs").mkdir(exist_ok=True)
pathlib.Path("outputs/used.json").write_text(pathlib.Path("config.json").read_text())
"""
GRADER = """
import json, sys, pathlib
c = json.loads((pathlib.Path(sys.argv[1]) / "outputs" / "used.json").read_text())
base = {"knn": 0.6, "ridge": 0.55, "tree": 0.5}[c["model"]]
if c["model"] == "knn":
    base += [1, 5, 15, 30].index(c["n_neighbors"]) * 0.03
    if c["n_neighbors"] != 1:
        base += 0.02 * (c["weights"] == "distance")
elif c["model"] == "ridge":
    base += [0.01, 0.1, 1.0, 10.0].index(c["alpha"]) * 0.04
else:
    base += [2, 4, 8, 16].index(c["max_depth"]) * 0.04
base += 0.01 * c["scale"] + ["raw", "poly2", "poly3"].index(c["features"]) * 0.02
print(json.dumps({"scores": {"score": base}}))
"""


def conditional_bundle(gym: Path, card: str = CARD) -> Path:
    """The bundle `pick-a-model` under `gym` (created), with `card` as its task.toml."""
    folder = gym / "pick-a-model"
    for sub in ("workspace", "grader", "hidden", "baselines"):
        (folder / sub).mkdir(parents=True)
    (folder / "task.toml").write_text(card)
    (folder / "workspace" / "config.json").write_text(json.dumps(STARTER))
    (folder / "workspace" / "solution.py").write_text(SOLUTION)
    (folder / "grader" / "grade.py").write_text(GRADER)
    (folder / "hidden" / "nothing.txt").write_text("no hidden data\n")
    (folder / "baselines" / "reproduce.py").write_text("print('baseline 0.5')\n")
    return folder
