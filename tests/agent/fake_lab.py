"""A fake worker end of the lab socket: HTTP on a Unix socket, scripted per test.

`POST /lab/<name>` is recorded (name and JSON body) and answered with the canned
reply for that name: `{"output": f"{name} ok", "exit_code": 0, "finished": false}`
unless `answers` says otherwise.

    with FakeLab(tmp_path / "lab.sock", answers={"evaluate": reply("accuracy 0.9")}) as lab:
        ...
        assert lab.received == [("evaluate", {})]
"""

import json
import socketserver
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One canned answer: a status and its body (JSON, or raw text)."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)


def reply(output: str, exit_code: int = 0, finished: bool = False) -> Reply:
    """A tool's answer."""
    return Reply(body={"output": output, "exit_code": exit_code, "finished": finished})


def refused(status: int, error: str) -> Reply:
    """A malformed request's or an unknown name's answer."""
    return Reply(status=status, body={"error": error})


class FakeLab:
    """The fake worker end, answering on threads until `stop`."""

    def __init__(self, path: Path, answers: dict[str, Reply] | None = None) -> None:
        self.path = path
        self.answers = dict(answers or {})
        self.received: list[tuple[str, Any]] = []
        """(tool name, parsed JSON body) of each request, in arrival order."""
        self._lock = threading.Lock()
        self._server = socketserver.ThreadingUnixStreamServer(str(path), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def names(self) -> list[str]:
        """The tools called, in order."""
        with self._lock:
            return [name for name, _ in self.received]

    def __enter__(self) -> "FakeLab":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop answering (the socket file stays); again is a no-op."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        lab = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                name = self.path.removeprefix("/lab/")
                with lab._lock:
                    lab.received.append((name, json.loads(raw)))
                answer = lab.answers.get(name, reply(f"{name} ok"))
                if isinstance(answer.body, dict):
                    data = json.dumps(answer.body).encode()
                else:
                    data = answer.body.encode()
                self.send_response(answer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # a Unix socket has no client address to log; tests read `received`

        return Handler
