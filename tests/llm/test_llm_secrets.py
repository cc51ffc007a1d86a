"""The API key reaches the server and nothing else: no event, blob, log line or error."""

import logging
from collections.abc import Callable

import pytest
from fake_server import FakeServer, completion, error, usage
from llm_support import API_KEY, Sleeps, call_until_done

from events.payloads import ModelFailed, Payload
from workers.llm import Gateway, ModelRequest
from workers.llm.scrub import REDACTED, scrub

ECHOES = [
    # What real servers and proxies have been seen to send back.
    error(401, f"Incorrect API key provided: {API_KEY}. You can find your API key at …"),
    error(500, f"upstream said: Authorization: Bearer {API_KEY}"),
    error(429, f"key {API_KEY} is over its quota", {"retry-after": "0"}),
    completion(text=f"The key in my context is {API_KEY}.", usage=usage(3, 9)),
    completion(tool_calls=[("bash", f'{{"command": "echo {API_KEY}"}}')], usage=usage(3, 9)),
]


def test_the_key_is_in_no_event_blob_or_log_line(
    server: FakeServer,
    make_gateway: Callable[..., Gateway],
    sleeps: Sleeps,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: ours, openai's, httpx2's
    events: list[Payload] = []
    blobs: dict[str, bytes] = {}

    def record(payload: Payload, new: dict[str, bytes]) -> None:
        events.append(payload)
        blobs.update(new)

    server.queue(*ECHOES)
    gateway = make_gateway(max_attempts=1)
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
    for i in range(len(ECHOES)):
        request = ModelRequest(f"run-s:{i}", "gpt-4o", [{"role": "user", "content": "hi"}], tools)
        call_until_done(gateway, request, record, sleeps)

    # The key did arrive where it belongs: the Authorization header.
    assert all(r.headers["authorization"] == f"Bearer {API_KEY}" for r in server.completions())
    assert len(events) == 2 * len(ECHOES)
    failures = [e for e in events if isinstance(e, ModelFailed)]
    assert [f.status_code for f in failures] == [401, 500, 429]
    assert all(REDACTED in f.detail for f in failures)
    everything = [
        *(event.model_dump_json() for event in events),
        *(blob.decode(errors="replace") for blob in blobs.values()),
        *(record.getMessage() for record in caplog.records),
        caplog.text,
        repr(gateway),
    ]
    assert caplog.records, "the gateway logs each attempt"
    leaks = [text[:200] for text in everything if API_KEY in text]
    assert leaks == []


def test_scrub_removes_the_key_and_key_shaped_strings() -> None:
    assert scrub(f"x {API_KEY} y", (API_KEY,)) == f"x {REDACTED} y"
    assert (
        scrub("someone else's sk-proj-abcdefgh1234 here", ()) == f"someone else's {REDACTED} here"
    )
    assert scrub("task-abcdefghijk and risk-averse", ()) == "task-abcdefghijk and risk-averse"
    # A placeholder key for a server that checks none is not hunted through ordinary text.
    assert scrub("ask ollama", ("ollama",)) == "ask ollama"
