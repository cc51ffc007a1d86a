"""The read models labrxiv ships, in the order they are applied."""

from projections.archive import ArchiveProjector
from projections.behaviour import BehaviourProjector
from projections.campaigns import CampaignsProjector
from projections.curves import CurvesProjector
from projections.findings import FindingsProjector
from projections.ledger import LedgerProjector
from projections.projector import Projector
from projections.reviews import ReviewsProjector
from projections.runs import RunsProjector


def all_projectors() -> list[Projector]:
    """A fresh instance of every projector."""
    return [
        RunsProjector(),
        CampaignsProjector(),
        ArchiveProjector(),
        ReviewsProjector(),
        LedgerProjector(),
        CurvesProjector(),
        BehaviourProjector(),
        FindingsProjector(),
    ]
