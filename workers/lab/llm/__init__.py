"""The `llm` policy: a research cycle in phases, driven by a model through the gateway."""
