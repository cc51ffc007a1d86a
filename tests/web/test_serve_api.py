"""`/api/v1`: the same data as the CLI's `--json`, paged, and errors as JSON."""

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from events import EventStore
from labrxiv.cli import app as cli_app
from labrxiv.web.app import create_app
from tests.web.conftest import caught_up
from tests.web.serve_log import ARCHIVE, FINETUNE, HERDING, ISOLATED, SCRIPTED, serve_events


@pytest.fixture
def cli_json(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What `labrxiv ARGS --json` prints for the same log, parsed."""
    for name in list(os.environ):
        if name.startswith("LABRXIV_"):
            monkeypatch.delenv(name)

    def run(*args: str) -> Any:
        said = CliRunner().invoke(
            cli_app, [*args, "--json"], env={"LABRXIV_DATA_DIR": str(data_dir)}
        )
        assert said.exit_code == 0, said.output
        return orjson.loads(said.stdout)

    return run


@pytest.mark.parametrize(
    ("url", "command"),
    [
        ("/api/v1/papers", ["papers", "list"]),
        (f"/api/v1/papers/{HERDING}", ["papers", "show", HERDING]),
        ("/api/v1/search?q=herding", ["papers", "search", "herding"]),
        ("/api/v1/campaigns", ["campaigns"]),
        ("/api/v1/runs", ["runs"]),
        (f"/api/v1/runs/run-{ARCHIVE}-0", ["runs", "show", f"run-{ARCHIVE}-0"]),
        (f"/api/v1/runs/run-{ISOLATED}-0/analysis", ["analyze", f"run-{ISOLATED}-0"]),
    ],
)
def test_the_api_answers_what_the_cli_prints(
    client: TestClient, cli_json: Any, url: str, command: list[str]
) -> None:
    answer = client.get(url)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == cli_json(*command)


def test_a_campaign_holds_its_runs_and_their_spend(client: TestClient) -> None:
    doc = client.get(f"/api/v1/campaigns/{ARCHIVE[:6]}").json()
    assert doc["campaign"]["campaign"] == ARCHIVE
    assert doc["campaign"]["status"] == "running"
    assert [r["stream"] for r in doc["runs"]] == [f"run-{ARCHIVE}-0"]
    assert doc["runs"][0]["mode"] == "archive"
    assert doc["spend"][f"run-{ARCHIVE}-0"]["tool_calls"] == 1


def test_lists_page_with_the_total_in_a_header(client: TestClient) -> None:
    first = client.get("/api/v1/papers?per_page=2")
    second = client.get("/api/v1/papers?per_page=2&page=2")
    assert first.headers["x-total-count"] == second.headers["x-total-count"] == "3"
    ids = [p["paper_id"] for p in first.json() + second.json()]
    assert ids == [HERDING, SCRIPTED, FINETUNE]  # submission order
    runs = client.get("/api/v1/runs?per_page=1&page=2")
    assert [r["stream"] for r in runs.json()] == [f"run-{ARCHIVE}-0"]  # stream order


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("decision=accept", [HERDING]),
        ("decision=undecided", [SCRIPTED, FINETUNE]),
        (f"campaign={ARCHIVE[:5]}", [FINETUNE]),
        ("lab=lab-0&task=continual-digits", [HERDING, SCRIPTED, FINETUNE]),
        ("task=other", []),
        ("task=&campaign=&lab=&decision=", [HERDING, SCRIPTED, FINETUNE]),
    ],
)
def test_papers_filter_by_task_campaign_lab_and_decision(
    client: TestClient, query: str, expected: list[str]
) -> None:
    answer = client.get(f"/api/v1/papers?{query}")
    assert [p["paper_id"] for p in answer.json()] == expected


def test_search_ranks_the_archive_and_keeps_the_filter(client: TestClient) -> None:
    hits = client.get("/api/v1/search?q=herding").json()
    assert {h["paper"]["paper_id"] for h in hits} == {HERDING, SCRIPTED, FINETUNE}
    assert hits[0]["score"] >= hits[-1]["score"]
    kept = client.get(f"/api/v1/search?q=herding&campaign={ARCHIVE}").json()
    assert [h["paper"]["paper_id"] for h in kept] == [FINETUNE]


@pytest.mark.parametrize(
    ("url", "status", "reason"),
    [
        ("/api/v1/papers/p-ffff", 404, "no paper p-ffff"),
        ("/api/v1/runs/run-ffff", 404, "no run run-ffff"),
        ("/api/v1/campaigns/ffff", 404, "no campaign ffff"),
        ("/api/v1/nothing", 404, "no such page"),
        ("/api/v1/runs/run-", 400, "run run- is ambiguous"),
        ("/api/v1/papers?page=0", 400, "page: Input should be greater than or equal to 1"),
        ("/api/v1/papers?page=two", 400, "page: Input should be a valid integer"),
        ("/api/v1/papers?per_page=0", 400, "per_page: Input should be greater than"),
        ("/api/v1/papers?page=3&per_page=2", 400, "page 3 is past the last page (2)"),
        ("/api/v1/papers?decision=maybe", 400, "decision 'maybe': one of accept"),
        (f"/api/v1/campaigns/{ISOLATED}?page=2", 400, "page 2 is past the last page (1)"),
        ("/api/v1/runs?per_page=501", 400, "per_page: Input should be less than or equal to 500"),
        ("/api/v1/papers?campaign=ffff", 400, "campaign filter: no campaign ffff"),
        ("/api/v1/search?q=%20", 400, "q: give words to search for"),
        ("/api/v1/search", 400, "q: Field required"),
    ],
)
def test_bad_input_is_an_error_with_its_reason(
    client: TestClient, url: str, status: int, reason: str
) -> None:
    answer = client.get(url)
    assert answer.status_code == status
    assert answer.json()["status"] == status
    assert answer.json()["error"].startswith(reason), answer.json()


def test_the_openapi_schema_lists_the_api(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    paths = set(schema["paths"])
    assert {
        "/api/v1/papers",
        "/api/v1/papers/{paper_id}",
        "/api/v1/search",
        "/api/v1/campaigns",
        "/api/v1/campaigns/{campaign}",
        "/api/v1/runs",
        "/api/v1/runs/{run}",
    } <= paths
    assert all(path.startswith("/api/v1/") for path in paths), "pages are not in the API"


def test_a_curve_of_a_page_past_the_last_is_an_error_as_the_page_is(client: TestClient) -> None:
    answer = client.get(f"/campaigns/{ISOLATED}/curves/time.svg?page=2")
    assert answer.status_code == 400
    assert "page 2 is past the last page (1)" in answer.text


def test_the_schema_names_the_errors_the_api_answers(client: TestClient) -> None:
    """400 and 404 with `{"error", "status"}`, as the API answers them; not FastAPI's 422
    with its `detail` list, which no request is answered with."""
    schema = client.get("/openapi.json").json()
    for path, operations in schema["paths"].items():
        answers = operations["get"]["responses"]
        assert "422" not in answers, path
        for status in ("400", "404"):
            shape = answers[status]["content"]["application/json"]["schema"]
            assert shape == {"$ref": "#/components/schemas/Error"}, (path, status)
    error = schema["components"]["schemas"]["Error"]
    assert set(error["properties"]) == {"error", "status"}
    assert "HTTPValidationError" not in schema["components"]["schemas"]


def test_nothing_answers_a_write_and_the_answer_says_what_would(client: TestClient) -> None:
    for url in ("/api/v1/papers", f"/api/v1/papers/{HERDING}", "/papers"):
        for answer in (client.post(url), client.delete(url)):
            assert answer.status_code == 405
            assert answer.headers["allow"] == "GET, HEAD", url


@pytest.mark.parametrize(
    "url", ["/", "/api/v1/papers", f"/api/v1/papers/{HERDING}", f"/campaigns/{ISOLATED}"]
)
def test_head_is_answered_wherever_get_is(client: TestClient, url: str) -> None:
    """Uptime checks and `curl -I` ask HEAD: the GET's status and headers, no body."""
    got, head = client.get(url), client.head(url)
    assert head.status_code == got.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == got.headers["content-length"]
    assert client.head("/api/v1/papers/p-ffff").status_code == 404


@pytest.mark.postgres
def test_postgresql_serves_what_sqlite_serves(client: TestClient, pg_url: str) -> None:
    store = EventStore.from_url(pg_url)
    store.append(serve_events())
    caught_up(store)
    urls = [
        "/api/v1/papers?decision=undecided",
        f"/api/v1/papers/{HERDING}",
        "/api/v1/search?q=herding+exemplars",
        f"/api/v1/campaigns/{ARCHIVE}",
        f"/api/v1/runs/run-{ISOLATED}-0",
    ]
    try:
        with TestClient(create_app(store)) as on_postgres:
            for url in urls:
                answer = on_postgres.get(url)
                assert answer.status_code == 200, answer.text
                assert answer.json() == client.get(url).json(), url
    finally:
        store.engine.dispose()
