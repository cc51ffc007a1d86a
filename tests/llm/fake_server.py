"""A local OpenAI-compatible server for tests and benchmarks, scripted per test.

`POST /v1/chat/completions`, `POST /v1/responses` and `POST /v1/messages` (Anthropic's
Messages API) answer with the next scripted `Scripted` reply in the queue (then with
`default`, if set, else a 500 that says the script ran out; a streamed Responses API
answer is a `Scripted` of SSE text with its `content-type`, tests/agent/codex_server.py);
`GET /v1/models` lists `models`. Every request is recorded (method, path, headers,
JSON body) before it is answered, so a test can assert what arrived, even for a
request that was left hanging.

    with FakeServer() as server:
        server.queue(rate_limited(retry_after=2), completion(text="hi", usage=usage(10, 3)))
        client = openai.OpenAI(base_url=server.url, api_key="k")

Imported by bare name from tests/llm (pytest puts that folder on the path), or as
`tests.llm.fake_server` from elsewhere.
"""

import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Scripted:
    """One scripted answer."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)
    """JSON (a dict) or raw text; a completion whose `model` is None echoes the request's."""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Wait this long before answering (latency)."""
    hang: bool = False
    """Never answer: hold the connection until the client gives up or the server stops."""
    trickle_s: float = 0.0
    """Send the body a byte at a time, this long apart (headers at once)."""


@dataclass(frozen=True)
class Received:
    """A request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: Any
    """The parsed JSON body (None for a GET)."""


def usage(
    prompt: int,
    completion: int,
    cached: int | None = None,
    reasoning: int | None = None,
) -> dict[str, Any]:
    """An OpenAI `usage` object; the details are left out (as local servers do) when None."""
    found: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        found["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
    if reasoning is not None:
        found["completion_tokens_details"] = {"reasoning_tokens": reasoning, "audio_tokens": 0}
    return found


def completion(
    text: str | None = None,
    tool_calls: Iterable[tuple[str, str]] = (),
    usage: dict[str, Any] | None = None,
    model: str | None = None,
    finish_reason: str | None = None,
    delay_s: float = 0.0,
) -> Scripted:
    """A chat completion: `text`, and tool calls as (name, arguments JSON text) pairs."""
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
        for i, (name, args) in enumerate(tool_calls, start=1)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1767225600,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
                "logprobs": None,
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return Scripted(body=body, delay_s=delay_s)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Scripted:
    """An error in OpenAI's shape."""
    body = {"error": {"message": message, "type": "fake_error", "param": None, "code": None}}
    return Scripted(status=status, body=body, headers=headers or {})


def rate_limited(retry_after: float | None = None) -> Scripted:
    """A 429, with `retry-after` in seconds if given."""
    headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
    return error(429, "Rate limit reached; slow down.", headers)


def server_error(status: int = 500) -> Scripted:
    return error(status, "The server had an error while processing your request.")


def hang() -> Scripted:
    return Scripted(hang=True)


class _QuietServer(ThreadingHTTPServer):
    """Clients that hang up (a worker killed mid-call) are expected, not tracebacks."""

    request_queue_size = 256
    """The listen backlog, taken when the server is built: many labs' first calls arrive
    at once, and past a backlog of 5 (socketserver's) a busy machine resets some of them."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class FakeServer:
    """The server, on a free port of 127.0.0.1, answering on threads until `stop`."""

    def __init__(
        self,
        default: Scripted | Callable[[Received], Scripted] | None = None,
        models: Iterable[str] = ("fake-model",),
        latency_s: float = 0.0,
        keep: bool = True,
    ) -> None:
        self.default = default
        """What to answer when the queue is empty (a reply or a function of the request)."""
        self.models = list(models)
        self.latency_s = latency_s
        """Added to every chat completion's answer time."""
        self.keep = keep
        """Keep every request in `received`. A bench that runs for minutes counts them
        instead (`served`): thousands of long conversations kept make the collector pause
        the server's threads (at 100 labs, a p99 of 250 ms of its own time a call against
        66 ms when counted)."""
        self.received: list[Received] = []
        self.served = 0
        """Chat-completion requests received so far, kept or not."""
        self._script: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        # A short poll keeps `stop` quick (serve_forever checks for shutdown once a poll).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL to give a client (ends in /v1)."""
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str)  # an IPv4 address
        return f"http://{host}:{port}/v1"

    def queue(self, *replies: Scripted) -> None:
        """Answer the next chat completions with `replies`, in order."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not yet served."""
        with self._lock:
            return len(self._script)

    def completions(self) -> list[Received]:
        """The chat-completion requests received so far."""
        with self._lock:
            return [r for r in self.received if r.path.endswith("/chat/completions")]

    def responses(self) -> list[Received]:
        """The Responses API requests received so far."""
        with self._lock:
            return [r for r in self.received if r.path.endswith("/responses")]

    def messages(self) -> list[Received]:
        """The Messages API requests received so far."""
        with self._lock:
            return [r for r in self.received if r.path.endswith("/messages")]

    def start(self) -> "FakeServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging requests and stop serving."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "FakeServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, received: Received) -> None:
        with self._lock:
            if received.path.endswith("/chat/completions"):
                self.served += 1
            if self.keep:
                self.received.append(received)

    def _next(self, received: Received) -> Scripted:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if callable(self.default):
            return self.default(received)
        return self.default or error(500, "the fake server's script ran out")


