"""The worker end of an agent's lab socket: HTTP over a Unix socket in the workspace.

The agent reaches it through the `lab` command, the MCP server, or its model base URL
(the launcher relays loopback to it). Routes:
- `POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/messages` (Anthropic's
  Messages API) (and without `/v1`): model calls, recorded and relayed
  (`workers.agent.relay`); `GET /v1/models`: the run's model;
- `POST /lab/<name>` with a JSON object: a lab-API call, answered with
  `{"output", "exit_code", "finished"}`, or `{"error"}` (one line: 400 for a body that
  is not a JSON object, 404 for no such call);
- `GET /lab/_stop`: answered when the worker wants the agent stopped (the launcher waits
  on it).
A malformed model request is answered 400 with an error in its API's shape (OpenAI's, or
Anthropic's for the Messages API) and recorded nowhere.
"""

import os
import socket
import socketserver
import struct
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Protocol

import orjson

from workers.agent.relay import API_OF_PATH, error_body

MAX_BODY = 8 * 1024 * 1024
"""Bytes of a request body at most (a model request with a long conversation): its blob
travels in one message to the recorder, whose bound is 16 MiB by default."""


class Replier:
    """An open request's answer, written as it comes (a stream chunk by chunk)."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._handler = handler
        self.started = False

    def start(self, status: int, headers: dict[str, str]) -> None:
        self.started = True
        self._handler.send_response(status)
        for name, value in headers.items():
            self._handler.send_header(name, value)
        self._handler.send_header("connection", "close")
        self._handler.end_headers()

    def write(self, chunk: bytes) -> None:
        self._handler.wfile.write(chunk)
        self._handler.wfile.flush()


class Session(Protocol):
    """What the socket serves (`workers.agent.session.AgentSession`)."""

    def model_call(
        self, api: str, body: bytes, reply: Replier, asked: Mapping[str, str] | None = None
    ) -> None: ...

    def lab_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]: ...

    def models(self) -> list[str]: ...

    def wait_stop(self) -> None: ...


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    session: Session
    allowed: frozenset[int] = frozenset()

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Only the sandbox's user (and the worker's) may call: the socket's folder may be
        reachable by others (the rootless sandbox needs the workspace open to them)."""
        creds = request.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        return uid in self.allowed

    def handle_error(self, request: Any, client_address: Any) -> None:
        """An agent gone before its answer is expected (the launcher's wait on
        `/lab/_stop` ends with the agent), not a traceback in the worker's log."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        return

    def address_string(self) -> str:
        return "agent"

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            data = [
                {"id": m, "object": "model", "owned_by": "labrxiv"}
                for m in self.server.session.models()
            ]
            self._json(200, {"object": "list", "data": data})
        elif path == "/lab/_stop":
            self.server.session.wait_stop()
            self._json(200, {"stop": True})
        else:
            self._error(404, f"no route GET {path}")

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        path = self.path.split("?")[0].rstrip("/")
        body = self._body()
        if body is None:
            return
        api = API_OF_PATH.get(path.removeprefix("/v1"))
        if api is not None:
            problem = _request_problem(body)
            if problem:
                self._error(400, problem, api)
                return
            reply = Replier(self)
            asked = {k.lower(): v for k, v in self.headers.items()}
            self.server.session.model_call(api, body, reply, asked)
            return
        if path.startswith("/lab/"):
            try:
                args = orjson.loads(body or b"{}")
            except orjson.JSONDecodeError as exc:
                self._json(400, {"error": f"the request is not JSON: {exc}"})
                return
            if not isinstance(args, dict):
                self._json(400, {"error": "the request is not a JSON object"})
                return
            answer = self.server.session.lab_call(path.removeprefix("/lab/"), args)
            self._json(404 if "error" in answer else 200, answer)
            return
        api = "messages" if path.startswith(("/v1/messages/", "/messages/")) else "chat"
        self._error(404, f"no route POST {path}", api)

    def _body(self) -> bytes | None:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            total = 0
            while True:
                line = self.rfile.readline(1024).split(b";")[0].strip()
                try:
                    size = int(line or b"0", 16)
                except ValueError:
                    size = -1
                if size < 0:
                    self._error(400, f"a bad chunk size {line[:20]!r}")
                    return None
                if size == 0:
                    self.rfile.readline()
                    break
                total += size
                if total > MAX_BODY:
                    self._error(413, f"the request is over {MAX_BODY} bytes")
                    return None
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self._error(400, "a bad content-length")
            return None
        if length > MAX_BODY:
            self._error(413, f"the request is over {MAX_BODY} bytes")
            return None
        return self.rfile.read(length)

    def _json(self, status: int, value: object) -> None:
        data = orjson.dumps(value)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, api: str = "chat") -> None:
        kind = "not_found_error" if api == "messages" and status == 404 else "invalid_request_error"
        data = error_body(message, kind, api=api)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _request_problem(body: bytes) -> str:
    """What is wrong with a model request's body ('' when nothing)."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return f"the request is not JSON: {exc}"
    if not isinstance(parsed, dict):
        return "the request is not a JSON object"
    if not isinstance(parsed.get("model", ""), str):
        return "the request's model is not a string"
    return ""


class LabSocket:
    """The socket served on its own threads until `close`."""

    def __init__(self, path: Path, session: Session, allowed: frozenset[int] | None = None) -> None:
        """Serve `session` at `path`, to processes of the users `allowed` (default: the
        worker's own and the folder's owner, the sandbox's user)."""
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            path.unlink()
        # Bound through the folder's descriptor: a workspace's path may be longer than a
        # socket address holds (108 bytes).
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self._server = _Server(
                f"/proc/self/fd/{folder}/{path.name}", _Handler, bind_and_activate=False
            )
            self._server.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._server.server_bind()
            self._server.server_activate()
        finally:
            os.close(folder)
        os.chmod(path, 0o777)  # the sandbox user connects (`nobody` under the root jail)
        self._bound = path.stat().st_ino
        self._server.session = session
        self._server.allowed = (
            allowed if allowed is not None else frozenset({os.geteuid(), path.parent.stat().st_uid})
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="agent lab socket", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        try:  # not a later session's socket at the same path (its run taken over)
            if self.path.lstat().st_ino == self._bound:
                self.path.unlink()
        except OSError:
            pass
