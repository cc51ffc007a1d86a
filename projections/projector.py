"""The projector interface: fold a page of stored events into its read-model tables.

Idempotency rule: `apply` runs inside the transaction that also moves the
projector's checkpoint, so a page is applied exactly once in effect; a projector
killed mid-page leaves neither the rows nor the checkpoint, and starts that page again.
Projectors at the same checkpoint apply a page in one transaction, one after the
other, so `apply` writes only its own tables.
"""

from abc import ABC, abstractmethod
from collections.abc import Sequence

from sqlalchemy import Connection, Table

from events.recorded import Recorded


class Projector(ABC):
    """A read model and the fold that builds it from the log."""

    name: str
    """Unique name; the checkpoint's key."""
    tables: Sequence[Table]
    """The tables it owns; `rebuild` drops and recreates them."""
    version: int = 1
    """The version of its fold: raised when the same events fold into other rows (a rule
    fixed, a count added), so a read model an older labrxiv stored is rebuilt from the
    log instead of read as it is (`projections.versions`). New columns are found without it."""
    cost: float = 1.0
    """Its CPU an event in a rebuild, in µs: how a rebuild on several cores splits the
    read models (`projections.parallel_rebuild`). The shipped ones give what bench/rebuild.py
    measured on simulated runs: their `apply`'s CPU in the one-process rebuild, plus the
    database's for their writes (each rebuilt alone, beside the read of the log alone;
    docs/benchmarks.md, 2026-11-27)."""

    @abstractmethod
    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Fold `events` (consecutive, in position order) into the tables, on `conn`."""
