"""Math prompting: write the prompting technique the grader asks the model with.

This script does not call a model (experiments run without network or API key). It
writes `outputs/technique.json`, which the trusted grader uses to ask the configured model
every hidden test question, and scores by accuracy. The technique's fields:

- `system_prompt` (≤ 4000 characters, may be empty);
- `template`: the user message, with `{question}` exactly once (≤ 4000 characters);
- `few_shot`: up to 8 `{"question", "answer"}` examples, sent before the question as
  earlier user turns (the template around the example's question) and assistant replies;
- `samples` (1-5): completions per question, majority-voted (self-consistency);
- `temperature` (0-2) and `max_tokens` (1-2048) of each completion;
- `answer`: how the answer is read from a completion, `{"rule": "last_number"}`,
  `{"rule": "first_number"}` or `{"rule": "after_marker", "marker": "The answer is"}`
  (the first number after the marker's last occurrence, any case).

`config.json` picks a technique from a small family:
- `style`: `direct` (answer with the number only), `step_by_step` (zero-shot
  chain of thought, Kojima et al., 2022) or `plan_then_solve` (Wang et al., 2023);
- `few_shot`: how many worked examples from `data/dev.jsonl` (one kind after another);
- `self_consistency`: samples per question (Wang et al., 2022);
- `temperature`: of each sample.

`data/dev.jsonl` holds public problems like the hidden ones, with `kind`, `steps`, a
worked `solution` and the `answer`: study them, and draw examples from them.
"""

import json
from pathlib import Path

SYSTEM_PROMPT = "You are a careful assistant who solves arithmetic word problems."
MARKER = "The answer is"
TEMPLATES = {
    "direct": "Question: {question}\nReply with the final number only.",
    "step_by_step": (
        "Question: {question}\nLet's think step by step. "
        f"End with a last line of the form '{MARKER} N.' where N is a number."
    ),
    "plan_then_solve": (
        "Question: {question}\nLet's first understand the problem, extract the relevant "
        "numbers and devise a plan. Then carry out the plan, computing each intermediate "
        "result carefully, and solve the problem step by step. "
        f"End with a last line of the form '{MARKER} N.' where N is a number."
    ),
}
KINDS = ("shopping", "rates", "percent", "remainder")


def examples(dev: list[dict], count: int, style: str) -> list[dict[str, str]]:
    """`count` dev problems, one kind after another, answered in the style's form."""
    by_kind = {kind: [p for p in dev if p["kind"] == kind] for kind in KINDS}
    chosen = [by_kind[KINDS[i % len(KINDS)]][i // len(KINDS)] for i in range(count)]
    if style == "direct":
        return [{"question": p["question"], "answer": str(p["answer"])} for p in chosen]
    return [
        {"question": p["question"], "answer": f"{p['solution']}\n{MARKER} {p['answer']}."}
        for p in chosen
    ]


def technique(config: dict, dev: list[dict]) -> dict:
    """The technique `config` describes."""
    style = config["style"]
    return {
        "system_prompt": SYSTEM_PROMPT,
        "template": TEMPLATES[style],
        "few_shot": examples(dev, config["few_shot"], style),
        "samples": config["self_consistency"],
        "temperature": config["temperature"],
        "max_tokens": 512,
        "answer": (
            {"rule": "last_number"}
            if style == "direct"
            else {"rule": "after_marker", "marker": MARKER}
        ),
    }


def main() -> None:
    config = json.loads(Path("config.json").read_text())
    lines = Path("data/dev.jsonl").read_text().splitlines()
    dev = [json.loads(line) for line in lines if line.strip()]
    out = Path("outputs")
    out.mkdir(exist_ok=True)
    (out / "technique.json").write_text(json.dumps(technique(config, dev), indent=2) + "\n")


if __name__ == "__main__":
    main()
