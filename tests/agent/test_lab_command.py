"""The `lab` command, run as the sandbox runs it: a script of the project's Python, here
without site-packages (it needs the standard library only) and with a minimal
environment, against a fake worker end of the lab socket."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.fake_lab import FakeLab, Reply, refused, reply
from workers.agent.inside import FOLDER
from workers.agent.inside.lab import title_and_abstract

LAB = FOLDER / "lab.py"


def run_lab(socket: Path | None, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {} if socket is None else {"LABRXIV_LAB_SOCKET": str(socket)}
    return subprocess.run(
        [sys.executable, "-S", str(LAB), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "name", "body"),
    [
        (["evaluate"], "evaluate", {}),
        (
            ["archive", "search", "herding", "ncm"],
            "archive_search",
            {"query": "herding ncm", "k": 5},
        ),
        (
            ["archive", "search", "herding", "-k", "3"],
            "archive_search",
            {"query": "herding", "k": 3},
        ),
        (["archive", "read", "p-1a2b"], "archive_read", {"paper_id": "p-1a2b"}),
        (["budget"], "budget", {}),
        (["finish", "herding", "wins"], "finish", {"summary": "herding wins"}),
        (["finish"], "finish", {"summary": ""}),
    ],
)
def test_a_command_sends_its_tool_and_prints_the_output(
    tmp_path: Path, args: list[str], name: str, body: dict[str, object]
) -> None:
    with FakeLab(tmp_path / "lab.sock", {name: reply(f"the {name} output")}) as lab:
        done = run_lab(lab.path, *args, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"the {name} output\n", "")
    assert lab.received == [(name, body)]


CLAIMS = [{"subtask": "split-1", "metric": "accuracy", "value": 0.91, "attempt": 2}]
PAPER = """# Herding beats NCM on split digits

We compare exemplar selection rules
on five splits.

## Method

