"""Shared by the gateway tests (imported by bare name: pytest puts this folder on the path)."""

from events.blobs import BlobRef
from events.payloads import ModelResponded

API_KEY = "sk-labrxiv-test-" + "Zq7" * 12
"""A key shaped like a real one; no event, blob or log line may contain it."""


class Sleeps(list[float]):
    """A `sleep` that records how long it was asked to wait instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def unpriced_answer(
    call_id: str, preview: str = "", response: BlobRef | None = None
) -> ModelResponded:
    """A recorded answer of model `m` with no usage and no price."""
    return ModelResponded(
        call_id=call_id,
        model="m",
        usage=None,
        latency_s=0.1,
        price=None,
        cost_usd=None,
        cost_known=False,
        preview=preview,
        response=response,
    )
