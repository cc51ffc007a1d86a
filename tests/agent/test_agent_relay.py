"""The recording model endpoint, driven by the real `openai` client through the lab
socket and the launcher's loopback relay, against a scripted provider: what reaches the
agent is what the provider sent, and each call is recorded as the built-in loop records
its calls (written ahead, usage and price, unknown cost kept unknown), the key nowhere."""

import json
import socket
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import openai
import pytest

from events.payloads import ModelCalled, ModelFailed, ModelResponded, Payload
from tests.agent.upstream import Canned, Upstream, chat_chunk, sse
from workers.agent.inside import launcher
from workers.agent.relay import ModelRelay
from workers.agent.server import LabSocket, Replier
from workers.llm.prices import PriceTable, cost_usd

KEY = "sk-test-relay-0123456789abcdefghijklmnop"


class Recorded:
    def __init__(self) -> None:
        self.payloads: list[Payload] = []
        self.blobs: dict[str, bytes] = {}

    def __call__(self, payloads: list[Payload], blobs: dict[str, bytes]) -> None:
        self.payloads += payloads
        self.blobs |= blobs


class _Session:
    def __init__(self, relay: ModelRelay) -> None:
        self.relay = relay
        self.calls = 0

    def model_call(
        self, api: str, body: bytes, reply: Replier, asked: Mapping[str, str] | None = None
    ) -> None:
        self.calls += 1
        self.relay.relay(api, body, f"run-t:agent:{self.calls}", "gpt-4o-mini", reply, asked)

    def lab_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"error": "no lab here"}

    def models(self) -> list[str]:
        return ["gpt-4o-mini"]

    def wait_stop(self) -> None:
        return


@pytest.fixture
def relayed(tmp_path: Path) -> Iterator[tuple[Upstream, Recorded, openai.OpenAI]]:
    with Upstream() as upstream:
        recorded = Recorded()
        relay = ModelRelay(upstream.url, KEY, PriceTable.load(), recorded)
        lab = LabSocket(tmp_path / "lab.sock", _Session(relay))
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        threading.Thread(
            target=launcher._relay, args=(listener, str(lab.path)), daemon=True
        ).start()
        port = listener.getsockname()[1]
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="labrxiv", max_retries=0
        )
        try:
            yield upstream, recorded, client
        finally:
            client.close()
            listener.close()
            lab.close()
            relay.close()


def _completion(text: str, usage: dict[str, Any] | None) -> Canned:
    body = {
        "id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
    }  # fmt: skip
    if usage is not None:
        body["usage"] = usage
    return Canned(body=json.dumps(body).encode())


def _no_key_anywhere(recorded: Recorded) -> None:
    text = "".join(p.model_dump_json() for p in recorded.payloads)
    assert KEY not in text
    assert not any(KEY.encode() in blob for blob in recorded.blobs.values())


def test_a_chat_completion_reaches_the_agent_and_is_recorded_with_its_price(relayed) -> None:
    upstream, recorded, client = relayed
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    upstream.answers.append(_completion("hello from the model", usage))
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.choices[0].message.content == "hello from the model"
    (seen,) = upstream.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {KEY}"  # added outside the sandbox
    called, responded = recorded.payloads
    assert isinstance(called, ModelCalled) and isinstance(responded, ModelResponded)
    assert (
        called.request is not None
        and json.loads(recorded.blobs[called.request.sha256]) == seen.body
    )
    assert responded.usage is not None and responded.usage.input_tokens == 120
    price = PriceTable.load().price_of("gpt-4o-mini")
    assert price is not None and responded.price == price
    assert responded.cost_usd == cost_usd(responded.usage, price) and responded.cost_known
    _no_key_anywhere(recorded)


def test_a_stream_passes_chunk_by_chunk_and_its_final_usage_is_recorded(relayed) -> None:
    upstream, recorded, client = relayed
    usage = {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}
    upstream.answers.append(
        sse(chat_chunk("Hel"), chat_chunk("lo", finish="stop"), chat_chunk(usage=usage))
    )
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    parts = [c.choices[0].delta.content for c in stream if c.choices]
    assert "".join(p or "" for p in parts) == "Hello"
    responded = recorded.payloads[-1]
    assert isinstance(responded, ModelResponded)
    assert responded.usage is not None and responded.usage.output_tokens == 7
    assert responded.cost_known and responded.preview == "Hello"


