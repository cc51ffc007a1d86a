"""Anthropic's Python client for tests: a virtualenv of its own (the client is no
dependency of labrxiv), built once into the test cache (tests/cached_tools.py) as
`anthropic-<version>`."""

from pathlib import Path

from tests.cached_tools import pip_venv

VERSION = "2.14.0"


def anthropic_python() -> Path:
    """The Python of a virtualenv holding `anthropic==VERSION`, built the first time."""
    return pip_venv(f"anthropic-{VERSION}", "anthropic", f"anthropic=={VERSION}") / "bin" / "python"
