"""A local OpenAI-compatible server that plays the model for mini-swe-agent, scripted.

mini-swe-agent (with workers/agent/profiles/mini-swe-agent.yaml) reads one action per
model answer: a THOUGHT paragraph and exactly one ```bash fenced block. `answer` makes
such a chat completion (with a `usage` object, as a real endpoint sends) and
`scripted_run` turns a list of shell commands into the whole run's answers, in order;
the agent stops after the one that echoes `FINISH_MARKER`. `LAB_RUN` is the run the
labrxiv test plays: read the task, edit a config, evaluate three times, submit, finish.

    with FakeServer() as server:
        server.queue(*scripted_run(LAB_RUN))
        ...  # run mini-swe-agent with OPENAI_BASE_URL=server.url
        assert len(server.completions()) == len(LAB_RUN)

`python tests/agent/mswe_server.py` serves `LAB_RUN` on a free port of 127.0.0.1 (it
prints the base URL) until the script is used up, to try the agent by hand.
"""

import sys
import time
from collections.abc import Sequence
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.agent.mswe_env import profile
from tests.llm.fake_server import FakeServer, Scripted, completion, usage

FINISH_MARKER: str = profile()["finish_marker"]
"""The first output line that ends a mini-swe-agent run (its LocalEnvironment checks it)."""

PAPER = """\
# Tuning the learning rate

Three evaluations of the edited configuration; the best accuracy was 0.5.
"""

CLAIMS = """\
[{"metric": "accuracy", "value": 0.5}]
"""

LAB_RUN: tuple[str, ...] = (
    "cat TASK.md",
    "sed -i 's/a/b/' config.json",
    "lab evaluate",
    "lab evaluate",
    "lab evaluate",
    (
        f"cat <<'EOF' > PAPER.md\n{PAPER}EOF\n"
        f"cat <<'EOF' > CLAIMS.json\n{CLAIMS}EOF\n"
        "lab submit PAPER.md --claims CLAIMS.json"
    ),
    f"echo {FINISH_MARKER}",
)
"""The commands of the labrxiv test's run, one model answer each."""


def answer(command: str, thought: str = "", prompt_tokens: int = 900) -> Scripted:
    """One model answer in mini-swe-agent's text format: THOUGHT, then one bash block."""
    thought = thought or f"I will run `{command.splitlines()[0]}` next."
    text = f"THOUGHT: {thought}\n\n```bash\n{command}\n```\n"
    return completion(text=text, usage=usage(prompt_tokens, 40 + len(command) // 4))


def scripted_run(commands: Sequence[str]) -> list[Scripted]:
    """The answers that make the agent run `commands` in order, one per model call
    (end them with `echo FINISH_MARKER`, or the agent asks for more)."""
    return [answer(command, prompt_tokens=900 + 300 * i) for i, command in enumerate(commands)]


def main() -> None:
    with FakeServer() as server:
        server.queue(*scripted_run(LAB_RUN))
        print(f"serving {len(LAB_RUN)} answers at {server.url}", flush=True)
        try:
            while server.pending:
                time.sleep(1)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
