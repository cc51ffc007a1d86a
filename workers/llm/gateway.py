"""The LLM gateway: every physical attempt of a chat completion, written ahead and priced.

The openai client runs with `max_retries=0`: its own retries would be invisible, and
each one may be billed. We retry here, so each attempt is a `model.called` followed by
its own `model.responded` or `model.failed`.

Write-ahead use (the caller records `called` durably before anything is sent):

    prepared = gateway.prepare(request, attempt)        # pure: same input, same ids
    record(prepared.called, prepared.blobs)             # model.called is in the log
    outcome = gateway.send(prepared)                    # the one network round trip
    record(outcome.event, outcome.blobs)                # model.responded / model.failed
    if outcome.retry_in_s is not None: wait, then attempt + 1

The wait is `Gateway.retry_wait`, the one retry policy (`workers.retry`) with this
gateway's settings: lab steps wait it out (as a delayed task retry, not a sleep), and
callers that are no lab step follow the loop in one process (`workers.llm.in_place`).
"""

import copy
import logging
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx2

from events.blobs import blob_ref
from events.payloads.model import ModelFailed, ModelResponded, Usage
from runstate.answers import json_object
from workers.llm.failures import DETAIL, Failure, classify
from workers.llm.prices import PriceTable
from workers.llm.reply import MalformedResponse, Reply, chat_completion, read_completion
from workers.llm.request import ModelRequest, PreparedCall, prepare_call
from workers.llm.scrub import scrub, scrub_bytes
from workers.retry import RetryPolicy

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

log = logging.getLogger(__name__)

PLACEHOLDER_KEY = "no-key"
"""Sent to servers that check no key (Ollama, LM Studio, a local vLLM)."""


@dataclass(frozen=True)
class CallOutcome:
    """What one attempt produced: its event, its blobs, and the parsed reply if it answered."""

    event: ModelResponded | ModelFailed
    blobs: dict[str, bytes]
    reply: Reply | None
    """The parsed first choice; None when the attempt failed."""
    retry_in_s: float | None
    """Seconds to wait before the next attempt; None when there is none to make."""


class Gateway:
    """Chat completions against one OpenAI-compatible endpoint, one recorded attempt at a time."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        prices: PriceTable,
        *,
        timeout: float = 120.0,
        max_attempts: int = 4,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        max_retry_after_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.base_url = base_url
        self.provider = provider_of(base_url)
        """The endpoint's host[:port], as events name it (never the key)."""
        self.prices = prices
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.retry = RetryPolicy(backoff_base, backoff_cap, max_retry_after_s)
        """How long to wait before a retryable failure's next attempt."""
        self._clock = clock
        self._secrets = (api_key,) if api_key else ()
        self._clients = _Clients(base_url, api_key or PLACEHOLDER_KEY, timeout)

    @property
    def key(self) -> str | None:
        """The endpoint's API key, for a caller that sends requests of its own to it (the
        agent relay, `workers.agent.relay`); never recorded."""
        return self._secrets[0] if self._secrets else None

    def priced_by(self, prices: PriceTable) -> "Gateway":
        """This gateway (its connections shared) pricing with `prices`: a run's recorded
        prices over the worker's table."""
        if prices is self.prices:
            return self
        priced = copy.copy(self)
        priced.prices = prices
        return priced

    def __repr__(self) -> str:
        return f"Gateway({self.base_url!r}, timeout={self.timeout}, attempts={self.max_attempts})"

    def prepare(self, request: ModelRequest, attempt: int = 1) -> PreparedCall:
        """Attempt number `attempt` of `request`, ready to record; sends nothing."""
        return prepare_call(request, attempt, self.provider)

    def send(self, prepared: PreparedCall) -> CallOutcome:
        """Make the attempt (one HTTP request) and say what came of it; never raises for
        the provider's errors, which are outcomes to record."""
        # imported here: a command that calls no model starts without the SDK (0.4 s)
        import openai

        started = self._clock()
        try:
            # The recorded request bytes go out as they are: `chat.completions.create`
            # would rebuild them from the parsed body, walking every message (a quarter
            # of a steps worker's CPU with fifty labs, bench/llm_concurrency.py).
            with self._clients.one() as client:
                response = client.post(
                    "/chat/completions",
                    content=prepared.content,
                    cast_to=httpx2.Response,
                    stream=True,  # the body read here, within the call's time
                )
                try:
                    body = self._body_within(response, started + self.timeout)
                finally:
                    response.close()
        except (openai.OpenAIError, httpx2.HTTPError, ValueError) as exc:
            return self._failed(prepared, classify(exc, self._secrets), self._clock() - started)
        latency = self._clock() - started
        try:
            completion = _completion(body)
            reply, usage = read_completion(completion, body, prepared.tool_names)
        except MalformedResponse as exc:
            detail = scrub(f"MalformedResponse: {exc}", self._secrets)[:DETAIL]
            return self._failed(prepared, Failure("other", True, detail, 200), latency)
        return self._responded(prepared, completion, reply, usage, body, latency)

    def _body_within(self, response: httpx2.Response, deadline: float) -> bytes:
        """The answer's body, read by `deadline` (the clock's): the client's timeout bounds
        each wait for bytes, so a server sending one byte a second would hold a call for
        as long as it liked. Past it, the SDK's timeout error: a timeout, retried."""
        import openai

        chunks = []
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            if self._clock() > deadline:
                raise openai.APITimeoutError(request=response.request)
        return b"".join(chunks)

    def retry_wait(self, attempt: int, retry_after_s: float | None, call_id: str) -> float:
        """Seconds to wait after attempt `attempt` (call `call_id`) failed: the provider's
        `retry-after` (capped) when it gave one, else backoff. The same for the same call
        in any process, so a step taken again waits until the same moment."""
        return self.retry.wait(attempt, retry_after_s, key=call_id)

    def close(self) -> None:
        """Close the HTTP connections."""
        self._clients.close()

    def _responded(
        self,
        prepared: PreparedCall,
        completion: "ChatCompletion",
        reply: Reply,
        usage: Usage | None,
        body: bytes,
        latency: float,
    ) -> CallOutcome:
        called = prepared.called
        # A lax server may leave `model` out; the SDK does not validate, so look before use.
        model = getattr(completion, "model", None) or called.model
        price, cost = self.prices.priced(model, called.model, usage)
        data = scrub_bytes(body, self._secrets)
        ref = blob_ref(data)
        event = ModelResponded(
            call_id=called.call_id,
            model=model,
            usage=usage,
            latency_s=round(latency, 6),
            price=price,
            cost_usd=cost,
            cost_known=cost is not None,
            finish_reason=reply.finish_reason,
            tool_calls=len(reply.tool_calls),
            preview=scrub(reply.preview(), self._secrets)[:4000],
            response=ref,
        )
        # DEBUG: a line per call over a live campaign table is noise; the call
        # is in the log anyway, as model.called and model.responded.
        log.debug(
            "model call %s (%s): answered in %.3fs, usage %s, cost %s",
            called.call_id,
            model,
            latency,
            "unknown" if usage is None else usage.model_dump(),
            "unknown" if cost is None else f"${cost:.6f}",
        )
        return CallOutcome(event, {ref.sha256: data}, reply, None)

    def _failed(self, prepared: PreparedCall, failure: Failure, latency: float) -> CallOutcome:
        called = prepared.called
        will_retry = failure.retryable and called.attempt < self.max_attempts
        event = ModelFailed(
            call_id=called.call_id,
            error=failure.error,
            status_code=failure.status_code,
            retry_after_s=failure.retry_after_s,
            latency_s=round(latency, 6),
            detail=failure.detail,
            will_retry=will_retry,
        )
        wait = (
            self.retry_wait(called.attempt, failure.retry_after_s, called.call_id)
            if will_retry
            else None
        )
        log.warning(
            "model call %s (%s) failed: %s; %s",
            called.call_id,
            called.model,
            failure.detail,
            f"retrying in {wait:.2f}s" if wait is not None else "not retrying",
        )
        return CallOutcome(event, {}, None, wait)


