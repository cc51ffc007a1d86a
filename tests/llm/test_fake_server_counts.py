"""The fake server counts what it does not keep: a bench that runs for minutes reads the
count, and the server holds no request bodies."""

import openai
from fake_server import FakeServer, completion, usage


def test_a_server_that_keeps_nothing_still_counts_completions() -> None:
    reply = completion(text="hi", usage=usage(3, 1))
    with FakeServer(default=reply, models=("m",), keep=False) as server:
        client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
        for _ in range(3):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        client.models.list()
        assert server.served == 3
        assert server.received == []


def test_a_server_that_keeps_requests_counts_the_same() -> None:
    with FakeServer(default=completion(text="hi"), models=("m",)) as server:
        client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        client.models.list()
        assert server.served == 1
        assert len(server.received) == 2
