"""The `agent` policy: a third-party agent process as a lab (docs/agents.md)."""

from workers.lab.policies.agent.policy import AgentPolicy

POLICY = AgentPolicy
__all__ = ["POLICY", "AgentPolicy"]
