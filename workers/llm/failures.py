"""What went wrong with one attempt, and whether another attempt may help.

429 (rate limited), 5xx, 408, 409, timeouts and connection errors are worth retrying;
a request the provider rejects (400, 404, 422…) or a key it refuses (401, 403) fails
the same way every time, so it is not retried.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Literal

import httpx2

from workers.llm.scrub import scrub

ErrorKind = Literal[
    "rate_limited", "server_error", "timeout", "connection", "bad_request", "auth", "other"
]
"""`ModelFailed.error`."""

DETAIL = 2000
"""`ModelFailed.detail` is at most this long."""


@dataclass(frozen=True)
class Failure:
    """One failed attempt, classified."""

    error: ErrorKind
    retryable: bool
    detail: str
    """The error message with every secret removed."""
    status_code: int | None = None
    retry_after_s: float | None = None
    """What the provider asked us to wait (`retry-after-ms` or `retry-after`), if anything."""


def classify(exc: Exception, secrets: tuple[str, ...]) -> Failure:
    """The failure `exc` (raised by the openai client) stands for."""
    # imported here: a command that calls no model starts without the SDK (0.4 s)
    import openai

    detail = scrub(f"{type(exc).__name__}: {exc}{_where(exc)}", secrets)[:DETAIL]
    if isinstance(exc, openai.APITimeoutError):
        return Failure("timeout", True, detail)
    if isinstance(exc, openai.APIConnectionError):
        return Failure("connection", True, detail)
    if isinstance(exc, openai.APIStatusError):
        error, retryable = by_status(exc.status_code)
        wait = retry_after(exc.response.headers)
        return Failure(error, retryable, detail, exc.status_code, wait)
    # A body the SDK cannot read (a proxy's HTML page, a cut-off response): maybe transient.
    return Failure("other", True, detail)


def _where(exc: Exception) -> str:
    """For a request that got no answer, where it went and why not: the SDK's own message
    is "Connection error." whatever the endpoint and the cause (a wrong URL, a server
    down, no network looked the same in a run's ending)."""
    import openai

    if not isinstance(exc, openai.APIConnectionError):  # a timeout is one too
        return ""
    request = exc.request
    cause = exc.__cause__
    why = f": {type(cause).__name__}: {cause}" if cause is not None else ""
    return f" ({request.method} {request.url}{why})"


def by_status(status: int) -> tuple[ErrorKind, bool]:
    """The kind of error an HTTP status says, and whether a retry may help."""
    if status == 429:
        return "rate_limited", True
    if status >= 500:
        return "server_error", True
    if status == 408:
        return "timeout", True
    if status in (401, 403):
        return "auth", False
    if status == 409:
        return "other", True
    if 400 <= status < 500:
        return "bad_request", False
    return "other", False


def retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds the provider asked for: `retry-after-ms`, else `retry-after` (seconds or a date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
