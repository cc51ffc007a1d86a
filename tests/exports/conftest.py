"""The log the export tests share (`export_logged`), made once a session."""

from collections.abc import Iterator

import pytest
from export_logged import KEY, MODEL, Logged, cycle

from events.payloads import LlmConfig
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from tests.llm.fake_server import FakeServer
from workers.lab.campaign import CampaignPlan, start_campaign


@pytest.fixture(scope="session")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Logged]:
    folder = tmp_path_factory.mktemp("exports")
    answers = cycle()
    with FakeServer(models=(MODEL,)) as server, pytest.MonkeyPatch.context() as patch:
        server.queue(*answers)
        patch.setenv("OPENAI_API_KEY", KEY)
        patch.setenv("OPENAI_BASE_URL", server.url)
        patch.setenv("LABRXIV_LLM_TIMEOUT", "10")
        system = open_embedded(load_settings(data_dir=folder), threads=2)
        try:
            common = {"task": "continual-digits", "labs": 1, "papers": 1, "mode": "isolated"}
            llm = CampaignPlan(
                **common,  # type: ignore[arg-type]
                seed=1,
                attempts=3,
                policy="llm",
                llm=LlmConfig(model=MODEL, temperature=0.0),
            )
            llm_campaign, (llm_run,) = start_campaign(system.bus, llm)
            system.settle()
            search = CampaignPlan(**common, seed=2, attempts=2)  # type: ignore[arg-type]
            search_campaign, _ = start_campaign(system.bus, search)
            system.settle()
            assert not system.bus.failures
        finally:
            system.close()
        received = server.completions()
    yield Logged(folder, llm_campaign, llm_run, search_campaign, received, answers)
