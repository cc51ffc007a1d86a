"""Grade a math-prompting workspace: `python grader/grade.py <workspace>`, cwd = the bundle.

Reads the prompting technique in `<workspace>/outputs/technique.json` (data only: no
workspace code is imported or run), checks it against `Technique` (bounded sizes, known
fields, at most 5 samples), then asks the configured model every hidden test question
(`hidden/test.jsonl`) with it: the system prompt, the few-shot examples as earlier
user/assistant turns, the question in the template; `samples` completions per question
(requests with `seed` 0, 1, …), the answer extracted from each by the technique's rule
and the most frequent answer kept (majority vote; a tie goes to the answer of the
earliest sample among the tied).

The model is reached with the official `openai` client: `OPENAI_BASE_URL` (unset: the
OpenAI API) and `OPENAI_API_KEY` from this process's environment, which the lab never
sees; the model is `LABRXIV_GRADER_MODEL` (default `gpt-4o-mini`). Each request may take
`REQUEST_TIMEOUT` seconds (less when the card's grader timeout is near) and is retried
twice by the client. Prints one JSON object: `{"scores": {"accuracy": …, "<kind>": …},
"notes": …, "usage": {"input_tokens": …, "cached_input_tokens": …, "output_tokens": …,
"calls": …, "without_usage": …}, "model": …}`; exits 2 with
one line on stderr when the technique is malformed or the endpoint is not configured,
unreachable or failing. The API key is never printed, not even in a server's error text.
"""

import json
import os
import re
import sys
import time
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

BUNDLE = Path(__file__).resolve().parent.parent
KINDS = ("shopping", "rates", "percent", "remainder")
DEFAULT_MODEL = "gpt-4o-mini"
REQUEST_TIMEOUT = 60.0
"""Seconds one request may take (the client retries it twice)."""
MAX_RETRIES = 2
CONCURRENCY = 8
"""Requests in flight at once: grading stays within the card's timeout on a slow model."""
MAX_FILE_BYTES = 64_000
DEADLINE_MARGIN = 5.0
"""Seconds kept before the card's grader timeout to stop with a message, not be killed."""
NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")


class GradingError(Exception):
    """The technique cannot be graded, or the model endpoint cannot be used."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Example(_Strict):
    """A worked example, sent as an earlier user turn (the template) and assistant reply."""

    question: str = Field(min_length=1, max_length=2000)
    answer: str = Field(min_length=1, max_length=4000)


class Extraction(_Strict):
    """How the answer is read from a completion."""

    rule: Literal["last_number", "first_number", "after_marker"] = "last_number"
    """`after_marker`: the first number after the last occurrence of `marker` (any case)."""
    marker: str = Field(default="", max_length=40)

    @model_validator(mode="after")
    def _marker_when_needed(self) -> "Extraction":
        if self.rule == "after_marker" and not self.marker.strip():
            raise ValueError("rule 'after_marker' needs a non-empty marker")
        return self


class Technique(_Strict):
    """A prompting technique, as `outputs/technique.json` describes it."""

    system_prompt: str = Field(default="", max_length=4000)
    template: str = Field(min_length=1, max_length=4000)
    """The user message; `{question}` (exactly once) is replaced by the question."""
    few_shot: list[Example] = Field(default_factory=list, max_length=8)
    samples: int = Field(default=1, ge=1, le=5)
    """Completions per question, majority-voted (self-consistency)."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=2048)
    answer: Extraction = Extraction()

    @model_validator(mode="after")
    def _one_question_slot(self) -> "Technique":
        if self.template.count("{question}") != 1:
            raise ValueError("template must contain {question} exactly once")
        return self

    def messages(self, question: str) -> list[dict[str, str]]:
        """The chat messages that ask `question`."""
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        for example in self.few_shot:
            messages.append({"role": "user", "content": self.ask(example.question)})
            messages.append({"role": "assistant", "content": example.answer})
        return [*messages, {"role": "user", "content": self.ask(question)}]

    def ask(self, question: str) -> str:
        # str.replace, not str.format: other braces in a template are plain text.
        return self.template.replace("{question}", question)


