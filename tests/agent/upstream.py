"""A scripted model provider for the agent relay's tests: any path, any bytes.

Each POST is answered with the next scripted `Canned` answer and recorded (path, headers,
body), so a test can check what the relay sent on (the key included) and what reached
the agent (chunk by chunk, for a stream).
"""

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Canned:
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})


def sse(*chunks: dict[str, Any], done: bool = True) -> Canned:
    """A server-sent event stream of `chunks` (then `[DONE]`)."""
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return Canned(body="".join(lines).encode(), headers={"content-type": "text/event-stream"})


def chat_chunk(
    text: str = "", usage: dict[str, Any] | None = None, finish: str | None = None
) -> dict[str, Any]:
    choices = (
        []
        if usage is not None and not text
        else [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]
    )
    chunk: dict[str, Any] = {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": choices,
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class Upstream:
    def __init__(self) -> None:
        self.answers: deque[Canned] = deque()
        self.seen: list[Seen] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.seen.append(Seen(self.path, headers, json.loads(raw)))
                answer = (
                    outer.answers.popleft()
                    if outer.answers
                    else Canned(500, b'{"error": {"message": "no answer left"}}')
                )
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "Upstream":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
