"""Wrong agent settings are one line naming what is wrong (exit 2, nothing started); an
agent that cannot start ends its run in error saying why."""

from pathlib import Path

import pytest

from tests.agent.agent_support import run_campaign, store_of
from tests.llm.fake_server import FakeServer
from workers.agent.session import last_words

NEEDS = (
    "--policy agent needs --agent: a profile (claude-code, codex, mini-swe-agent) or a command line"
)
WRONG = [
    (("--model", "m"), NEEDS),
    (("--agent", "mini-swe-agent", "--model", "m"), "--agent mini-swe-agent needs --agent-env DIR"),
    (
        ("--agent", "python a.py", "--agent-env", "/no/such/folder", "--model", "m"),
        "--agent-env /no/such/folder: not a folder",
    ),
    (
        ("--agent", "python a.py", "--agent-reports", "xml", "--model", "m"),
        "--agent-reports must be one of functions, bash_blocks, none, not 'xml'",
    ),
    (
        ("--agent", "mini-swe-agnet", "--model", "m"),
        "--agent 'mini-swe-agnet' is no profile (profiles: claude-code, codex, mini-swe-agent)",
    ),
    (("--agent", "python 'a.py", "--model", "m"), '--agent "python \'a.py" is not a command line'),
    (("--agent", "codex"), "--model is required for --policy llm and --policy agent"),
]


@pytest.mark.parametrize(("args", "said"), WRONG)
def test_a_wrong_agent_setting_is_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    done = run_campaign(tmp_path, "http://127.0.0.1:9/v1", *args, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(said), line
    assert not (tmp_path / "data" / "labrxiv.db").exists()


def test_agent_options_are_refused_for_other_policies(tmp_path: Path) -> None:
    done = run_campaign(tmp_path, "http://127.0.0.1:9/v1", "--agent", "x y", timeout=60)
    assert done.returncode == 2
    # run_campaign asks for --policy agent: ask for search by a later option instead.
    env_done = run_campaign(
        tmp_path, "http://127.0.0.1:9/v1", "--policy", "search", "--agent-env", "/tmp", timeout=60
    )
    assert env_done.returncode == 2
    assert env_done.stderr.strip() == "--agent-env: only for --policy agent labs"


def test_an_agent_that_cannot_start_ends_its_run_in_error_saying_why(tmp_path: Path) -> None:
    with FakeServer(models=("m",)) as server:
        done = run_campaign(
            tmp_path, server.url, "--labs", "1", "--papers", "1",
            "--agent", "/no/such/agent --flag", "--model", "m", "--timeout", "120",
        )  # fmt: skip
        assert server.completions() == []
    assert done.returncode == 1, done.stdout + done.stderr
    store = store_of(tmp_path)
    (ended,) = [r.payload for r in store.iter_records(types=["run.finished"])]
    store.engine.dispose()
    assert ended["reason"] == "error"
    assert "the agent exited with 127" in ended["detail"]
    assert "cannot start the agent '/no/such/agent'" in ended["detail"]


def test_a_failed_agent_is_told_by_its_last_words_not_a_traceback_frame() -> None:
    framed = (
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | openai.InternalServerError: Error code: 502 - the model endpoint was not reached\n"
        "    +------------------------------------\n"
    )
    assert last_words(framed) == (
        "openai.InternalServerError: Error code: 502 - the model endpoint was not reached"
    )
    assert last_words("\n  \n") == "no output on stderr"
