"""pyproject.toml states compatible ranges; requirements.lock pins the environment inside them.

labrxiv is installed beside other tools (Inspect AI among them), so its declared
dependencies are ranges; `make demo` and `make test` install the exact versions of
requirements.lock, so a fresh install is still reproducible.
"""

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DECLARED = [
    Requirement(line) for line in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["dev"]
]


def locked() -> dict[str, Version]:
    """requirements.lock as name → version (every line `name==version`)."""
    versions: dict[str, Version] = {}
    for number, line in enumerate((ROOT / "requirements.lock").read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        name, sep, version = text.partition("==")
        assert sep and name and version, f"requirements.lock:{number}: not name==version: {line}"
        versions[canonicalize_name(name)] = Version(version)
    return versions


def test_declared_dependencies_are_ranges_not_exact_pins() -> None:
    for requirement in DECLARED:
        operators = {spec.operator for spec in requirement.specifier}
        assert operators & {">=", "~="}, f"{requirement} has no lower bound"
        assert not operators & {"==", "==="}, f"{requirement} is pinned exactly in pyproject.toml"


def test_openai_range_is_the_3_series() -> None:
    (openai,) = [r for r in DECLARED if r.name == "openai"]
    # Inspect AI needs openai >= 3.4; the two share an environment.
    assert openai.specifier.contains("3.4.0") and openai.specifier.contains("3.57.0")
    assert not openai.specifier.contains("2.54.0") and not openai.specifier.contains("4.0.0")


def test_every_declared_dependency_is_locked_inside_its_range() -> None:
    versions = locked()
    for requirement in DECLARED:
        name = canonicalize_name(requirement.name)
        assert name in versions, f"{requirement.name} is declared but not in requirements.lock"
        assert requirement.specifier.contains(versions[name]), (
            f"requirements.lock has {requirement.name}=={versions[name]}, "
            f"outside pyproject.toml's {requirement.specifier}"
        )


def test_the_lock_does_not_pin_labrxiv_itself() -> None:
    # The Makefile installs labrxiv editable with --no-deps after the lock.
    assert canonicalize_name(PROJECT["name"]) not in locked()
