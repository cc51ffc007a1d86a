"""What the long-running processes (`labrxiv worker`, `projector`, `reactor`) check before
they start, and the one line each says once it is ready.

A process that works with a database or a broker that does not answer would only retry
its work; one on Redis with no LABRXIV_DATABASE_URL would work on a SQLite file of its
own, beside the shared queue. So each refuses in one line (exit 2) what does not answer,
or says it is ready, naming the database, the broker and the queues it works with.
"""

import typer

from labrxiv.cli_errors import say_error
from labrxiv.errors import Unreachable
from labrxiv.reading import database_unreachable
from labrxiv.settings import Settings
from labrxiv.urls import hide_password, shown_url


def require_database(settings: Settings) -> None:
    """Open the log's database once, creating its tables as every process does;
    `Unreachable` naming it (password hidden) when it does not answer."""
    from sqlalchemy.exc import DBAPIError

    from labrxiv.wiring import open_store

    try:
        store = open_store(settings)
    except DBAPIError as exc:
        raise database_unreachable(settings.store_url, exc) from None
    store.engine.dispose()


def require_shared_database(settings: Settings, process: str) -> None:
    """Exit 2 when a process on Redis has no LABRXIV_DATABASE_URL: it would use a SQLite
    file in its own data folder, not the log the other processes share."""
    if settings.redis_url is not None and settings.database_url is None:
        say_error(
            f"LABRXIV_DATABASE_URL is not set: a {process} on Redis works on the shared log "
            "(set it as for the command that starts the campaign)"
        )
        raise typer.Exit(2)


def start_or_exit(settings: Settings, *, redis: bool) -> None:
    """Check the database, then Redis when `redis`; one line and exit 2 for the first that
    does not answer."""
    from labrxiv.wiring import require_redis

    try:
        require_database(settings)
        if redis and settings.redis_url is not None:
            require_redis(settings.redis_url)
    except Unreachable as exc:
        say_error(str(exc))
        raise typer.Exit(2) from None


def ready(process: str, settings: Settings, *details: str, redis: bool = True) -> str:
    """`<process> ready: database …, Redis …, <details>`, every password hidden (Redis
    left out of a process that does not use it: `redis` False)."""
    parts = [f"database {shown_url(settings.store_url)}"]
    if redis and settings.redis_url is not None:
        parts.append(f"Redis {hide_password(settings.redis_url)}")
    return f"{process} ready: {', '.join([*parts, *details])}"