class _Clients:
    """The endpoint's openai clients (`max_retries=0`), one a call in flight: a call takes
    an idle one (the last given back) or makes one, and gives it back when it is answered.
    One client shared by the calls of fifty threads held as many connections in one pool,
    which httpcore looks through at every request and at every response's close, polling
    each idle socket (26 polls a call at 100 embedded labs): fifty threads' round trips
    took 2.8 ms of CPU a call, 2.5 ms with a client each. A client of its own holds the
    one connection it reuses. The clients share one TLS context (each would make its own,
    reading the certificates: 30 ms a client), made as the SDK's would be."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = timeout
        self._tls: ssl.SSLContext | None = None
        self._idle: list[openai.OpenAI] = []
        self._made: list[openai.OpenAI] = []
        self._lock = threading.Lock()

    @contextmanager
    def one(self) -> Iterator["openai.OpenAI"]:
        """An idle client for one call, given back after it."""
        with self._lock:
            client = self._idle.pop() if self._idle else self._make()
        try:
            yield client
        finally:
            with self._lock:
                self._idle.append(client)

    def _make(self) -> "openai.OpenAI":
        import openai

        if self._tls is None:
            self._tls = httpx2.create_ssl_context()
        http = openai.DefaultHttpxClient(
            base_url=self._base_url, timeout=self._timeout, verify=self._tls
        )
        client = openai.OpenAI(
            base_url=self._base_url,
            api_key=self._api_key,
            timeout=self._timeout,
            max_retries=0,
            http_client=http,
        )
        self._made.append(client)
        return client

    def close(self) -> None:
        """Close every client's connections."""
        with self._lock:
            made = list(self._made)
        for client in made:
            client.close()


def _completion(body: bytes) -> "ChatCompletion":
    """The answer's body as the SDK parses it (`chat_completion`)."""
    return chat_completion(json_object(body, "the response", MalformedResponse))


def provider_of(base_url: str) -> str:
    """`host` or `host:port` of an endpoint URL; any user:password in it is left out."""
    url = httpx2.URL(base_url)
    return url.host if url.port is None else f"{url.host}:{url.port}"
