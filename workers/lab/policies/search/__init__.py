"""The `search` policy: an offline researcher that searches the task's declared space."""

from workers.lab.policies.search.policy import SearchPolicy

POLICY = SearchPolicy
__all__ = ["POLICY", "SearchPolicy"]
