"""Upgrade on read: an event stored in an older payload shape is read in today's shape.

The log is never rewritten; every reader (the store, the recorder) passes raw event
dicts through `upgrade` before validating them.
"""

from typing import Any

from events.errors import UnknownSchemaVersion
from events.payloads import BY_TYPE


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Return `data` with its payload in the current shape of its type.

    Data whose type is unknown or whose shape is wrong is returned as it is, for
    validation to reject with the field that is wrong.
    """
    payload = data.get("payload")
    if not isinstance(payload, dict):
        return data
    payload_cls = BY_TYPE.get(payload.get("type"))  # type: ignore[arg-type]
    version = data.get("schema_version")
    if payload_cls is None or not isinstance(version, int):
        return data
    current = payload_cls.SCHEMA_VERSION
    if version == current:
        return data
    if version > current:
        raise UnknownSchemaVersion(
            f"{payload['type']} schema v{version} is newer than this labrxiv reads (v{current})"
        )
    data = dict(data)
    data["payload"] = payload_cls.upgrade(payload, version)
    data["schema_version"] = current
    return data
