"""Task bundles: the built-in ones are valid and reproduce their cards; broken ones are named.

A trial here is what a lab's `evaluate` does: run the solution in a copy of the starter
workspace, then the trusted grader on that workspace, from the bundle folder.
"""

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from workers.errors import BundleError
from workers.gym.bundle import Bundle, load_bundle, validate_bundle
from workers.gym.registry import builtin_gym_dir, bundle_dirs, find_bundle
from workers.lab.policies import policy_needs

BUILTIN = bundle_dirs()
"""Every built-in bundle by id: tests parametrized over it cover each new task."""
TOLERANCE = 0.01
"""How far a measured score may be from the card's number (BLAS sums may differ a bit)."""

MakeCopy = Callable[..., Path]


@pytest.fixture(params=sorted(BUILTIN))
def bundle(request: pytest.FixtureRequest) -> Bundle:
    return load_bundle(BUILTIN[request.param])


def workspace_copy(bundle: Bundle, destination: Path) -> Path:
    return shutil.copytree(
        bundle.workspace_dir, destination, ignore=shutil.ignore_patterns("__pycache__")
    )


def run_solution(bundle: Bundle, workspace: Path) -> None:
    done = subprocess.run(
        bundle.solution_argv(), cwd=workspace, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"the solution failed:\n{done.stderr}"


def run_grader(bundle: Bundle, workspace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        bundle.grader_argv(workspace),
        cwd=bundle.path,
        capture_output=True,
        text=True,
        timeout=bundle.card.grader.timeout_seconds,
    )


def grade(bundle: Bundle, workspace: Path) -> dict[str, float]:
    """The grader's scores, checking it kept the protocol: exit 0, one JSON object."""
    done = run_grader(bundle, workspace)
    assert done.returncode == 0, f"the grader failed:\n{done.stderr}"
    result = json.loads(done.stdout)
    assert {"scores", "notes"} <= set(result) <= {"scores", "notes", "usage"}
    assert isinstance(result["notes"], str)
    return result["scores"]


def digests(folder: Path) -> dict[str, Path]:
    return {
        hashlib.sha256(file.read_bytes()).hexdigest(): file
        for file in folder.rglob("*")
        if file.is_file() and file.stat().st_size
    }


def edit_card(folder: Path, old: str, new: str) -> None:
    card = folder / "task.toml"
    text = card.read_text()
    assert old in text, f"{old!r} is not in {card}"
    card.write_text(text.replace(old, new, 1))


# The built-in bundles.


def test_the_builtin_gym_is_found() -> None:
    assert builtin_gym_dir() == Path(__file__).resolve().parents[2] / "gym"
    assert "continual-digits" in BUILTIN


def test_builtin_bundle_validates_clean(bundle: Bundle) -> None:
    assert validate_bundle(bundle.path) == []
    assert bundle.id == bundle.path.name


OFFLINE = sorted(i for i, p in BUILTIN.items() if not load_bundle(p).card.grader.env)
"""Bundles whose grader needs nothing from outside (math-prompting needs a model endpoint
and is graded against a local simulator in tests/gym/test_math_prompting.py)."""


@pytest.mark.parametrize("task", OFFLINE)
def test_starter_solution_scores_the_cards_baseline(task: str, tmp_path: Path) -> None:
    bundle = load_bundle(BUILTIN[task])
    workspace = workspace_copy(bundle, tmp_path / "workspace")
    run_solution(bundle, workspace)
    # The grader must never import workspace code: these would break it if it did.
    for module in ("numpy.py", "sitecustomize.py", "json.py"):
        (workspace / module).write_text("raise SystemExit('workspace code ran in the grader')\n")
    scores = grade(bundle, workspace)
    assert set(scores) == {s.name for s in bundle.card.subtasks}
    for subtask in bundle.card.subtasks:
        measured = scores[subtask.name]
        assert measured == pytest.approx(subtask.baseline, abs=TOLERANCE), subtask.name


def test_grader_rejects_missing_outputs_with_a_clear_message(
    bundle: Bundle, tmp_path: Path
) -> None:
    done = run_grader(bundle, workspace_copy(bundle, tmp_path / "workspace"))
    assert done.returncode != 0
    assert done.stderr.strip(), "the grader must say why on stderr"
    assert "Traceback" not in done.stderr, "a clear message, not a crash"
    assert '"scores"' not in done.stdout


def test_hidden_files_are_not_in_the_workspace(bundle: Bundle) -> None:
    hidden = digests(bundle.hidden_dir)
    assert hidden, "hidden/ holds the grader's data"
    leaked = set(hidden) & set(digests(bundle.workspace_dir))
    assert not leaked, [str(hidden[d]) for d in leaked]


def test_bundle_commands() -> None:
    bundle = find_bundle("continual-digits")
    assert bundle.grader_argv(Path("w")) == [
        sys.executable,
        "grader/grade.py",
        str(Path("w").resolve()),
    ]
    assert bundle.solution_argv() == [sys.executable, "solution.py"]
    assert bundle.reproduce_argv() == [sys.executable, "baselines/reproduce.py"]
    assert set(bundle.card.search_space) <= set(bundle.starter_config())


# continual-digits in particular.


@pytest.fixture
def digits() -> Bundle:
    return find_bundle("continual-digits")


@pytest.mark.slow
def test_reproduce_prints_the_cards_baseline_and_sota(digits: Bundle) -> None:
    done = subprocess.run(
        digits.reproduce_argv(), cwd=digits.path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    for subtask in digits.card.subtasks:
        baseline, reference = printed["baseline"][subtask.name], printed["reference"][subtask.name]
        assert baseline == pytest.approx(subtask.baseline, abs=TOLERANCE), subtask.name
        assert reference == pytest.approx(subtask.sota, abs=TOLERANCE), subtask.name
    # Replay sits between forgetting everything and the joint upper bound.
    final = [printed[c]["final_accuracy"] for c in ("baseline", "replay", "reference")]
    assert final == sorted(final) and final[0] < 0.3 and final[2] > 0.9


def test_digits_test_labels_stay_hidden(digits: Bundle) -> None:
    labels = np.load(digits.hidden_dir / "test_labels.npz")["y_test"]
    public = np.load(digits.workspace_dir / "data" / "digits.npz")
    assert set(public.files) == {"x_train", "y_train", "x_test", "task_classes"}
    assert len(public["x_test"]) == len(labels)
    assert all(public[key].dtype == np.uint8 for key in public.files)


def test_prepare_regenerates_the_committed_data(digits: Bundle, bundle_copy: MakeCopy) -> None:
    copy = bundle_copy()
    for generated in [*(copy / "workspace" / "data").iterdir(), *(copy / "hidden").iterdir()]:
        generated.unlink()
    done = subprocess.run(
        [sys.executable, "prepare.py"], cwd=copy, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    for folder in ("workspace/data", "hidden"):
        assert arrays(copy / folder) == arrays(digits.path / folder)


def arrays(folder: Path) -> dict[str, dict[str, tuple[str, tuple[int, ...], str]]]:
    """Each `.npz` file's arrays by file and name: dtype, shape and a digest of the data.
    Compared rather than the files' bytes, which depend on the zlib that compressed them
    (the interpreter's build), not on what `prepare.py` computed."""
    found: dict[str, dict[str, tuple[str, tuple[int, ...], str]]] = {}
    for file in sorted(folder.glob("*.npz")):
        with np.load(file) as npz:
            found[file.name] = {
                name: (
                    str(npz[name].dtype),
                    npz[name].shape,
                    hashlib.sha256(np.ascontiguousarray(npz[name]).tobytes()).hexdigest(),
                )
                for name in npz.files
            }
    return found


def write_predictions(workspace: Path, stages: list[np.ndarray]) -> None:
    outputs = workspace / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    for k, predictions in enumerate(stages, start=1):
        np.save(outputs / f"predictions_after_task_{k}.npy", predictions)


def test_grader_metric_definitions(digits: Bundle, tmp_path: Path) -> None:
    labels = np.load(digits.hidden_dir / "test_labels.npz")["y_test"].astype(np.int64)
    perfect = tmp_path / "perfect"
    write_predictions(perfect, [labels] * 5)
    assert grade(digits, perfect) == {
        "final_accuracy": 1.0,
        "average_forgetting": 0.0,
        "average_incremental_accuracy": 1.0,
    }
    # Perfect on the current task's classes, wrong (the task's first class) elsewhere:
    # the pure-forgetting learner the metrics are defined against.
    forgetful = tmp_path / "forgetful"
    tasks = [(2 * k, 2 * k + 1) for k in range(5)]
    write_predictions(
        forgetful, [np.where(np.isin(labels, task), labels, task[0]) for task in tasks]
    )
    scores = grade(digits, forgetful)
    in_task = [np.isin(labels, task) for task in tasks]
    seen = [np.isin(labels, np.ravel(tasks[: k + 1])) for k in range(5)]
    incremental = [in_task[k][seen[k]].mean() for k in range(5)]  # only task k's are right
    assert scores["final_accuracy"] == pytest.approx(in_task[4].mean())
    assert scores["average_forgetting"] == pytest.approx(1.0)
    assert scores["average_incremental_accuracy"] == pytest.approx(np.mean(incremental))


@pytest.mark.parametrize(
    ("predictions", "reason"),
    [
        (np.zeros(3, dtype=np.int64), "shape"),
        (None, "dtype"),
        (np.array([{"a": 1}] * 540, dtype=object), "not a plain numpy array"),
    ],
)
def test_grader_rejects_malformed_outputs(
    digits: Bundle, tmp_path: Path, predictions: np.ndarray | None, reason: str
) -> None:
    labels = np.load(digits.hidden_dir / "test_labels.npz")["y_test"]
    bad = labels.astype(np.float64) if predictions is None else predictions
    write_predictions(tmp_path, [labels.astype(np.int64)] * 4 + [bad])
    done = run_grader(digits, tmp_path)
    assert done.returncode == 2
    assert reason in done.stderr and "predictions_after_task_5" in done.stderr


# Broken bundles: every problem is named at once.


def test_a_broken_bundle_is_rejected_with_every_problem_named(bundle_copy: MakeCopy) -> None:
    folder = bundle_copy("not-the-id")
    edit_card(folder, 'direction = "maximize"', 'direction = "up"')
    edit_card(folder, "baseline = 0.9908\n", "")
    (folder / "grader" / "grade.py").unlink()
    (folder / "baselines" / "reproduce.py").unlink()
    (folder / "workspace" / "solution.py").unlink()
    shutil.rmtree(folder / "hidden")

    problems = validate_bundle(folder)

    expected = [
        "task.toml: subtasks.0.direction: Input should be 'maximize' or 'minimize' (got 'up')",
        "task.toml: subtasks.1.baseline: Field required",
        "task.toml: id 'continual-digits' is not the folder's name 'not-the-id'",
        "workspace/solution.py: missing (the card's entrypoint)",
        "grader/grade.py: missing (named by grader.command)",
        "baselines/reproduce.py: missing (named by reproduce.baselines)",
        "hidden/: missing (the data only the grader reads)",
    ]
    assert problems == expected
    with pytest.raises(BundleError) as raised:
        load_bundle(folder)
    assert all(problem in str(raised.value) for problem in expected)


def test_numbers_that_are_not_finite_and_a_folder_for_a_script_are_named(
    bundle_copy: MakeCopy,
) -> None:
    """Found running labrxiv from outside: `sota = nan` validated "ok" and every run on the
    task then ended in error (a weight that is not finite); a grader command naming a
    folder was called missing."""
    folder = bundle_copy()
    edit_card(folder, "sota = 0.9648", "sota = nan")
    edit_card(folder, "baseline = 0.9908", "baseline = inf")
    edit_card(folder, 'command = ["python", "grader/grade.py"]', 'command = ["python", "grader"]')

    assert validate_bundle(folder) == [
        "task.toml: subtasks.0.sota: Input should be a finite number (got nan)",
        "task.toml: subtasks.1.baseline: Input should be a finite number (got inf)",
        "grader: a folder; name the script file it runs (named by grader.command)",
    ]


def test_a_sota_that_is_not_better_than_the_baseline_is_named(bundle_copy: MakeCopy) -> None:
    """Found running labrxiv from outside: `baseline == sota` validated "ok" and every score
    normalized to 0; a SOTA worse than the baseline validated "ok" and the baseline scored
    1.000 while better results scored lower."""
    folder = bundle_copy()
    edit_card(folder, "sota = 0.9648", "sota = 0.1944")  # final_accuracy, maximized
    edit_card(folder, "sota = 0.0184", "sota = 0.9950")  # average_forgetting, minimized

    problems = validate_bundle(folder)

    assert problems == [
        "task.toml: subtasks.0: subtask final_accuracy: its sota equals its baseline "
        "(0.1944): there is no gap from baseline to SOTA to measure progress in",
        "task.toml: subtasks.1: subtask average_forgetting: its sota 0.995 is not better than "
        "its baseline 0.9908 (minimize: lower is better)",
    ]
    with pytest.raises(BundleError) as raised:
        load_bundle(folder)
    assert all(problem in str(raised.value) for problem in problems)


def test_a_maximized_sota_below_its_baseline_is_named(bundle_copy: MakeCopy) -> None:
    folder = bundle_copy()
    edit_card(folder, "sota = 0.9862", "sota = 0.4")
    assert validate_bundle(folder) == [
        "task.toml: subtasks.2: subtask average_incremental_accuracy: its sota 0.4 is not "
        "better than its baseline 0.452 (maximize: higher is better)"
    ]


def test_hidden_data_or_grader_copied_into_the_workspace_is_named(
    bundle_copy: MakeCopy,
) -> None:
    folder = bundle_copy()
    shutil.copy(folder / "hidden" / "test_labels.npz", folder / "workspace" / "data" / "y.npz")
    shutil.copy(folder / "grader" / "grade.py", folder / "workspace" / "check.py")
    (folder / "workspace" / "outputs").mkdir()
    (folder / "workspace" / "link").symlink_to(folder / "hidden")

    assert validate_bundle(folder) == [
        "workspace/outputs/: leftover results of a run; delete it",
        "workspace/check.py: a copy of grader/grade.py, which must stay out of reach",
        "workspace/data/y.npz: a copy of hidden/test_labels.npz, which must stay out of reach",
        "workspace/link: a symlink; the workspace must hold plain files",
    ]


def test_missing_card(bundle_copy: MakeCopy) -> None:
    folder = bundle_copy()
    (folder / "task.toml").unlink()
    assert validate_bundle(folder) == ["task.toml: missing (the task card)"]


def test_unparsable_card_names_the_toml_error(bundle_copy: MakeCopy) -> None:
    folder = bundle_copy()
    edit_card(folder, 'primary = "final_accuracy"', "primary = final_accuracy")
    (problem,) = validate_bundle(folder)
    assert problem.startswith("task.toml: not valid TOML: ")
    assert "line 6" in problem


def test_a_cards_policies_are_checked_against_the_registry(bundle_copy: MakeCopy) -> None:
    known = policy_needs()
    folder = bundle_copy()
    edit_card(folder, 'policies = ["search", "llm", "agent"]', "policies = []")
    (problem,) = validate_bundle(folder, known)
    assert problem.startswith("task.toml: policies: List should have at least 1 item")
    edit_card(folder, "policies = []", 'policies = ["llm", "gpt-agent"]')
    assert validate_bundle(folder, known) == [
        "task.toml: policies: no policy 'gpt-agent' (known: agent, llm, search)"
    ]
    card = (folder / "task.toml").read_text()
    no_space = card.replace('policies = ["llm", "gpt-agent"]', 'policies = ["search"]')
    (folder / "task.toml").write_text(no_space[: no_space.index("[search_space]")])
    assert validate_bundle(folder, known) == [
        "task.toml: policies: 'search' needs a search_space (the parameters it may set)"
    ]
    assert validate_bundle(folder) == [], "without the registry, the card alone is valid"
    # A card that names no policies is for every one (search and llm) and so needs one too.
    card = (folder / "task.toml").read_text()
    (folder / "task.toml").write_text(card.replace('policies = ["search"]', ""))
    assert validate_bundle(folder, known) == [
        "task.toml: policies: 'search' needs a search_space (the parameters it may set)"
    ]
    for odd in ("[1]", "[{ a = 1 }]"):
        (folder / "task.toml").write_text(card.replace('["search"]', odd))
        (problem,) = validate_bundle(folder, known)
        assert problem.startswith("task.toml: policies.0: Input should be a valid string")


def test_a_card_that_is_not_utf8_is_named(bundle_copy: MakeCopy) -> None:
    folder = bundle_copy()
    (folder / "task.toml").write_bytes(b"\xff\xfe\x00bad")
    (problem,) = validate_bundle(folder)
    assert problem == "task.toml: not valid TOML: not UTF-8 text (byte 0)"


def test_search_space_keys_must_be_starter_config_keys(bundle_copy: MakeCopy) -> None:
    folder = bundle_copy()
    edit_card(folder, "[search_space]\n", "[search_space]\nmomentum = [0.0, 0.9]\n")
    assert validate_bundle(folder) == ["search_space.momentum: not a key of workspace/config.json"]


def test_missing_starter_config_and_workspace(bundle_copy: MakeCopy) -> None:
    folder = bundle_copy()
    (folder / "workspace" / "config.json").unlink()
    assert validate_bundle(folder) == [
        "workspace/config.json: missing (the baseline config the solution reads)"
    ]
    shutil.rmtree(folder / "workspace")
    assert validate_bundle(folder) == [
        "workspace/: missing (the starter files each run starts from)"
    ]


def test_cross_field_problems_are_named_beside_field_errors(bundle_copy: MakeCopy) -> None:
    folder = bundle_copy()
    edit_card(folder, 'primary = "final_accuracy"', 'primary = "speed"')
    assert validate_bundle(folder) == [
        "task.toml: primary 'speed' is not one of the subtasks "
        "['final_accuracy', 'average_forgetting', 'average_incremental_accuracy']"
    ]
    edit_card(folder, 'direction = "maximize"', 'direction = "up"')
    problems = validate_bundle(folder)
    assert len(problems) == 2
    assert "subtasks.0.direction" in problems[0] and "primary 'speed'" in problems[1]


def test_paths_in_the_card_must_stay_inside_the_bundle(bundle_copy: MakeCopy) -> None:
    folder = bundle_copy()
    edit_card(folder, 'entrypoint = "solution.py"', 'entrypoint = "../solution.py"')
    edit_card(folder, '"grader/grade.py"', '"/tmp/grade.py"')
    assert validate_bundle(folder) == [
        "entrypoint: '../solution.py' is not a path inside workspace/",
        "grader.command: '/tmp/grade.py' is not a path inside the bundle",
    ]


# Finding bundles.


def test_extra_folders_add_bundles(bundle_copy: MakeCopy, tmp_path: Path) -> None:
    copy = bundle_copy("my-task")
    edit_card(copy, 'id = "continual-digits"', 'id = "my-task"')
    assert bundle_dirs([tmp_path / "gym"])["my-task"] == copy.resolve()
    assert bundle_dirs([copy])["my-task"] == copy.resolve(), "a bundle may be named itself"
    assert find_bundle("my-task", [tmp_path / "gym"]).card.id == "my-task"
    assert "continual-digits" in bundle_dirs([tmp_path / "gym"])


def test_one_id_in_two_folders_is_an_error(bundle_copy: MakeCopy, tmp_path: Path) -> None:
    bundle_copy()
    with pytest.raises(BundleError, match="'continual-digits' is in two folders"):
        bundle_dirs([tmp_path / "gym"])


def test_unknown_task_and_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no task 'nope' \\(known tasks: .*continual-digits"):
        find_bundle("nope")
    with pytest.raises(BundleError, match="not a folder of task bundles"):
        bundle_dirs([tmp_path / "absent"])
