"""The read models labrxiv ships, in the order they are applied."""

from projections.projector import Projector
from projections.runs import RunsProjector


def all_projectors() -> list[Projector]:
    """A fresh instance of every projector."""
    return [RunsProjector()]
