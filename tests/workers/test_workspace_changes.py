"""What a tool call changed in its workspace is in its `tool.returned`: files written with
their sha256, files deleted, links as links, within caps, the same on a redelivered step."""

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from events import Event, EventStore
from events.ids import derived_id, utcnow
from events.payloads import FileDigest, RunStarted, ToolReturned
from events.upgrade import upgrade
from events.wire import encode_batch
from workers.bus.memory import MemoryBus
from workers.context import WorkerContext
from workers.gym.registry import find_bundle
from workers.reactor import Reactor
from workers.recorder import record_message
from workers.sandbox.backends import AUTO, new_sandbox
from workers.tools.changes import diff
from workers.tools.env import ToolEnv, ToolRun
from workers.tools.invoke import invoke
from workers.tools.look import look

TASK = "continual-digits"


@pytest.fixture
def env(tmp_path: Path) -> Iterator[ToolEnv]:
    """A run's tool environment on a workspace with two starter files."""
    os.chmod(tmp_path, 0o755)  # the sandbox user walks through it to its workspace
    bundle = find_bundle(TASK)
    sandbox = new_sandbox(AUTO, tmp_path / "run-ws")  # the backend this user gets
    (sandbox.root / "train.py").write_text("print('trained')\n")
    (sandbox.root / "data").mkdir()
    (sandbox.root / "data" / "table.csv").write_text("a,b\n1,2\n")
    sandbox.prepare()
    run = ToolRun(
        stream="run-ws", lab="lab", task=TASK, campaign=None, reads_archive=False, attempts=0
    )
    yield ToolEnv(sandbox=sandbox, card=bundle.card, bundle=bundle.path, archive=None, run=run)  # type: ignore[arg-type]
    sandbox.cleanup()


def returned(env: ToolEnv, tool: str, call_id: str = "c1", **args: Any) -> ToolReturned:
    """The `tool.returned` of one call."""
    (event,) = [p for p in invoke(env, tool, args, call_id).payloads if p.type == "tool.returned"]
    assert isinstance(event, ToolReturned)
    return event


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def written(event: ToolReturned) -> dict[str, str | None]:
    return {d.path: d.sha256 for d in event.files_written}


def test_python_writing_five_files_lists_five_with_their_sha256(env: ToolEnv) -> None:
    code = (
        "import os\nos.makedirs('out')\n"
        "for i in range(5):\n    open(f'out/{i}.txt', 'w').write('x' * i)"
    )
    event = returned(env, "python", code=code)
    assert event.exit_code == 0, event.preview
    root = env.sandbox.root
    assert written(event) == {f"out/{i}.txt": sha(root / f"out/{i}.txt") for i in range(5)}
    assert [d.size for d in event.files_written] == [0, 1, 2, 3, 4]
    assert {d.kind for d in event.files_written} == {"file"}
    assert event.files_deleted == [] and event.files_unlisted == 0


def test_bash_deleting_and_modifying_lists_both_and_not_the_file_it_left(env: ToolEnv) -> None:
    event = returned(env, "bash", command="rm data/table.csv && echo 'print(2)' >> train.py")
    assert event.exit_code == 0, event.preview
    assert written(event) == {"train.py": sha(env.sandbox.root / "train.py")}
    assert event.files_deleted == ["data/table.csv"]


