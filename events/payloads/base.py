"""The base every payload type shares: frozen, strict about unknown fields, versioned."""

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict


class Payload(BaseModel):
    """A typed event payload; subclasses set a `type` Literal and document every field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    if TYPE_CHECKING:  # every subclass declares it as a Literal field with its tag
        type: str

    SCHEMA_VERSION: ClassVar[int] = 1
    """The shape this code writes; older stored shapes are upgraded on read."""

    UPGRADES: ClassVar[dict[int, Any]] = {}
    """`{n: f}` where `f` turns a version-n payload dict into a version n+1 one."""

    @classmethod
    def upgrade(cls, data: dict[str, Any], from_version: int) -> dict[str, Any]:
        """Bring a stored payload dict of `from_version` up to `SCHEMA_VERSION`."""
        for version in range(from_version, cls.SCHEMA_VERSION):
            data = cls.UPGRADES[version](dict(data))
        return data
