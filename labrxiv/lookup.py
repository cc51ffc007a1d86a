"""Ids as people type them: a whole id or an unambiguous prefix of one, for campaigns,
runs, papers and events; an id that names nothing is a `NotFound` naming it.

Campaign ids are 12 hex digits and event ids UUIDs: nobody retypes them whole, so any
prefix that picks out one is accepted, and a prefix that fits several lists them.
"""

import re
import uuid
from collections.abc import Iterable

from sqlalchemy import Column, Connection, String, cast, func, inspect, select

from events import Event, EventStore
from events.store import EVENTS
from events.streams import RUN_PREFIX, stream_id
from labrxiv.cli_bounds import INT64_MAX
from labrxiv.errors import Ambiguous, NotFound
from projections.archive import PAPERS
from projections.campaigns import CAMPAIGNS
from projections.runs import RUNS

SHOWN = 5
"""Candidates listed for an ambiguous prefix."""


def pick(kind: str, text: str, known: Iterable[str], hint: str = "") -> str:
    """The one of `known` that is `text` or starts with it (an empty `text` names none:
    it was "ambiguous" among them all)."""
    if not text.strip():
        raise NotFound(f"an empty {kind} id names no {kind}")
    names = set(known)
    if text in names:
        return text
    matches = sorted(name for name in names if name.startswith(text))
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(f"no {kind} {text}" + (f" ({hint})" if hint else ""))
    more = ", …" if len(matches) > SHOWN else ""
    raise Ambiguous(f"{kind} {text} is ambiguous: {', '.join(matches[:SHOWN])}{more}")


def campaign_ids(store: EventStore, conn: Connection) -> set[str]:
    """Every campaign the log started or a run names (a run may name one whose start is
    not in the log: a hand-made or imported log)."""
    started = {
        r.correlation_id or stream_id(r.stream)
        for r in store.iter_records(types=["campaign.started"])
    }
    if not inspect(conn).has_table(RUNS.name):  # no projector ran yet: only the log knows
        return started
    named = conn.execute(select(RUNS.c.campaign).distinct()).scalars()
    return started | {c for c in named if c}


def resolve_campaign(store: EventStore, conn: Connection, text: str | None) -> str | None:
    """The campaign `text` names (None stays None: no filter)."""
    if text is None:
        return None
    if _exact(conn, CAMPAIGNS.c.campaign, [text]) or _exact(conn, RUNS.c.campaign, [text]):
        return text
    return pick("campaign", text, campaign_ids(store, conn), "labrxiv campaigns lists them")


def resolve_run(conn: Connection, text: str) -> str:
    """The run stream `text` names: `run-<campaign>-<lab index>`, `run-` optional."""
    exact = _exact(conn, RUNS.c.stream, [text, RUN_PREFIX + text])
    if exact is not None:
        return exact
    streams = set(conn.execute(select(RUNS.c.stream)).scalars())
    return pick_prefixed("run", RUN_PREFIX, text, streams, "labrxiv runs lists them")


def resolve_paper(conn: Connection, text: str) -> str:
    """The paper id `text` names: `p-<hex>`, `p-` optional."""
    exact = _exact(conn, PAPERS.c.paper_id, [text, "p-" + text])
    if exact is not None:
        return exact
    ids = set(conn.execute(select(PAPERS.c.paper_id)).scalars())
    return pick_prefixed("paper", "p-", text, ids, "labrxiv papers list lists them")


def _exact(conn: Connection, column: Column[str], whole: list[str]) -> str | None:
    """The first of `whole` that is in `column` (whose table exists), looked up by key:
    a whole id needs no list of every id."""
    if not inspect(conn).has_table(column.table.name):
        return None
    for text in whole:
        if conn.execute(select(column).where(column == text).limit(1)).first() is not None:
            return text
    return None


def pick_prefixed(kind: str, prefix: str, text: str, names: set[str], hint: str) -> str:
    """`pick` where the names' common `prefix` may be left out of `text`; what is not
    found is said with the text the person typed."""
    if not text.strip():
        raise NotFound(f"an empty {kind} id names no {kind}")
    if text in names:
        return text
    whole = text if text.startswith(prefix) else prefix + text
    try:
        return pick(kind, whole, names, hint)
    except NotFound as exc:  # said with what the person typed, as the same kind of error
        said = str(exc).replace(f"{kind} {whole}", f"{kind} {text}", 1)
        raise type(exc)(said) from None


POSITION = re.compile(r"\d+")
HEX = re.compile(r"[0-9a-f]{4,32}")


def is_event_ref(text: str) -> bool:
    """Whether `text` can name an event: a position, a UUID, or 4+ hex digits of one."""
    return bool(POSITION.fullmatch(text) or HEX.fullmatch(text.replace("-", "").lower()))


def find_event(store: EventStore, text: str) -> Event:
    """The event at position `text` (digits), or with id `text` (a UUID or a prefix)."""
    if POSITION.fullmatch(text):
        position = int(text)
        # Past the 64 bits a position has, there is none (and the query would overflow).
        records = store.read_records(after=position - 1, limit=1) if position <= INT64_MAX else []
        if not records or records[0].position != position:
            raise NotFound(f"no event at position {position} (the head is {store.max_position()})")
        return records[0].typed()
    digits = text.replace("-", "").lower()
    if len(digits) == 32:
        event = store.get(uuid.UUID(digits))
        if event is None:
            raise NotFound(f"no event {text}")
        return event
    # A prefix: compared as 32 hex digits (SQLite stores them so, PostgreSQL with dashes).
    hexed = func.replace(cast(EVENTS.c.id, String), "-", "")
    query = select(EVENTS.c.id).where(hexed.like(f"{digits}%")).limit(SHOWN + 1)
    with store.engine.connect() as conn:
        found = [i.hex for i in conn.execute(query).scalars()]
    event_id = pick("event", digits, found)
    event = store.get(uuid.UUID(event_id))
    assert event is not None
    return event
