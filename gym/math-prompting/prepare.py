"""Regenerate the math-prompting problems: `python prepare.py [--out DIR]` (default: this bundle).

Arithmetic word problems of four kinds, each a chain of 1 to 6 arithmetic steps whose
every intermediate result is a whole number:

- `shopping`: items bought at a unit price, an optional coupon, change from a bill;
- `rates`: a tank filled by a pump, with water already in it, a leak, a start delay;
- `percent`: a price with discounts, sales tax, a quantity and a shipping fee;
- `remainder`: objects gained and given away, packed into containers, the leftover.

Writes `workspace/data/dev.jsonl` (public: question, worked solution, answer, kind and
number of steps, for the lab to study and to draw few-shot examples from) and
`hidden/test.jsonl` (the grader's: questions and answers; no workspace file holds a test
question). Every kind has the same number of problems in a split and its step counts
cycle through the kind's range, so a split is balanced by kind and by difficulty. The
output is byte-for-byte deterministic (`random.Random` with fixed seeds; no test question
repeats a dev question).
"""

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SEED = 20250612
DEV_PER_KIND = 15
TEST_PER_KIND = 10
NAMES = ("Maya", "Omar", "Lena", "Tariq", "Sofia", "Ken", "Amara", "Diego", "Ines", "Yuki")
ITEMS = (
    ("notebooks", 2, 9),
    ("pens", 1, 4),
    ("mugs", 5, 12),
    ("apples", 1, 3),
    ("candles", 3, 8),
    ("posters", 4, 10),
)
"""Things bought in `shopping`: plural name and the range of the unit price in dollars."""
BILLS = (10, 20, 50, 100, 200, 500)
CONTAINERS = ("tank", "pool", "barrel", "cistern")
GOODS = ("jacket", "lamp", "bicycle helmet", "backpack", "kettle", "chair")
OBJECTS = ("marbles", "cookies", "stickers", "beads", "stamps")
PACKS = ("bags", "boxes", "jars", "envelopes")


@dataclass(frozen=True)
class Problem:
    """One word problem: its text and the chain of steps that solves it."""

    kind: str
    question: str
    steps: list[tuple[str, int]]
    """(what the step computes, its whole-number result); the last result is the answer."""

    @property
    def answer(self) -> int:
        return self.steps[-1][1]

    def solution(self) -> str:
        return "\n".join(f"Step {i}: {text}." for i, (text, _) in enumerate(self.steps, 1))


