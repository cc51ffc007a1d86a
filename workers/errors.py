"""Errors of the workers; a line each."""


class WorkerError(Exception):
    """Base of every error raised by the workers package."""


class BundleError(WorkerError):
    """A task bundle cannot be found or is broken; the message names every problem."""


class RetryLater(WorkerError):
    """A message cannot be handled yet; the bus runs it again later (a handler raising
    this takes `final`: on the last try it must handle the message without raising)."""

    def __init__(self, reason: str, delay_s: float | None = None) -> None:
        super().__init__(reason)
        self.delay_s = delay_s
        """When the handler knows it: seconds until the message can be handled (else the
        bus backs off)."""


class StreamBehind(RetryLater):
    """A message continues a stream past its last recorded version: an earlier message
    of the stream is still on its way."""