def load_technique(workspace: Path) -> Technique:
    """The workspace's technique, checked; GradingError names the file and the problem."""
    path = workspace / "outputs" / "technique.json"
    if not path.is_file():
        raise GradingError(f"missing {path}: the solution must write the technique there")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise GradingError(f"{path} is larger than {MAX_FILE_BYTES} bytes")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GradingError(f"{path} is not valid JSON: {exc}") from None
    try:
        return Technique.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'technique'}: {e['msg']}" for e in exc.errors()
        )
        raise GradingError(f"{path} is not a valid technique: {problems}") from None


def extract(text: str, rule: Extraction) -> float | None:
    """The answer in a completion by `rule`, as a number; None when there is none."""
    if rule.rule == "after_marker":
        at = text.lower().rfind(rule.marker.lower())
        if at < 0:
            return None
        text, rule = text[at + len(rule.marker) :], Extraction(rule="first_number")
    numbers = NUMBER.findall(text)
    if not numbers:
        return None
    return float((numbers[0] if rule.rule == "first_number" else numbers[-1]).replace(",", ""))


def vote(answers: list[float | None]) -> float | None:
    """The most frequent answer; a tie goes to the one given first; None if none was read."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None
    top = max(counts.values())
    return next(a for a in answers if a is not None and counts[a] == top)


@dataclass
class Usage:
    """Tokens and calls, as the endpoint reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    calls: int = 0
    without_usage: int = 0
    lock: Lock = field(default_factory=Lock, repr=False)


class Endpoint:
    """The configured model: one chat completion per call, errors as GradingError."""

    def __init__(self, deadline: float) -> None:
        self.key = os.environ.get("OPENAI_API_KEY", "")
        if not self.key:
            raise GradingError(
                "the model endpoint is not configured: set OPENAI_API_KEY (any non-empty "
                "value for a local server) and OPENAI_BASE_URL (e.g. http://127.0.0.1:8000/v1; "
                "unset means the OpenAI API) in the environment of labrxiv's worker"
            )
        import openai  # lazily: a technique error is reported without the SDK's import time

        self.openai = openai
        self.base_url = os.environ.get("OPENAI_BASE_URL") or None
        self.model = os.environ.get("LABRXIV_GRADER_MODEL") or DEFAULT_MODEL
        self.deadline = deadline
        self.usage = Usage()
        self.client = openai.OpenAI(
            api_key=self.key,
            base_url=self.base_url,
            max_retries=MAX_RETRIES,
            timeout=REQUEST_TIMEOUT,
        )

    def where(self) -> str:
        """The endpoint's scheme, host and port only (a URL may carry credentials)."""
        if not self.base_url:
            return "the OpenAI API"
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")

    def redact(self, text: str) -> str:
        """`text` without the key or anything shaped like a key (servers echo a masked one)."""
        text = text.replace(self.key, "***")
        return re.sub(r"\bsk-[A-Za-z0-9*_.\-]+", "sk-***", text)

    def complete(self, technique: Technique, question: str, seed: int) -> str:
        """The text of one completion."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise GradingError(
                f"out of time after {self.usage.calls} calls: {self.model} at {self.where()} "
                "answers too slowly for the card's grader timeout"
            )
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=technique.messages(question),
                temperature=technique.temperature,
                max_tokens=technique.max_tokens,
                seed=seed,
                timeout=min(REQUEST_TIMEOUT, left),
            )
        except self.openai.APIError as exc:
            raise GradingError(self.redact(self.describe(exc))) from None
        with self.usage.lock:
            self.usage.calls += 1
            if response.usage is None:
                self.usage.without_usage += 1
            else:
                self.usage.input_tokens += response.usage.prompt_tokens or 0
                self.usage.output_tokens += response.usage.completion_tokens or 0
                details = response.usage.prompt_tokens_details
                self.usage.cached_input_tokens += (details.cached_tokens or 0) if details else 0
        if not response.choices:
            raise GradingError(f"{self.where()} answered with no choices (model {self.model})")
        return response.choices[0].message.content or ""

    def describe(self, exc: Exception) -> str:
        """One line on what went wrong with the endpoint, without the server's echo of the key."""
        o, where = self.openai, self.where()
        retried = f"after {MAX_RETRIES} retries"
        if isinstance(exc, o.APITimeoutError):
            return f"the model endpoint {where} did not answer in time ({retried})"
        if isinstance(exc, o.APIConnectionError):
            return (
                f"cannot reach the model endpoint {where} ({retried}): check OPENAI_BASE_URL "
                "and that the server is running"
            )
        if isinstance(exc, o.AuthenticationError | o.PermissionDeniedError):
            return f"the model endpoint {where} rejected the API key (HTTP {exc.status_code})"
        if isinstance(exc, o.NotFoundError):
            return (
                f"{where} has no model {self.model!r} or no chat completions route (HTTP 404): "
                "check LABRXIV_GRADER_MODEL and OPENAI_BASE_URL (which usually ends in /v1)"
            )
        if isinstance(exc, o.RateLimitError):
            return f"the model endpoint {where} is rate limiting (HTTP 429, {retried})"
        if isinstance(exc, o.APIStatusError):
            detail = " ".join(str(exc.message).split())[:200]
            return f"the model endpoint {where} failed with HTTP {exc.status_code}: {detail}"
        return f"the model endpoint {where} failed: {type(exc).__name__}"