def shopping(rng: random.Random, n_steps: int) -> Problem:
    """2-6 steps: one per item bought (a running total), the coupon if any, the change."""
    coupon = n_steps >= 3 and (n_steps == 6 or rng.random() < 0.5)
    n_items = n_steps - 1 - coupon
    name = rng.choice(NAMES)
    bought = [
        (noun, rng.randint(2, 6), rng.randint(lo, hi))
        for noun, lo, hi in rng.sample(ITEMS, n_items)
    ]
    steps, total = [], 0
    for noun, quantity, price in bought:
        total += quantity * price
        text = f"{quantity} {noun} cost {quantity} x {price} = {quantity * price} dollars"
        steps.append((text + (f", {total} dollars so far" if steps else ""), total))
    listed = [f"{q} {noun} at ${p} each" for noun, q, p in bought]
    items = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    sentences = [f"{name} buys {items}."]
    if coupon:
        off = rng.randint(1, max(1, total // 4))
        total -= off
        sentences.append(f"{name} has a coupon for ${off} off the total.")
        steps.append(
            (f"with the coupon the total is {total + off} - {off} = {total} dollars", total)
        )
    bill = rng.choice([b for b in BILLS if b > total][:2] or [(total // 100 + 1) * 100])
    sentences.append(f"{name} pays with a ${bill} bill.")
    sentences.append(f"How much change does {name} get, in dollars?")
    steps.append((f"the change is {bill} - {total} = {bill - total} dollars", bill - total))
    return Problem("shopping", " ".join(sentences), steps)


def rates(rng: random.Random, n_steps: int) -> Problem:
    """1-4 steps: water still missing (if some is in), net rate (if a leak), time, delay."""
    extra = rng.sample(("already", "leak", "delay"), n_steps - 1)
    container = rng.choice(CONTAINERS)
    net, minutes = rng.randint(3, 15), rng.randint(4, 30)
    missing = net * minutes
    leak = rng.randint(1, 5) if "leak" in extra else 0
    inflow = net + leak
    already = rng.randint(1, 9) * 10 if "already" in extra else 0
    capacity = missing + already
    delay = rng.randint(2, 15) if "delay" in extra else 0
    sentences = [f"A {container} holds {capacity} liters"]
    sentences[0] += f" and already contains {already} liters." if already else "."
    pump = f"A pump adds {inflow} liters per minute"
    sentences.append(pump + (f", while a leak drains {leak} liters per minute." if leak else "."))
    steps = []
    if already:
        steps.append((f"{capacity} - {already} = {missing} liters are missing", missing))
    if leak:
        steps.append((f"the {container} gains {inflow} - {leak} = {net} liters a minute", net))
    steps.append((f"filling {missing} liters takes {missing} / {net} = {minutes} minutes", minutes))
    if delay:
        sentences.append(f"The pump is switched on after a {delay}-minute delay.")
        sentences.append(
            f"How many minutes pass, counting the delay, until the {container} is full?"
        )
        steps.append(
            (f"with the delay, {minutes} + {delay} = {minutes + delay} minutes", minutes + delay)
        )
    else:
        sentences.append(f"How many minutes does it take to fill the {container}?")
    return Problem("rates", " ".join(sentences), steps)


def percent(rng: random.Random, n_steps: int) -> Problem:
    """1-5 steps: a discount, a further discount, sales tax, a quantity, a shipping fee."""
    while True:
        ops = _percent_ops(rng, n_steps)
        problem = _percent_problem(rng, ops)
        if problem is not None:
            return problem


def _percent_ops(rng: random.Random, n_steps: int) -> list[str]:
    while True:
        ops = sorted(
            rng.sample(("discount", "further", "tax", "quantity", "shipping"), n_steps),
            key=("discount", "further", "tax", "quantity", "shipping").index,
        )
        if "further" not in ops or "discount" in ops:
            return ops


def _percent_problem(rng: random.Random, ops: list[str]) -> Problem | None:
    """The problem for `ops`, or None when a random draw gives a non-whole intermediate."""
    name, good = rng.choice(NAMES), rng.choice(GOODS)
    price = rng.randint(2, 20) * 20
    sentences, steps = [f"A {good} is priced at ${price}."], []
    for op in ops:
        if op in ("discount", "further", "tax"):
            rate = rng.choice(
                {"discount": (10, 20, 25, 40, 50), "further": (10, 20, 50)}.get(op, (5, 10, 20))
            )
            factor = 100 + rate if op == "tax" else 100 - rate
            if price * factor % 100:
                return None
            new = price * factor // 100
            sign = "+" if op == "tax" else "-"
            steps.append((f"{price} {sign} {rate}% of {price} = {new} dollars", new))
            sentences.append(
                {
                    "discount": f"It is on sale for {rate}% off.",
                    "further": f"At the register, a further {rate}% is taken off the sale price.",
                    "tax": f"A {rate}% sales tax is added to that price.",
                }[op]
            )
        elif op == "quantity":
            count = rng.randint(2, 5)
            new = price * count
            sentences.append(f"{name} buys {count} of them.")
            steps.append((f"{count} of them cost {count} x {price} = {new} dollars", new))
        else:
            fee = rng.randint(3, 25)
            new = price + fee
            sentences.append(f"{name} also pays a ${fee} shipping fee.")
            steps.append((f"with shipping, {price} + {fee} = {new} dollars", new))
        price = new
    sentences.append(f"How much does {name} pay in total, in dollars?")
    return Problem("percent", " ".join(sentences), steps)


def remainder(rng: random.Random, n_steps: int) -> Problem:
    """1-5 steps: a second colour, some given away, some found, the leftover, the shortfall."""
    extra = set(rng.sample(("second", "given", "found", "short"), n_steps - 1))
    name, noun, pack = rng.choice(NAMES), rng.choice(OBJECTS), rng.choice(PACKS)
    size = rng.randint(4, 15)
    while True:
        red = rng.randint(20, 120)
        blue = rng.randint(10, 80) if "second" in extra else 0
        given = rng.randint(3, 15) if "given" in extra else 0
        found = rng.randint(2, 12) if "found" in extra else 0
        count = red + blue - given + found
        if count % size and count > size:
            break
    if blue:
        sentences = [f"{name} has {red} red {noun} and {blue} blue {noun}."]
        steps = [(f"{red} + {blue} = {red + blue} {noun}", red + blue)]
    else:
        sentences, steps = [f"{name} has {red} {noun}."], []
    held = red + blue
    if given:
        sentences.append(f"{name} gives {given} of them to a friend.")
        steps.append((f"after giving some away, {held} - {given} = {held - given}", held - given))
        held -= given
    if found:
        sentences.append(f"{name} then finds {found} more.")
        steps.append((f"after finding more, {held} + {found} = {held + found}", held + found))
        held += found
    left = held % size
    sentences.append(
        f"The {noun} are packed into {pack} of {size}, filling as many {pack} as possible."
    )
    steps.append((f"{held} = {held // size} x {size} + {left}, so {left} are left over", left))
    if "short" in extra:
        sentences.append(f"How many more {noun} would be needed to fill one more of the {pack}?")
        steps.append((f"{size} - {left} = {size - left} more are needed", size - left))
    else:
        sentences.append(f"How many {noun} are left over?")
    return Problem("remainder", " ".join(sentences), steps)


KINDS: dict[str, tuple[Callable[[random.Random, int], Problem], range]] = {
    "shopping": (shopping, range(2, 7)),
    "rates": (rates, range(1, 5)),
    "percent": (percent, range(1, 6)),
    "remainder": (remainder, range(1, 6)),
}
"""Each kind's generator and its range of step counts."""


def generate(split: str, per_kind: int, avoid: set[str]) -> list[Problem]:
    """`per_kind` problems of every kind, step counts cycling through the kind's range."""
    problems = []
    for kind, (make, step_range) in KINDS.items():
        rng = random.Random(f"{SEED}-{split}-{kind}")
        made: list[Problem] = []
        while len(made) < per_kind:
            problem = make(rng, step_range[len(made) % len(step_range)])
            if problem.question not in avoid | {p.question for p in made}:
                made.append(problem)
        problems += made
    random.Random(f"{SEED}-{split}-order").shuffle(problems)
    return problems


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def prepare(out: Path) -> None:
    """Write `workspace/data/dev.jsonl` and `hidden/test.jsonl` under `out`."""
    data, hidden = out / "workspace" / "data", out / "hidden"
    data.mkdir(parents=True, exist_ok=True)
    hidden.mkdir(parents=True, exist_ok=True)
    dev = generate("dev", DEV_PER_KIND, set())
    test = generate("test", TEST_PER_KIND, {p.question for p in dev})
    _write_jsonl(
        data / "dev.jsonl",
        [
            {
                "id": f"dev-{i:03d}",
                "kind": p.kind,
                "steps": len(p.steps),
                "question": p.question,
                "solution": p.solution(),
                "answer": p.answer,
            }
            for i, p in enumerate(dev)
        ],
    )
    _write_jsonl(
        hidden / "test.jsonl",
        [
            {
                "id": f"test-{i:03d}",
                "kind": p.kind,
                "steps": len(p.steps),
                "question": p.question,
                "answer": p.answer,
            }
            for i, p in enumerate(test)
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    prepare(parser.parse_args().out)


if __name__ == "__main__":
    main()
