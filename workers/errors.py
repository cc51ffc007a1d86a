"""Errors of the workers; a line each."""


class WorkerError(Exception):
    """Base of every error raised by the workers package."""


class BundleError(WorkerError):
    """A task bundle cannot be found or is broken; the message names every problem."""


class UnknownTask(BundleError):
    """No task folder of that id where bundles are looked for."""


class RetryLater(WorkerError):
    """A message cannot be handled yet; the bus runs it again later (a handler raising
    this takes `final`: on the last try it must handle the message without raising)."""

    def __init__(self, reason: str, delay_s: float | None = None, counted: bool = True) -> None:
        super().__init__(reason)
        self.delay_s = delay_s
        """When the handler knows it: seconds until the message can be handled (else the
        bus backs off)."""
        self.counted = counted
        """Whether this wait counts toward the tries after which the handler must handle
        the message in place (`final`): False for a wait on another worker's work (a
        step being taken elsewhere), which may rightly last as long as that work."""


class StreamBehind(RetryLater):
    """A message continues a stream past its last recorded version: an earlier message
    of the stream is still on its way."""
