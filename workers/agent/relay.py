"""The recording model endpoint: an agent's model requests, forwarded and recorded.

Inside the sandbox the agent's base URL is on loopback; the launcher relays it to the
worker over the lab socket (`workers.agent.server`), and this relay forwards each request
to the run's endpoint with the worker's key (never seen in the sandbox or the log): as
`authorization: Bearer` for OpenAI's Chat Completions and Responses APIs, as `x-api-key`
for Anthropic's Messages API (its `anthropic-version` and `anthropic-beta` headers passed
on as the agent sent them). Each
request is recorded as the built-in loop records its calls: `model.called` sent to the
log before the request goes out, then `model.responded` (usage as the provider reported
it, the price frozen in the event, an unknown cost kept unknown) or `model.failed`. The
answer goes back to the agent as the provider sent it, a stream chunk by chunk.
"""

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2
import orjson

from events.blobs import blob_ref
from events.payloads import ModelCalled, ModelFailed, ModelResponded, Payload
from workers.agent.answers import Answer, Unreadable, read_answer
from workers.llm.failures import by_status
from workers.llm.gateway import provider_of
from workers.llm.prices import PriceTable
from workers.llm.scrub import scrub, scrub_bytes

API_OF_PATH = {"/chat/completions": "chat", "/responses": "responses", "/messages": "messages"}
"""The model APIs relayed, by path after the base URL's `/v1`."""
PASSED_HEADERS = ("anthropic-version", "anthropic-beta")
"""Headers of the agent's request passed on to the provider."""
ANTHROPIC_VERSION = "2023-06-01"
"""The `anthropic-version` sent when the agent's Messages API request names none."""
KEPT_HEADERS = (
    "content-type",
    "retry-after",
    "retry-after-ms",
    "x-request-id",
    "x-should-retry",
)
"""Headers of the provider's answer passed back to the agent."""
FAILED_BODY_BYTES = 64 * 1024
PREVIEW = 4000


class Replier(Protocol):
    """Where the answer goes: the agent's open request."""

    def start(self, status: int, headers: dict[str, str]) -> None: ...

    def write(self, chunk: bytes) -> None: ...


def error_body(message: str, kind: str, code: str | None = None, api: str = "chat") -> bytes:
    """An error as the API `api` writes it (what its clients read): OpenAI's shape, or
    Anthropic's (`{"type": "error", "error": {"type", "message"}}`) for `messages`."""
    if api == "messages":
        return orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})
    return orjson.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})


@dataclass(frozen=True)
class Relayed:
    """What one relayed request came to: its events were sent; `answer` when it answered."""

    called: ModelCalled
    outcome: ModelResponded | ModelFailed
    answer: Answer | None


