"""Shared by the gateway tests (imported by bare name: pytest puts this folder on the path)."""

API_KEY = "sk-labrxiv-test-" + "Zq7" * 12
"""A key shaped like a real one; no event, blob or log line may contain it."""


class Sleeps(list[float]):
    """A `sleep` that records how long it was asked to wait instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
