"""Errors of the workers; a line each."""


class WorkerError(Exception):
    """Base of every error raised by the workers package."""


class NotConfigured(WorkerError):
    """A worker was asked for something its settings do not provide (e.g. no Redis URL)."""


class BundleError(WorkerError):
    """A task bundle cannot be found or is broken; the message names every problem."""