def test_a_stream_the_agent_asked_no_usage_of_is_counted_all_the_same(relayed) -> None:
    """The relay asks the provider for the stream's usage and keeps the usage chunk from
    an agent that did not ask for it (code reading `chunk.choices[0]` of every chunk)."""
    upstream, recorded, client = relayed
    usage = {"prompt_tokens": 70, "completion_tokens": 3, "total_tokens": 73}
    upstream.answers.append(
        sse(chat_chunk("o"), chat_chunk("k", finish="stop"), chat_chunk(usage=usage))
    )
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert [c.choices[0].delta.content for c in stream] == ["o", "k"]
    assert upstream.seen[0].body["stream_options"] == {"include_usage": True}
    called, responded = recorded.payloads
    assert isinstance(called, ModelCalled) and called.request is not None
    assert "stream_options" not in json.loads(recorded.blobs[called.request.sha256])
    assert isinstance(responded, ModelResponded)
    assert responded.usage is not None and responded.usage.input_tokens == 70
    assert responded.cost_known


def test_a_stream_without_usage_has_an_unknown_cost(relayed) -> None:
    upstream, recorded, client = relayed
    upstream.answers.append(sse(chat_chunk("ok", finish="stop")))
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert [c.choices[0].delta.content for c in stream] == ["ok"]
    responded = recorded.payloads[-1]
    assert isinstance(responded, ModelResponded)
    assert responded.usage is None and responded.cost_usd is None and not responded.cost_known


def test_the_responses_api_is_relayed_and_its_usage_recorded(relayed) -> None:
    upstream, recorded, client = relayed
    body = {
        "id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
        "model": "gpt-4o-mini", "output": [{"type": "message", "id": "m1", "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "fine", "annotations": []}]}],
        "usage": {"input_tokens": 40, "output_tokens": 5, "total_tokens": 45,
                  "input_tokens_details": {"cached_tokens": 10},
                  "output_tokens_details": {"reasoning_tokens": 2}},
    }  # fmt: skip
    upstream.answers.append(Canned(body=json.dumps(body).encode()))
    answer = client.responses.create(model="gpt-4o-mini", input="hi")
    assert answer.output_text == "fine"
    assert upstream.seen[0].path == "/v1/responses"
    responded = recorded.payloads[-1]
    assert isinstance(responded, ModelResponded) and responded.usage is not None
    assert (responded.usage.input_tokens, responded.usage.cached_input_tokens) == (40, 10)
    assert responded.usage.reasoning_tokens == 2 and responded.cost_known


def test_a_provider_error_reaches_the_agent_as_sent_and_is_recorded(relayed) -> None:
    upstream, recorded, client = relayed
    error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}}
    upstream.answers.append(
        Canned(
            429,
            json.dumps(error).encode(),
            {"content-type": "application/json", "retry-after": "3"},
        )
    )
    with pytest.raises(openai.RateLimitError) as raised:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
    assert raised.value.response.headers["retry-after"] == "3"
    assert "Rate limit reached" in str(raised.value)
    failed = recorded.payloads[-1]
    assert isinstance(failed, ModelFailed)
    assert (failed.error, failed.status_code, failed.retry_after_s) == ("rate_limited", 429, 3.0)


def test_the_lab_socket_binds_where_its_path_is_longer_than_a_socket_address_holds(
    tmp_path: Path,
) -> None:
    path = tmp_path / ("a-workspace-folder-with-a-long-name" * 4) / "lab.sock"
    assert len(str(path)) > 108
    lab = LabSocket(
        path, _Session(ModelRelay("http://127.0.0.1:9/v1", None, PriceTable.load(), Recorded()))
    )
    try:
        assert path.is_socket() and oct(path.stat().st_mode & 0o777) == "0o777"
    finally:
        lab.close()
    assert not path.exists()


def test_an_unreachable_provider_is_a_recorded_connection_failure(tmp_path: Path) -> None:
    recorded = Recorded()
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    relay = ModelRelay(f"http://127.0.0.1:{port}/v1", KEY, PriceTable.load(), recorded)
    lab = LabSocket(tmp_path / "lab.sock", _Session(relay))
    try:
        import http.client

        class Unix(http.client.HTTPConnection):
            def connect(self) -> None:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(str(lab.path))

        conn = Unix("lab")
        conn.request("POST", "/v1/chat/completions", body=b'{"model": "m", "messages": []}')
        answer = conn.getresponse()
        assert answer.status == 502 and b"not reached" in answer.read()
    finally:
        lab.close()
        relay.close()
    called, failed = recorded.payloads
    assert isinstance(failed, ModelFailed) and failed.error == "connection"
