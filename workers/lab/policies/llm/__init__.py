"""The `llm` policy: a research cycle in phases, driven by a model through the gateway."""

from workers.lab.policies.llm.policy import LlmPolicy

POLICY = LlmPolicy
__all__ = ["POLICY", "LlmPolicy"]
