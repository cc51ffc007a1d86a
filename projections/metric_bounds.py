"""How many runs, campaigns, labs and models the metrics name one by one (`metrics.py`);
a module of its own so that `labrxiv exporter`'s options take their defaults from it
without importing the Prometheus client."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Bounds:
    """How many runs, campaigns, labs and models are label values of their own."""

    runs: int = 50
    campaigns: int = 10
    labs: int = 20
    models: int = 20


DEFAULT_BOUNDS = Bounds()
"""The bounds `labrxiv exporter` serves with unless told otherwise."""
