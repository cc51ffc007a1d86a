"""The one shape every export's messages share."""

from typing import Any

Message = dict[str, Any]
"""A chat message (or a part of one) as JSON: an OpenAI Chat Completions message, or an
Anthropic or Inspect one on the way to or from it."""
