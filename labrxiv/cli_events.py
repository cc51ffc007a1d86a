"""`labrxiv events tail|show|dead`: the log itself, as stored.

`tail` prints positions, and `show` takes a position or an id (or a prefix of one), so
no whole UUID has to be copied from elsewhere.
"""

import time
from collections import deque
from dataclasses import asdict

import typer
from rich.markup import escape

from events import EventStore
from events.payloads import BY_TYPE
from events.recorded import Recorded
from labrxiv.cli_bounds import INT64_MAX
from labrxiv.cli_common import AsJson, emit_json, read_store
from labrxiv.cli_errors import say_error
from labrxiv.cli_group import command_group
from labrxiv.console import console
from labrxiv.errors import NotFound
from labrxiv.lookup import find_event, is_event_ref, resolve_campaign
from labrxiv.views import events_table

events_app = command_group("Read the event log.", no_args_is_help=True)


@events_app.command("tail")
def events_tail(
    after: int = typer.Option(
        0, help="Start after this position (0: from the start).", max=INT64_MAX, min=0
    ),
    limit: int = typer.Option(
        20,
        "--limit",
        "-n",
        min=1,
        help="Events to show (the last ones unless --after).",
        max=INT64_MAX,
    ),
    stream: str | None = typer.Option(None, help="Only this stream."),
    types: list[str] | None = typer.Option(
        None, "--type", help="Only events of this type (repeatable, or comma-separated)."
    ),
    campaign: str | None = typer.Option(None, help="Only this campaign's events (an id prefix)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new events."),
    as_json: AsJson = False,
) -> None:
    """Print events in position order."""
    store = read_store()
    kinds = _types(types)
    with store.engine.connect() as conn:
        correlation = resolve_campaign(store, conn, campaign)
    if after == 0 and not follow:
        records = _last(store, limit, stream=stream, types=kinds, correlation=correlation)
        if not records and (stream or kinds or correlation):
            raise NotFound(_nothing(stream, kinds, correlation))
        if not records and not as_json:
            console.print("the log holds no event yet")
            return
        _print(records, as_json)
        return
    while True:
        records = store.read_records(
            after=after, limit=limit, stream=stream, types=kinds, correlation=correlation
        )
        if records:
            _print(records, as_json)
            after = records[-1].position
        if not follow:
            if not records:
                where = f"{_nothing(stream, kinds, correlation)} after position {after}"
                # a filter that matches nothing, as without --after
                if stream or kinds or correlation:
                    raise NotFound(f"{where} (the head is {store.max_position()})")
                if as_json:
                    typer.echo("[]")
                else:  # nothing new since `after`: what a poll for new events finds
                    console.print(f"{where} yet (the head is {store.max_position()})")
            return
        if not records:
            time.sleep(0.5)


@events_app.command("show")
def events_show(
    event: str = typer.Argument(..., help="A position, an event id, or a prefix of an id."),
    as_json: bool = typer.Option(False, "--json", help="JSON (the only form: accepted as such)."),
) -> None:
    """Print one event in full, as JSON."""
    if not is_event_ref(event):
        say_error(f"{event!r} is not an event id (a UUID) nor a position")
        raise typer.Exit(2)
    found = find_event(read_store(), event)
    typer.echo(found.model_dump_json(indent=2))


@events_app.command("dead")
def events_dead(
    limit: int = typer.Option(20, min=1, max=INT64_MAX),
    as_json: AsJson = False,
) -> None:
    """Print the most recent dead letters with their reasons."""
    letters = read_store().dead_letters(limit=limit)
    if as_json:
        emit_json([asdict(letter) for letter in letters])
        return
    if not letters:
        console.print("no dead letter: the recorder rejected nothing")
    for letter in letters:
        console.print(
            f"[yellow]{letter.id}[/] {letter.received_at:%Y-%m-%d %H:%M:%S} {escape(letter.reason)}"
        )
        console.print(f"  {escape(letter.raw[:300])}")


def _types(types: list[str] | None) -> list[str] | None:
    """The event types asked for, each one known."""
    if not types:
        return None
    kinds = [k.strip() for t in types for k in t.split(",") if k.strip()]
    for kind in kinds:
        if kind not in BY_TYPE:
            raise NotFound(f"no event type {kind} (known: {', '.join(sorted(BY_TYPE))})")
    return kinds


def _last(
    store: EventStore,
    limit: int,
    stream: str | None,
    types: list[str] | None,
    correlation: str | None,
) -> list[Recorded]:
    """The last `limit` events that pass the filters, in position order."""
    if stream is None and types is None and correlation is None:
        return store.read_records(after=max(0, store.max_position() - limit), limit=limit)
    kept: deque[Recorded] = deque(maxlen=limit)
    kept.extend(store.iter_records(stream=stream, types=types, correlation=correlation))
    return list(kept)


def _nothing(stream: str | None, types: list[str] | None, correlation: str | None) -> str:
    """`no <types> event in <stream> of campaign <id>`: the empty filter, told."""
    what = f"no {' or '.join(types)} event" if types else "no event"
    if stream is not None:
        what += f" in stream {stream}"
    if correlation is not None:
        what += f" of campaign {correlation}"
    return what


def _print(records: list[Recorded], as_json: bool) -> None:
    if as_json:
        emit_json([r._asdict() | {"payload": r.payload} for r in records])
    else:
        console.print(events_table(records))