def card_timeout() -> float:
    """The card's grader timeout, which the grader finishes within."""
    with (BUNDLE / "task.toml").open("rb") as handle:
        return float(tomllib.load(handle)["grader"]["timeout_seconds"])


def load_test() -> list[dict]:
    lines = (BUNDLE / "hidden" / "test.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def grade(workspace: Path) -> dict:
    """Scores, notes and usage of the technique in `workspace` on the hidden test split."""
    started = time.monotonic()
    technique = load_technique(workspace)
    endpoint = Endpoint(deadline=started + card_timeout() - DEADLINE_MARGIN)
    test = load_test()
    jobs = [(i, s) for i in range(len(test)) for s in range(technique.samples)]

    def run(job: tuple[int, int]) -> float | None:
        index, seed = job
        return extract(
            endpoint.complete(technique, test[index]["question"], seed), technique.answer
        )

    # The first call alone: an unreachable endpoint fails once, not CONCURRENCY times.
    read = {jobs[0]: run(jobs[0])}
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        futures = {job: pool.submit(run, job) for job in jobs[1:]}
        try:
            read |= {job: future.result() for job, future in futures.items()}
        except GradingError:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    right: dict[str, list[bool]] = {kind: [] for kind in KINDS}
    by_steps: dict[int, list[bool]] = {}
    unread = 0
    for index, problem in enumerate(test):
        answers = [read[(index, s)] for s in range(technique.samples)]
        unread += answers.count(None)
        chosen = vote(answers)
        correct = chosen is not None and abs(chosen - problem["answer"]) < 1e-6
        right[problem["kind"]].append(correct)
        by_steps.setdefault(problem["steps"], []).append(correct)
    scores = {"accuracy": sum(map(sum, right.values())) / len(test)}
    scores |= {kind: sum(r) / len(r) for kind, r in right.items()}
    usage = endpoint.usage
    steps = ", ".join(f"{n}: {sum(r)}/{len(r)}" for n, r in sorted(by_steps.items()))
    notes = (
        f"{endpoint.model} on {len(test)} hidden questions x {technique.samples} samples "
        f"(temperature {technique.temperature}); right by number of steps {steps}; "
        f"{unread} of {len(jobs)} completions had no answer by rule {technique.answer.rule}"
    )
    if usage.without_usage:
        notes += f"; {usage.without_usage} responses reported no token usage"
    if technique.samples > 1 and technique.temperature == 0:
        notes += "; several samples at temperature 0 are usually identical"
    return {
        "scores": scores,
        "notes": notes,
        "usage": {
            "input_tokens": usage.input_tokens,
            "cached_input_tokens": usage.cached_input_tokens,
            "output_tokens": usage.output_tokens,
            "calls": usage.calls,
            "without_usage": usage.without_usage,
        },
        "model": endpoint.model,
    }


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python grader/grade.py <workspace>")
    try:
        result = grade(Path(sys.argv[1]).resolve())
    except GradingError as exc:
        print(f"grade: {exc}", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
