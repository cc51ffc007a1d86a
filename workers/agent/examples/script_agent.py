"""A 50-line agent of your own: the model answers one shell command at a time.

    python script_agent.py [MODEL]

The model (MODEL, default env OPENAI_MODEL; OPENAI_API_KEY and OPENAI_BASE_URL set the
endpoint) answers each turn with one command in a ```bash block; the command runs in
the working directory (inside the lab's sandbox) and its output goes back. The lab's
tools are the `lab` command. The task is TASK.md in the working directory. The agent
stops after a successful `lab finish`, when the model answers no command, or after
LABRXIV_AGENT_STEPS turns (default 50).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam

SYSTEM = """You work on a research task from a shell. Answer each turn with exactly one
shell command in a ```bash block; you get back its exit code and output. `lab --help`
lists the lab's tools (evaluate, archive, submit, budget, finish). When you are done,
run `lab finish SUMMARY`."""
COMMAND = re.compile(r"```(?:bash|sh)?\n(.*?)```", re.DOTALL)


def run(model: str, steps: int) -> None:
    """Work on TASK.md, one command a turn, until done."""
    client = OpenAI()
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": Path("TASK.md").read_text()},
    ]
    for _ in range(steps):
        answer = client.chat.completions.create(model=model, messages=messages)
        text = answer.choices[0].message.content or ""
        messages.append({"role": "assistant", "content": text})
        found = COMMAND.search(text)
        if found is None:
            print(text)
            return
        command = found.group(1)
        done = subprocess.run(
            command, shell=True, stdin=subprocess.DEVNULL, capture_output=True, text=True
        )
        output = (done.stdout + done.stderr)[-20_000:]  # the end says most
        print(f"$ {command.strip()}\n{output}", file=sys.stderr)
        messages.append({"role": "user", "content": f"exit code {done.returncode}\n{output}"})
        if done.returncode == 0 and re.match(r"\s*lab finish\b", command):
            return


if __name__ == "__main__":
    model = sys.argv[1] if len(sys.argv) > 1 else os.environ["OPENAI_MODEL"]
    run(model, int(os.environ.get("LABRXIV_AGENT_STEPS", "50")))
