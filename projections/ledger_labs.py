"""The ledger rolled up per lab, a lab being one campaign's lab.

Every campaign names its labs `lab-0`, `lab-1`…, so a lab name alone would add `lab-0`
of one campaign to `lab-0` of another: each campaign is rolled up by lab on its own,
with the one counting rule of `projections.ledger.ledger_totals`; calls of no campaign
(a hand-made log) are what the whole ledger holds beyond the campaigns' sums.
"""

from dataclasses import fields, replace

from sqlalchemy import Connection, select

from projections.ledger import LEDGER, LedgerTotals, ledger_totals


def ledger_by_lab(
    conn: Connection, campaign: str | None = None
) -> list[tuple[str | None, LedgerTotals]]:
    """(campaign, the lab's totals) per lab of each campaign (of `campaign`, if given),
    by campaign then lab; calls of no campaign last."""
    if campaign is not None:
        return [(campaign, t) for t in ledger_totals(conn, by="lab", campaign=campaign)]
    named = conn.execute(select(LEDGER.c.campaign).distinct()).scalars()
    campaigns = sorted(c for c in named if c is not None)
    rows = [(c, t) for c in campaigns for t in ledger_totals(conn, by="lab", campaign=c)]
    left = {t.key: t for t in ledger_totals(conn, by="lab")}
    for _, totals in rows:
        left[totals.key] = _minus(left[totals.key], totals)
    rows += [(None, t) for t in left.values() if t.calls]
    return rows


def _minus(a: LedgerTotals, b: LedgerTotals) -> LedgerTotals:
    """`a` less `b`, field by field (every field but the key is a sum)."""
    return replace(
        a,
        **{f.name: getattr(a, f.name) - getattr(b, f.name) for f in fields(a) if f.name != "key"},
    )
