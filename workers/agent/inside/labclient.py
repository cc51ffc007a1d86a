"""Calls to the lab's tools over the worker's Unix socket (`LABRXIV_LAB_SOCKET`).

The worker speaks HTTP/1.1 on the socket: `POST /lab/<name>` with a JSON object,
answered with `{"output", "exit_code", "finished"}` (status 200) or `{"error"}` (400,
404). Standard library only: this file runs inside the sandbox.
"""

import http.client
import json
import os
import socket
from typing import Any, TypedDict

SOCKET_ENV = "LABRXIV_LAB_SOCKET"


class LabError(Exception):
    """The lab's tools could not be reached, refused the request, or answered something
    unreadable; the message is one line."""


class Answer(TypedDict):
    """A tool's answer."""

    output: str
    """What the tool printed, or why it refused."""
    exit_code: int
    """0 when the tool succeeded."""
    finished: bool
    """The run is over (after `finish`, or when its budget ran out)."""


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket instead of TCP."""

    def __init__(self, socket_path: str, timeout: float | None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def socket_path() -> str:
    """The socket named by `LABRXIV_LAB_SOCKET`."""
    path = os.environ.get(SOCKET_ENV, "")
    if not path:
        raise LabError(f"{SOCKET_ENV} is not set: the lab's tools are reachable only inside a lab")
    return path


def call(
    name: str, args: dict[str, Any], *, path: str | None = None, timeout: float | None = None
) -> Answer:
    """Call the lab's tool `name` with `args` and return its answer.

    `path` defaults to `LABRXIV_LAB_SOCKET`; `timeout` (seconds) to none at all, since
    `evaluate` can take minutes.
    """
    path = path or socket_path()
    connection = _UnixConnection(path, timeout)
    try:
        connection.request(
            "POST",
            f"/lab/{name}",
            body=json.dumps(args).encode(),
            headers={"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        status, raw = response.status, response.read()
    except FileNotFoundError:
        raise LabError(f"no lab socket at {path} ({SOCKET_ENV})") from None
    except ConnectionRefusedError:
        raise LabError(f"nothing answers on the lab socket {path}") from None
    except (http.client.HTTPException, OSError) as exc:
        raise LabError(f"the lab socket {path} failed during {name}: {_line(exc)}") from None
    finally:
        connection.close()
    return _answer(name, status, raw)


def _answer(name: str, status: int, raw: bytes) -> Answer:
    """The answer in `raw`, or a `LabError` saying what is wrong with it."""
    try:
        body = json.loads(raw)
    except ValueError:
        text = raw[:200].decode(errors="replace")
        raise LabError(
            f"the lab's answer to {name} is not JSON (status {status}): {_line(text)}"
        ) from None
    if status != 200:
        error = body.get("error") if isinstance(body, dict) else None
        raise LabError(f"{name}: {_line(error or body)} (status {status})")
    if not (
        isinstance(body, dict)
        and isinstance(body.get("output"), str)
        and isinstance(body.get("exit_code"), int)
    ):
        raise LabError(f"the lab's answer to {name} lacks output and exit_code: {_line(body)}")
    return Answer(
        output=body["output"], exit_code=body["exit_code"], finished=bool(body.get("finished"))
    )


def _line(thing: object) -> str:
    """`thing` as one line of text."""
    return " ".join(str(thing).split())