def conversation_problem(body: Any) -> str | None:
    """Why OpenAI's API would refuse the messages of a chat-completion request, as far as
    tool calls go: each `tool` message must answer, by its `tool_call_id`, one of the
    `tool_calls` of the assistant message before it, and each of those calls must be
    answered before any other message."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return None
    asked: set[str] = set()
    unanswered: set[str] = set()
    for number, message in enumerate(body["messages"]):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role != "tool" and unanswered:
            return (
                f"Invalid parameter: messages[{number}]: an assistant message with "
                "'tool_calls' must be followed by tool messages responding to each "
                "'tool_call_id'. The following tool_call_ids did not have response "
                f"messages: {', '.join(sorted(unanswered))}"
            )
        if role == "assistant":
            calls = message.get("tool_calls") or ()
            asked = {str(c.get("id")) for c in calls if isinstance(c, dict)}
            unanswered = set(asked)
        elif role == "tool":
            if message.get("tool_call_id") not in asked:
                return (
                    f"Invalid parameter: messages[{number}] with role 'tool' must be a "
                    f"response to a preceding message with 'tool_calls' (tool_call_id "
                    f"{message.get('tool_call_id')!r} is not one of {sorted(asked)})"
                )
            unanswered.discard(message.get("tool_call_id"))
    return None


def _handler_for(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle on, the body waits for the
        # client's delayed ACK (~40 ms a call), which would swamp any latency measured.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            self._received(None)
            if self.path.rstrip("/").endswith("/models"):
                data = [{"id": m, "object": "model", "owned_by": "fake"} for m in server.models]
                self._send(Scripted(body={"object": "list", "data": data}))
            else:
                self._send(error(404, f"no route {self.path}"))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw.decode(errors="replace")
            received = self._received(body)
            if not self.path.rstrip("/").endswith(("/chat/completions", "/responses", "/messages")):
                self._send(error(404, f"no route {self.path}"))
                return
            problem = conversation_problem(body)
            if problem is not None:  # as OpenAI's API refuses it
                self._send(error(400, problem))
                return
            reply = server._next(received)
            if reply.hang:
                server._stopping.wait(60)
                self.close_connection = True
                return  # the client gave up; nothing to answer
            if reply.delay_s + server.latency_s > 0:
                server._stopping.wait(reply.delay_s + server.latency_s)
            if isinstance(reply.body, dict) and "choices" in reply.body:
                if reply.body.get("model") is None and isinstance(body, dict):
                    reply = replace(reply, body=reply.body | {"model": body.get("model")})
            self._send(reply)

        def _received(self, body: Any) -> Received:
            headers = {k.lower(): v for k, v in self.headers.items()}
            received = Received(self.command, self.path, headers, body)
            server._record(received)
            return received

        def _send(self, reply: Scripted) -> None:
            if isinstance(reply.body, dict):
                data, kind = json.dumps(reply.body).encode(), "application/json"
            else:
                data, kind = reply.body.encode(), "text/plain"
            try:
                self.send_response(reply.status)
                if "content-type" not in {name.lower() for name in reply.headers}:
                    self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for byte in data if reply.trickle_s else ():
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(reply.trickle_s)
                if not reply.trickle_s:
                    self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: tests read `received`, not stderr

    return Handler