Herding, 20 exemplars a class.
"""


def test_submit_sends_the_paper_its_title_abstract_and_claims(tmp_path: Path) -> None:
    (tmp_path / "paper.md").write_text(PAPER)
    (tmp_path / "claims.json").write_text(json.dumps(CLAIMS))
    args = ["submit", "paper.md", "--claims", "claims.json", "--cites", "p-1", "p-2"]
    with FakeLab(tmp_path / "lab.sock", {"submit": reply("submitted p-77")}) as lab:
        done = run_lab(lab.path, *args, "--revises", "p-0", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "submitted p-77\n")
    assert lab.received == [
        (
            "submit",
            {
                "title": "Herding beats NCM on split digits",
                "abstract": "We compare exemplar selection rules\non five splits.",
                "body": PAPER,
                "claims": CLAIMS,
                "cited": ["p-1", "p-2"],
                "revises": "p-0",
            },
        )
    ]


def test_submit_takes_the_title_and_abstract_given(tmp_path: Path) -> None:
    (tmp_path / "paper.md").write_text("no heading here\n")
    (tmp_path / "claims.json").write_text("[]")
    args = ["submit", "paper.md", "--claims", "claims.json", "--title", "T", "--abstract", "A"]
    with FakeLab(tmp_path / "lab.sock") as lab:
        done = run_lab(lab.path, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert lab.received == [
        ("submit", {"title": "T", "abstract": "A", "body": "no heading here\n", "claims": []})
    ]


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("# T\n\n## Abstract\n\nFirst para\ngoes on.\n\nSecond.", ("T", "First para\ngoes on.")),
        ("Preface.\n# T\nRight below.\n## Next", ("T", "Right below.")),
        ("# T\n\n## Only headings\n", ("T", None)),
        ("## Not a title\n\ntext", (None, None)),
    ],
)
def test_title_and_abstract_come_from_the_markdown(
    markdown: str, expected: tuple[str | None, str | None]
) -> None:
    assert title_and_abstract(markdown) == expected


def test_a_refusal_prints_its_output_and_exits_with_its_code(tmp_path: Path) -> None:
    answers = {"evaluate": reply("no attempts left in the budget", exit_code=3)}
    with FakeLab(tmp_path / "lab.sock", answers) as lab:
        done = run_lab(lab.path, "evaluate", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (3, "no attempts left in the budget\n")


def _one_line_exit_2(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    for word in words:
        assert word in done.stderr


def test_no_socket_is_one_line_exit_2(tmp_path: Path) -> None:
    _one_line_exit_2(
        run_lab(tmp_path / "absent.sock", "evaluate", cwd=tmp_path), "no lab socket", "absent.sock"
    )
    _one_line_exit_2(run_lab(None, "budget", cwd=tmp_path), "LABRXIV_LAB_SOCKET is not set")


def test_a_socket_nobody_listens_on_is_one_line_exit_2(tmp_path: Path) -> None:
    with FakeLab(tmp_path / "lab.sock"):
        pass  # closed: the socket file stays, with nothing behind it
    done = run_lab(tmp_path / "lab.sock", "evaluate", cwd=tmp_path)
    _one_line_exit_2(done, "nothing answers on the lab socket")


@pytest.mark.parametrize(
    ("claims", "words"),
    [
        (None, ["claims.json: no such file"]),
        ("[{not json", ["claims.json: not JSON"]),
        ('{"subtask": "s"}', ["claims.json: not a JSON list of claims"]),
        ("[1, 2]", ["claims.json: not a JSON list of claims"]),
    ],
)
def test_a_bad_claims_file_is_one_line_exit_2_and_sends_nothing(
    tmp_path: Path, claims: str | None, words: list[str]
) -> None:
    (tmp_path / "paper.md").write_text(PAPER)
    if claims is not None:
        (tmp_path / "claims.json").write_text(claims)
    with FakeLab(tmp_path / "lab.sock") as lab:
        done = run_lab(lab.path, "submit", "paper.md", "--claims", "claims.json", cwd=tmp_path)
    _one_line_exit_2(done, "lab submit:", *words)
    assert lab.received == []


@pytest.mark.parametrize(
    ("paper", "words"),
    [
        (None, ["paper.md: no such file"]),
        ("no heading\n", ["no '# ' title heading", "--title"]),
        ("# Title only\n", ["no paragraph after the title", "--abstract"]),
    ],
)
def test_a_paper_without_what_submit_needs_is_one_line_exit_2(
    tmp_path: Path, paper: str | None, words: list[str]
) -> None:
    if paper is not None:
        (tmp_path / "paper.md").write_text(paper)
    (tmp_path / "claims.json").write_text("[]")
    with FakeLab(tmp_path / "lab.sock") as lab:
        done = run_lab(lab.path, "submit", "paper.md", "--claims", "claims.json", cwd=tmp_path)
    _one_line_exit_2(done, *words)
    assert lab.received == []


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (refused(404, "no tool named evaluate"), ["no tool named evaluate", "404"]),
        (refused(400, "k: not an integer"), ["k: not an integer", "400"]),
        (Reply(body="<html>\nnot json\n</html>"), ["not JSON", "<html> not json"]),
        (Reply(body={"result": "x"}), ["lacks output and exit_code"]),
    ],
)
def test_an_unusable_answer_is_one_line_exit_2(
    tmp_path: Path, answer: Reply, words: list[str]
) -> None:
    with FakeLab(tmp_path / "lab.sock", {"evaluate": answer}) as lab:
        done = run_lab(lab.path, "evaluate", cwd=tmp_path)
    _one_line_exit_2(done, "lab evaluate:", *words)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], ["lab: ", "COMMAND", "lab --help"]),
        (["archive"], ["lab archive: ", "lab archive --help"]),
        (["archive", "search", "x", "-k", "many"], ["invalid int value"]),
        (["submit", "paper.md"], ["--claims"]),
        (["grade"], ["invalid choice"]),
    ],
)
def test_a_wrong_command_line_is_one_line_exit_2(
    tmp_path: Path, args: list[str], words: list[str]
) -> None:
    _one_line_exit_2(run_lab(tmp_path / "lab.sock", *args, cwd=tmp_path), *words)


def test_help_lists_every_command_with_a_line_of_help(tmp_path: Path) -> None:
    done = run_lab(None, "--help", cwd=tmp_path)
    assert done.returncode == 0
    listed = re.findall(r"^    (\w+)  +\w", done.stdout, re.MULTILINE)
    assert listed == ["evaluate", "archive", "submit", "budget", "finish"]
    for usage in ["lab archive search QUERY... [-k N]", "lab archive read PAPER_ID"]:
        assert usage in done.stdout
