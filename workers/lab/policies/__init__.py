"""Lab policies: one subpackage each, found by name, behind one protocol (`base.Policy`).

Adding a policy touches one folder: write `workers/lab/policies/<name>/` whose
`__init__.py` sets `POLICY`, the policy's class (instantiated once per worker, so it may
keep per-worker caches). `labrxiv tasks validate` checks a card's `policies` against
the names found here.
"""

from collections.abc import Mapping
from functools import cache

from workers.discovery import discover
from workers.lab.policies.base import Policy, StepInput, StepOutcome

__all__ = [
    "Policy",
    "StepInput",
    "StepOutcome",
    "new_policies",
    "policy_names",
    "policy_needs",
    "model_settings",
    "uses_model",
]


@cache
def _classes() -> dict[str, type[Policy]]:
    return discover(__name__, __path__, "POLICY", lambda policy: policy.name, packages_only=True)


def policy_names() -> list[str]:
    """The names of every policy found, sorted."""
    return sorted(_classes())


def policy_needs() -> dict[str, tuple[str, ...]]:
    """Every policy found, by name, with the task card sections it needs (`card_needs`)."""
    return needs_of(_classes())


def needs_of(policies: Mapping[str, object]) -> dict[str, tuple[str, ...]]:
    """Policies (classes or instances) by name, with the card sections each needs: what a
    card's `policies` are checked against (`workers.gym.validate`)."""
    return {name: tuple(getattr(p, "card_needs", ())) for name, p in policies.items()}


def model_settings(name: str) -> frozenset[str]:
    """The model settings the labs of policy `name` read (`Policy.model_settings`); none
    for a name no policy has."""
    return frozenset(getattr(_classes().get(name), "model_settings", ()))


def uses_model(name: str) -> bool:
    """Whether the labs of policy `name` call a model: they read model settings."""
    return bool(model_settings(name))


def new_policies() -> dict[str, Policy]:
    """A fresh instance of every policy, by name (a worker's own)."""
    return {name: cls() for name, cls in _classes().items()}
