"""Tool names as OpenAI function names (`^[a-zA-Z0-9_-]{1,64}$`).

A name that already is one stays as it is. Otherwise each run of other characters
becomes `__` (Codex CLI's `mcp__lab.evaluate`, a tool of its MCP server's namespace,
becomes `mcp__lab__evaluate`); a name still longer than 64 characters keeps its first 55
and ends in `_` and 8 hex digits of its SHA-256; an empty name is `unnamed`. The same
name always maps to the same function name.
"""

import hashlib
import re

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
INVALID_RUN = re.compile(r"[^a-zA-Z0-9_-]+")
LIMIT = 64


def function_name(name: str) -> str:
    """`name` as a valid OpenAI function name (see the module's docstring)."""
    if VALID.match(name):
        return name
    mapped = INVALID_RUN.sub("__", name) or "unnamed"
    if len(mapped) <= LIMIT:
        return mapped
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{mapped[: LIMIT - 9]}_{digest}"
