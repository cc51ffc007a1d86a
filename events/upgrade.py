"""Upgrade on read: an event stored in an older payload shape is read in today's shape.

The log is never rewritten; every reader (the store, the recorder) passes raw event
dicts through `upgrade` before validating them.
"""

from typing import Any

from events.errors import UnknownSchemaVersion, UpgradeFailed
from events.payloads import BY_TYPE


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Return `data` with its payload in the current shape of its type.

    Data whose type is unknown or whose shape is wrong is returned as it is, for
    validation to reject with the field that is wrong. A version newer than the code
    raises `UnknownSchemaVersion`; an old payload its upgrade cannot read, `UpgradeFailed`.
    """
    payload = data.get("payload")
    if not isinstance(payload, dict):
        return data
    type_ = payload.get("type")
    payload_cls = BY_TYPE.get(type_) if isinstance(type_, str) else None
    version = data.get("schema_version")
    if payload_cls is None or not isinstance(version, int) or version < 1:
        return data
    current = payload_cls.SCHEMA_VERSION
    if version == current:
        return data
    if version > current:
        raise UnknownSchemaVersion(
            f"{type_} schema v{version} is newer than this labrxiv reads (v{current})"
        )
    try:
        upgraded = payload_cls.upgrade(payload, version)
    except (LookupError, TypeError, ValueError, AttributeError) as exc:
        # An old payload without the shape its upgrade expects: reject it with a
        # reason (the recorder dead-letters it) instead of crashing the reader.
        raise UpgradeFailed(
            f"{type_} schema v{version} payload cannot be upgraded to v{current}: {exc!r}"
        ) from exc
    data = dict(data)
    data["payload"] = upgraded
    data["schema_version"] = current
    return data