class ModelRelay:
    """Forwards an agent's model requests to one endpoint, recording each."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        prices: PriceTable,
        emit: Callable[[list[Payload], dict[str, bytes]], object],
        timeout: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.provider = provider_of(base_url)
        self.prices = prices
        self._emit = emit
        self._key = api_key
        self._secrets = (api_key,) if api_key else ()
        self._clock = clock
        self._client = httpx2.Client(timeout=httpx2.Timeout(timeout, connect=30.0))

    def close(self) -> None:
        self._client.close()

    def relay(
        self,
        api: str,
        body: bytes,
        request_id: str,
        model: str,
        reply: Replier,
        asked: Mapping[str, str] | None = None,
    ) -> Relayed:
        """Record and send the request `body` (of `api`: `chat`, `responses` or
        `messages`) as the call `request_id`; answer the agent through `reply`. `asked`:
        the agent's request headers (those of `PASSED_HEADERS` are passed on)."""
        parsed = orjson.loads(body)
        streamed = bool(parsed.get("stream"))
        items = parsed.get("input") if api == "responses" else parsed.get("messages")
        ref = blob_ref(body)
        called = ModelCalled(
            call_id=f"{request_id}/1",
            request_id=request_id,
            attempt=1,
            model=str(parsed.get("model") or model),
            provider=self.provider,
            messages=len(items) if isinstance(items, list) else 1,
            request=ref,
            api=api,
        )
        self._emit([called], {ref.sha256: body})  # written ahead: sent before the request
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        headers |= {k.lower(): v for k, v in (asked or {}).items() if k.lower() in PASSED_HEADERS}
        if api == "messages":
            headers.setdefault("anthropic-version", ANTHROPIC_VERSION)
        if self._key:
            if api == "messages":
                headers["x-api-key"] = self._key
            else:
                headers["authorization"] = f"Bearer {self._key}"
        sent, unasked = _asking_usage(api, parsed, body)
        started = self._clock()
        request = self._client.build_request("POST", self.url(api), content=sent, headers=headers)
        try:
            response = self._client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            return self._unreached(api, called, exc, started, reply)
        try:
            kept = {k: v for k, v in response.headers.items() if k.lower() in KEPT_HEADERS}
            if response.status_code != 200:
                data = response.read()[:FAILED_BODY_BYTES]
                reply.start(response.status_code, kept)
                _write(reply, scrub_bytes(data, self._secrets))
                return self._failed(called, response.status_code, data, kept, started)
            reply.start(200, kept)
            chunks = []
            passed = _Passed(reply, unasked, streamed)
            try:
                for chunk in response.iter_raw():
                    chunks.append(chunk)
                    passed.write(chunk)
            except httpx2.HTTPError as exc:  # the provider broke off: billed, perhaps
                passed.close()
                return self._unreached(api, called, exc, started, None)
        finally:
            response.close()
        relayed = self._answered(api, called, b"".join(chunks), streamed, started)
        passed.close()  # the stream's last event once its outcome is in the log
        return relayed

    def url(self, api: str) -> str:
        """Where a request of `api` goes: the base URL and the API's path; for the Messages
        API, `/v1/messages` under a base URL that does not end in `/v1` (Anthropic's own
        base URL names no version)."""
        path = next(p for p, a in API_OF_PATH.items() if a == api)
        if api == "messages" and not self.base_url.endswith("/v1"):
            path = "/v1" + path
        return self.base_url + path

    def _answered(
        self, api: str, called: ModelCalled, data: bytes, streamed: bool, started: float
    ) -> Relayed:
        latency = round(self._clock() - started, 6)
        try:
            answer = read_answer(api, data, streamed)
        except Unreadable as exc:
            detail = scrub(f"the answer could not be read: {exc}", self._secrets)[:2000]
            failed = ModelFailed(
                call_id=called.call_id,
                error="other",
                status_code=200,
                latency_s=latency,
                detail=detail,
                will_retry=False,
            )
            self._emit([failed], {})
            return Relayed(called, failed, None)
        model = answer.model or called.model
        price, cost = self.prices.priced(model, called.model, answer.usage)
        kept = scrub_bytes(data, self._secrets)
        ref = blob_ref(kept)
        said = answer.text or "".join(f"{c.name}({c.arguments})" for c in answer.calls)
        responded = ModelResponded(
            call_id=called.call_id,
            model=model,
            usage=answer.usage,
            latency_s=latency,
            price=price,
            cost_usd=cost,
            cost_known=cost is not None,
            finish_reason=answer.finish_reason,
            tool_calls=len(answer.calls),
            preview=scrub(said, self._secrets)[:PREVIEW],
            response=ref,
        )
        self._emit([responded], {ref.sha256: kept})
        return Relayed(called, responded, answer)

    def _failed(
        self, called: ModelCalled, status: int, data: bytes, headers: dict[str, str], started: float
    ) -> Relayed:
        error, _ = by_status(status)
        wait = headers.get("retry-after")
        try:
            retry_after = float(wait) if wait is not None else None
        except ValueError:
            retry_after = None
        failed = ModelFailed(
            call_id=called.call_id,
            error=error,
            status_code=status,
            retry_after_s=retry_after,
            latency_s=round(self._clock() - started, 6),
            detail=scrub(data.decode(errors="replace"), self._secrets)[:2000],
            will_retry=False,
        )
        self._emit([failed], {})
        return Relayed(called, failed, None)

    def _unreached(
        self,
        api: str,
        called: ModelCalled,
        exc: Exception,
        started: float,
        reply: Replier | None,
    ) -> Relayed:
        timeout = isinstance(exc, httpx2.TimeoutException)
        detail = scrub(f"{type(exc).__name__}: {exc}", self._secrets)[:2000]
        failed = ModelFailed(
            call_id=called.call_id,
            error="timeout" if timeout else "connection",
            latency_s=round(self._clock() - started, 6),
            detail=detail,
            will_retry=False,
        )
        self._emit([failed], {})
        if reply is not None:
            reply.start(504 if timeout else 502, {"content-type": "application/json"})
            said = f"the model endpoint was not reached: {detail}"
            _write(reply, error_body(said, "api_error", api=api))
        return Relayed(called, failed, None)


def _asking_usage(api: str, parsed: dict[str, Any], body: bytes) -> tuple[bytes, bool]:
    """The body to send, and whether it asks for what the agent did not: a streamed chat
    completion reports its usage only when asked (`stream_options.include_usage`), so the
    relay asks; the usage chunk is then kept from the agent (`_Passed`). The request is
    recorded as the agent sent it."""
    options = parsed.get("stream_options")
    if api != "chat" or not parsed.get("stream") or not isinstance(options or {}, dict):
        return body, False
    if (options or {}).get("include_usage"):
        return body, False
    asked = parsed | {"stream_options": (options or {}) | {"include_usage": True}}
    return orjson.dumps(asked), True


class _Passed:
    """A stream passed on to the agent event by event, its last event held back until
    `close` (the relay records the outcome first: an agent that reads `[DONE]` and calls
    again is answered under budgets that count this call), less the usage chunk it did
    not ask for (the chunk with no choices and a `usage`) when `unasked`. An answer that
    is not streamed goes through as it comes (it ends when the connection closes, after
    the outcome is recorded)."""

    def __init__(self, reply: Replier, unasked: bool, streamed: bool) -> None:
        self._reply = reply
        self._unasked = unasked
        self._streamed = streamed
        self._buffer = b""
        self._held: bytes | None = None

    def write(self, chunk: bytes) -> None:
        if not self._streamed:
            _write(self._reply, chunk)
            return
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            event, self._buffer = self._buffer.split(b"\n\n", 1)
            if self._unasked and _usage_only(event):
                continue
            if self._held is not None:
                _write(self._reply, self._held)
            self._held = event + b"\n\n"

    def close(self) -> None:
        rest = (self._held or b"") + self._buffer
        self._held, self._buffer = None, b""
        if rest:
            _write(self._reply, rest)


def _usage_only(event: bytes) -> bool:
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            try:
                data = orjson.loads(line[5:].strip())
            except orjson.JSONDecodeError:
                return False
            return isinstance(data, dict) and not data.get("choices") and bool(data.get("usage"))
    return False


def _write(reply: Replier, chunk: bytes) -> None:
    """Pass `chunk` on; an agent that hung up misses it, the call is recorded anyway."""
    try:
        reply.write(chunk)
    except OSError:
        pass
