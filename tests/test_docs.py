"""The user docs keep up with the code: every event type, field and setting is documented."""

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from events.blobs import BlobRef
from events.envelope import Event
from events.payloads import (
    PAYLOAD_TYPES,
    Budget,
    Claim,
    Evidence,
    Experiment,
    FileDigest,
    InspectionConfig,
    Payload,
    ReviewConfig,
    ReviewForm,
)
from labrxiv.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
EVENTS_DOC = (ROOT / "docs" / "events.md").read_text()
README = (ROOT / "README.md").read_text()


def section(doc: str, heading: str) -> str:
    """The text under the heading that contains `heading`, up to the next heading."""
    match = re.search(rf"^#+ .*{re.escape(heading)}.*$", doc, re.MULTILINE)
    assert match, f"no heading with {heading} in the doc"
    rest = doc[match.end() :]
    end = re.search(r"^#+ ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def first_table(text: str) -> str:
    """The first markdown table in `text` (a type's own fields, not its nested models')."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end])


def tag(cls: type[Payload]) -> str:
    return cls.model_fields["type"].default


@pytest.mark.parametrize("payload", PAYLOAD_TYPES, ids=tag)
def test_every_payload_type_and_field_is_documented(payload: type[Payload]) -> None:
    text = first_table(section(EVENTS_DOC, f"`{tag(payload)}` — `{payload.__name__}`"))
    for name in payload.model_fields:
        if name != "type":
            assert f"| `{name}` |" in text, f"{tag(payload)}.{name} is not in docs/events.md"
    documented = set(re.findall(r"^\| `(\w+)` \|", text, re.MULTILINE))
    assert documented <= set(payload.model_fields), "docs/events.md lists fields that are gone"


@pytest.mark.parametrize(
    "model",
    [Event, Budget, FileDigest, Claim, Experiment, BlobRef, ReviewForm, ReviewConfig]
    + [InspectionConfig, Evidence],
    ids=str,
)
def test_envelope_and_nested_models_are_documented(model: type[BaseModel]) -> None:
    for name in model.model_fields:
        assert f"| `{name}` |" in EVENTS_DOC, f"{model.__name__}.{name} is not in docs/events.md"


def test_every_setting_is_in_the_readme() -> None:
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        variable = alias.choices[0] if alias is not None else f"LABRXIV_{name.upper()}"  # type: ignore[union-attr]
        assert f"`{variable}`" in README, f"{variable} is not in README"


def test_readme_starts_with_the_two_commands() -> None:
    block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    assert commands == ["make demo", "make test"]


BENCHMARKS_DOC = ROOT / "docs" / "benchmarks.md"
BENCHMARKS_MAX_LINES = 399
"""A reference of the latest figures: earlier measurements are in git history."""


def test_the_benchmarks_doc_holds_the_latest_figures_not_a_diary() -> None:
    lines = BENCHMARKS_DOC.read_text().splitlines()
    assert len(lines) <= BENCHMARKS_MAX_LINES, (
        f"docs/benchmarks.md has {len(lines)} lines, not under 400: keep each"
        " benchmark's latest figures and command; earlier ones belong in git history"
    )


def test_every_bench_script_the_benchmarks_doc_names_exists() -> None:
    named = set(re.findall(r"bench/[a-z_]+\.py", BENCHMARKS_DOC.read_text()))
    assert named, "docs/benchmarks.md names no bench script"
    missing = sorted(path for path in named if not (ROOT / path).is_file())
    assert not missing, f"docs/benchmarks.md names bench scripts that do not exist: {missing}"
