"""Fixtures for the gateway tests: a scripted local server and gateways pointed at it."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_server import FakeServer
from llm_support import API_KEY, Sleeps

from workers.llm import Gateway, PriceTable


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as running:
        yield running


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_gateway(server: FakeServer) -> Iterator[Callable[..., Gateway]]:
    """`make_gateway(**overrides)`: a gateway on `server` with the test key."""
    made: list[Gateway] = []

    def make(**overrides: Any) -> Gateway:
        options: dict[str, Any] = {
            "base_url": server.url,
            "api_key": API_KEY,
            "prices": PriceTable.load(),
            "timeout": 5.0,
            "max_attempts": 3,
        }
        gateway = Gateway(**(options | overrides))
        made.append(gateway)
        return gateway

    yield make
    for gateway in made:
        gateway.close()