def test_a_rewrite_behind_a_restored_mtime_is_still_listed(
    env: ToolEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`touch -r` sets the mtime back; the ctime, which no process can set, gives it away."""
    monkeypatch.setattr("workers.tools.look.RACY_NS", -(10**18))  # no file is hashed early
    command = (  # the same size, the same inode, the old mtime: only the content differs
        "cp -p train.py keep && printf \"print('TRAINED')\\n\" > train.py"
        " && touch -r keep train.py && rm keep"
    )
    event = returned(env, "bash", command=command)
    assert event.exit_code == 0, event.preview
    assert written(event) == {"train.py": sha(env.sandbox.root / "train.py")}


def test_write_file_lists_the_file_by_its_workspace_path(env: ToolEnv) -> None:
    event = returned(env, "write_file", path="./outputs//predictions.csv", content="id,y\n1,0\n")
    expected = hashlib.sha256(b"id,y\n1,0\n").hexdigest()
    assert event.files_written == [
        FileDigest(path="outputs/predictions.csv", sha256=expected, size=9, kind="file")
    ]


def test_write_file_of_the_same_bytes_right_after_a_write_is_listed(env: ToolEnv) -> None:
    """A rewrite with the same bytes is a write; where the clock is too coarse for the
    looks to see it, `write_file` says so itself."""
    returned(env, "write_file", "c1", path="notes.md", content="same")
    event = returned(env, "write_file", "c2", path="notes.md", content="same")
    digest = hashlib.sha256(b"same").hexdigest()
    assert event.files_written == [FileDigest(path="notes.md", sha256=digest, size=4)]


def test_a_call_that_changes_nothing_lists_nothing(env: ToolEnv) -> None:
    made = returned(env, "python", "c1", code="open('made.txt', 'w').write('1')")
    assert set(written(made)) == {"made.txt"}
    event = returned(env, "python", "c2", code="print(open('made.txt').read())")
    assert event.exit_code == 0 and event.preview.startswith("1"), event.preview
    assert (event.files_written, event.files_deleted) == ([], [])


def test_scratch_files_of_the_jail_are_not_listed(env: ToolEnv) -> None:
    code = (
        "import tempfile\ntempfile.NamedTemporaryFile(delete=False).write(b'x')\nopen('kept', 'w')"
    )
    event = returned(env, "python", code=code)
    assert event.exit_code == 0, event.preview
    assert written(event) == {"kept": hashlib.sha256(b"").hexdigest()}


def test_evaluate_lists_the_outputs_the_solution_wrote(env: ToolEnv) -> None:
    bundle = find_bundle(TASK)
    shutil.copytree(bundle.workspace_dir, env.sandbox.root, dirs_exist_ok=True)
    event = returned(env, "evaluate")
    assert event.exit_code == 0, event.preview
    outputs = {p: d for p, d in written(event).items() if p.startswith("outputs/")}
    assert outputs, "the solution's predictions are on record as written by evaluate"
    assert outputs == {p: sha(env.sandbox.root / p) for p in outputs}


def test_a_symlink_out_of_the_workspace_is_listed_as_a_link_never_followed(env: ToolEnv) -> None:
    command = "ln -s /etc/passwd leak && ln -s / everything"
    event = returned(env, "bash", command=command)
    assert event.exit_code == 0, event.preview
    assert event.files_written == [
        FileDigest(path="everything", sha256=None, size=1, kind="symlink", link="/"),
        FileDigest(path="leak", sha256=None, size=11, kind="symlink", link="/etc/passwd"),
    ]


def test_at_most_200_paths_are_listed_and_the_rest_counted(env: ToolEnv) -> None:
    code = "import os\nos.makedirs('many')\nfor i in range(230):\n    open(f'many/{i:03}', 'w')"
    event = returned(env, "python", code=code)
    assert event.exit_code == 0, event.preview
    assert [d.path for d in event.files_written] == [f"many/{i:03}" for i in range(200)]
    assert event.files_unlisted == 30


def test_files_over_the_hash_cap_or_past_the_budget_are_listed_with_size_only(
    env: ToolEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("workers.tools.changes.HASH_MAX_BYTES", 1000)
    monkeypatch.setattr("workers.tools.changes.HASH_BUDGET_BYTES", 1500)
    code = (
        "for name, n in [('a', 900), ('b', 2000), ('c', 500), ('d', 700)]:\n"
        "    open(name, 'w').write('x' * n)"
    )
    event = returned(env, "python", code=code)
    assert event.exit_code == 0, event.preview
    got = {d.path: (d.size, d.sha256 is not None) for d in event.files_written}
    # a: hashed (900 of 1500); b: over the cap; c: hashed (1400); d: past the budget
    assert got == {"a": (900, True), "b": (2000, False), "c": (500, True), "d": (700, False)}


@pytest.mark.parametrize("before_kept", [True, False], ids=["before-kept", "before-too-big"])
def test_a_redelivered_call_lists_the_same_changes(
    env: ToolEnv, monkeypatch: pytest.MonkeyPatch, before_kept: bool
) -> None:
    """The second try finds the first try's files there: a file deleted stays deleted, a
    file a script skips because it exists stays written, rewritten files keep their digest;
    also when the first try's before-look was too big to keep."""
    if not before_kept:
        monkeypatch.setattr("workers.tools.journal.PENDING_MAX_ENTRIES", 1)
    code = (
        "import os\n"
        "if os.path.exists('data/table.csv'): os.remove('data/table.csv')\n"
        "if not os.path.exists('model.bin'): open('model.bin', 'w').write('weights')\n"
        "open('log.txt', 'w').write('ran')"
    )
    first = returned(env, "python", "call-7", code=code)
    second = returned(env, "python", "call-7", code=code)
    assert first.files_deleted == second.files_deleted == ["data/table.csv"]
    assert first.files_written == second.files_written
    assert set(written(first)) == {"log.txt", "model.bin"}


def test_a_redelivered_step_of_two_calls_lists_each_calls_own_changes(env: ToolEnv) -> None:
    """The first call's before-look was replaced by the second's: its second try looks for
    itself, and keeps the deletion its first try made from the changes it listed."""
    calls = [
        ("a", "import os\nif os.path.exists('train.py'): os.remove('train.py')\nopen('one', 'w')"),
        ("b", "open('two', 'w').write('2')"),
    ]
    first = [returned(env, "python", call_id, code=code) for call_id, code in calls]
    second = [returned(env, "python", call_id, code=code) for call_id, code in calls]
    assert [(written(e), e.files_deleted) for e in first] == [
        (written(e), e.files_deleted) for e in second
    ]
    assert [(set(written(e)), e.files_deleted) for e in second] == [
        ({"one"}, ["train.py"]),
        ({"two"}, []),
    ]


def test_the_event_validates_through_the_recorder(env: ToolEnv, tmp_path: Path) -> None:
    os.symlink("/etc/passwd", env.sandbox.root / "leak")
    event = returned(env, "bash", command="rm leak; rm data/table.csv; printf x > b$'\\xff'.txt")
    assert event.exit_code == 0, event.preview
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    bus = MemoryBus()
    ctx = WorkerContext(store=store, bus=bus, reactor=Reactor(store, bus, []))
    now = utcnow()
    started = RunStarted(task=TASK, lab="lab", policy="search")
    events = [
        Event(
            id=derived_id(f"run-ws:{v}", now),
            stream="run-ws",
            version=v,
            occurred_at=now,
            payload=p,
        )
        for v, p in enumerate([started, event])
    ]
    record_message(ctx, encode_batch(events))
    assert store.dead_letters() == []
    (stored,) = [e for e in store.read_stream("run-ws") if e.type == "tool.returned"]
    assert stored.payload == event
    assert stored.payload.files_deleted == ["data/table.csv", "leak"]  # type: ignore[union-attr]
    assert written(stored.payload) == {"b\\xff.txt": None}  # type: ignore[arg-type]


def test_an_event_written_before_the_new_fields_still_validates() -> None:
    old = {
        "id": str(derived_id("run-old:1", utcnow())),
        "stream": "run-old",
        "version": 1,
        "occurred_at": utcnow().isoformat(),
        "schema_version": 1,
        "payload": {
            "type": "tool.returned",
            "call_id": "c",
            "tool": "write_file",
            "exit_code": 0,
            "duration_s": 0.1,
            "files_written": [{"path": "a.py", "sha256": "0" * 64}],
        },
    }
    payload = Event.model_validate(upgrade(old)).payload
    assert isinstance(payload, ToolReturned)
    assert payload.files_written == [FileDigest(path="a.py", sha256="0" * 64)]
    assert (payload.files_deleted, payload.files_unlisted) == ([], 0)
    assert payload.files_written[0].kind == "file" and payload.files_written[0].size is None


def test_hidden_paths_inside_the_workspace_are_never_looked_at(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "answers").mkdir(parents=True)
    (root / "answers" / "labels.txt").write_text("the answers")
    (root / "answers.txt").write_text("a lab's file of a similar name")
    (root / ".tmp").mkdir()
    (root / ".tmp" / "scratch").write_text("")
    (root / ".labrxiv-ready").write_text("")
    assert set(look(root, hidden=[root / "answers"])) == {"answers.txt"}


def test_a_racy_file_whose_stat_did_not_move_is_compared_by_content(tmp_path: Path) -> None:
    """On a coarse clock, a same-size rewrite just after a write can keep its stat: the
    before-look hashed such a recent file, and the content tells."""
    (tmp_path / "a").write_text("new!")
    now = look(tmp_path)["a"]
    old = now._replace(sha256=hashlib.sha256(b"old!").hexdigest(), racy=True)
    same = now._replace(sha256=hashlib.sha256(b"new!").hexdigest(), racy=True)
    assert [d.path for d in diff(tmp_path, {"a": old}, {"a": now}).written] == ["a"]
    assert diff(tmp_path, {"a": same}, {"a": now}).written == ()
