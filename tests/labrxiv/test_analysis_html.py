"""`labrxiv analyze TARGET --html FILE`: one self-contained page with the trajectory, the
findings linked to their events' steps, and the plots; a log's text can never run in it.

The page is opened as a person would open it, in a real browser: headless Chromium
(Debian's `chromium`, which `.ci/run` installs), reading the DOM after the page's script
ran and a screenshot of it.
"""

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_support import ISOLATED, T0, TASK, Cli
from PIL import Image
from typer.testing import CliRunner

from analysis.detectors import detect
from events import Event, EventStore
from events.ids import derived_id
from events.payloads import Payload, RunFinished, RunStarted, ToolInvoked, ToolReturned
from labrxiv.cli import app
from runstate.trajectory import steps
from tests.analysis.lab_script import CRASH, EVALUATE, GOOD, patch, python
from tests.analysis.labelled import labelled_runs
from tests.analysis.scenarios import PLAN, Scenario, experiment, good_paper
from tests.llm.fake_server import FakeServer, Received, Scripted, completion, usage
from tests.needs import missing

SCRIPT = "</script><script>document.title='XSS1'</script>"
IMAGE = "<img src=x onerror=\"document.title='XSS2'\">"
HOSTILE = SCRIPT + IMAGE
"""Tool output a lab could print: markup that would run if the page ever treated it as HTML
(each part retitles the page, which the DOM would show)."""
MISSING = (
    "headless Chromium is needed to open the analysis page: install Debian's chromium "
    "package (apt-get install -y chromium; .ci/run installs it when missing)"
)
DATA = re.compile(r'<script type="application/json" id="analysis-data">(.*?)</script>', re.S)


def embedded(page: str) -> dict[str, object]:
    """The data the page carries, read back as its script reads it."""
    found = DATA.search(page)
    assert found is not None, "the page has no analysis-data element"
    return dict(json.loads(found.group(1)))


# -- without a browser ---------------------------------------------------------------


def _hostile_run(store: EventStore) -> str:
    stream = f"run-{ISOLATED}-9"
    payloads: list[Payload] = [
        RunStarted(task=TASK, lab="lab-9", policy="search"),
        ToolInvoked(call_id="x1", tool="bash", args={"command": f"printf '{HOSTILE}'"}),
        ToolReturned(call_id="x1", tool="bash", exit_code=0, duration_s=0.5, preview=HOSTILE),
        RunFinished(reason="done", detail=HOSTILE),
    ]
    store.append(
        [
            Event(
                id=derived_id(f"{stream}:{version}", T0 + timedelta(seconds=version)),
                stream=stream,
                version=version,
                occurred_at=T0 + timedelta(seconds=version),
                correlation_id=ISOLATED,
                actor="lab-9",
                payload=payload,
            )
            for version, payload in enumerate(payloads)
        ]
    )
    return stream


def test_log_text_cannot_break_out_of_the_page(
    two_campaigns: EventStore, cli: Cli, workdir: Path
) -> None:
    run = _hostile_run(two_campaigns)
    assert cli("projector", "--once").code == 0  # the runs read model names the run
    said = cli("analyze", run, "--html", "page.html")
    assert said.code == 0, said.out
    assert "wrote page.html" in said.text
    page = (workdir / "page.html").read_text()
    # The page's own two scripts close their elements; nothing from the log does.
    assert page.count("</script>") == 2 and page.count("<script") == 2
    assert "<img" not in page and SCRIPT not in page and 'onerror="document' not in page
    # ...yet the text is all there, unchanged, for the page to show as text.
    data = embedded(page)
    (step,) = [s for s in data["trajectories"][run] if s["actions"]]  # type: ignore[index]
    assert step["actions"][0]["result"] == HOSTILE
    # Only the page's own script may run: the policy names it by its hash.
    script = page[page.rindex("<script>") + len("<script>") : page.rindex("</script>")]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in page and "default-src 'none'" in page


def test_out_writes_the_page_beside_the_json(
    two_campaigns: EventStore, cli: Cli, workdir: Path
) -> None:
    said = cli("analyze", ISOLATED, "--out", "o")
    assert said.code == 0, said.out
    written = json.loads((workdir / "o" / "analysis.json").read_text())
    page = (workdir / "o" / "analysis.html").read_text()
    assert embedded(page)["analysis"] == written
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page and "<link" not in page and " src=" not in page


def test_a_page_that_cannot_be_written_is_one_line(
    two_campaigns: EventStore, cli: Cli, workdir: Path
) -> None:
    (workdir / "a-file").write_text("")
    said = cli("analyze", ISOLATED, "--html", "a-file/page.html")
    assert said.code == 1 and "cannot write a-file/page.html" in said.text, said.out
    assert "Traceback" not in said.out


# -- in Chromium ---------------------------------------------------------------------


def chromium() -> str:
    """The browser, or the test stops here saying what to install: a failure in CI, where
    `.ci/run` installs it, a skip on a newcomer's machine."""
    found = shutil.which("chromium")
    if found is not None:
        return found
    missing(MISSING)


@dataclass
class Dom(HTMLParser):
    """What the test reads of the DOM Chromium dumped: elements by id, step rows, findings,
    links to steps, and the text shown."""

    ids: dict[str, dict[str, str]] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    hidden: set[str] = field(default_factory=set)
    """Step rows the filters hide."""
    findings: list[dict[str, str]] = field(default_factory=list)
    links: list[dict[str, str]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    title: str = ""
    _in: str = ""
    """The element whose text is being read, when it is one the page does not show."""

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.tags[tag] = self.tags.get(tag, 0) + 1
        classes = found.get("class", "").split()
        if "id" in found:
            self.ids[found["id"]] = found | {"tag": tag}
        if tag == "tr" and "step" in classes:
            self.steps.append(found["id"])
            if "hidden" in found:
                self.hidden.add(found["id"])
        if tag == "li" and "finding" in classes:
            self.findings.append(found)
        if tag == "a" and "event-link" in classes:
            self.links.append(found)
        self._in = tag if tag in ("title", "script", "style") else ""

    def handle_endtag(self, tag: str) -> None:
        self._in = ""

    def handle_data(self, data: str) -> None:
        if self._in == "title":
            self.title += data
        elif not self._in:  # what the page shows: not its scripts' and styles' source
            self.text.append(data)


@dataclass(frozen=True)
class Opened:
    run: str
    events: list[Event]
    dom: Dom
    filtered: Dom
    """The page opened with `?tool=evaluate`."""
    screenshot: Path


def inspector(cited: str) -> Callable[[Received], Scripted]:
    """An inspector model that fails the run at once, citing `cited`, its summary hostile."""

    def answer(received: Received) -> Scripted:
        evidence = [{"event": cited, "why": "x"}]
        verdict = {"verdict": "FAIL", "summary": HOSTILE, "evidence": evidence}
        return completion(tool_calls=[("verdict", json.dumps(verdict))], usage=usage(50, 10))

    return answer


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
    """An `llm` run through the real system (answered by the local fake model server) that
    prints hostile markup and ignores a crashed evaluation (a silent failure), its page
    written by the CLI and opened in headless Chromium."""
    browser = chromium()
    tmp = Path(tmp_path_factory.mktemp("html"))
    scenario = Scenario(
        "hostile_and_silent",
        frozenset({"silent_failure"}),
        [PLAN, *experiment(GOOD), python(f"print({HOSTILE!r})"), patch(CRASH), EVALUATE]
        + good_paper(),
        "prints markup, then a crash is ignored",
    )
    with labelled_runs([scenario], tmp) as (made,):
        assert made.problem is None, made.problem
        events = made.events
    run, page = events[0].stream, tmp / "page.html"
    cited = str(events[-1].id)  # the inspector's evidence: the run's last event
    with (
        pytest.MonkeyPatch.context() as env,
        FakeServer(default=inspector(cited), models=("judge",)) as server,
    ):
        for name in [n for n in os.environ if n.startswith("LABRXIV_")]:
            env.delenv(name)
        said = CliRunner().invoke(
            app,
            ["analyze", run, "--html", str(page), "--inspector", "judge"]
            + ["--inspector-base-url", server.url],
            env={
                "LABRXIV_DATA_DIR": str(tmp / "data"),
                "COLUMNS": "200",
                "OPENAI_API_KEY": "sk-html-inspector-0123456789",
            },
        )
    assert said.exit_code == 0, said.output
    common = [
        browser,
        "--headless=new",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        f"--user-data-dir={tmp / 'profile'}",
        # Virtual time: the page is read once its script has run, with no wall-clock wait.
        "--virtual-time-budget=5000",
    ]
    url = page.as_uri()
    doms = []
    for address in (url, url + "?tool=evaluate"):
        dumped = subprocess.run(
            [*common, "--dump-dom", address],
            capture_output=True,
            text=True,
            timeout=180,
            check=True,
        )
        doms.append(Dom())
        doms[-1].feed(dumped.stdout)
    shot = tmp / "page.png"
    subprocess.run(
        [*common, "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1280,2000", url],
        capture_output=True,
        timeout=180,
        check=True,
    )
    yield Opened(run, events, doms[0], doms[1], shot)


@pytest.mark.slow
def test_the_trajectory_renders_every_step(opened: Opened) -> None:
    replayed = [item for item, _ in steps(opened.events)]
    assert opened.dom.steps == [f"r0-step-{s.number}" for s in replayed]
    shown = " ".join(opened.dom.text)
    for tool in ("write_file", "evaluate", "apply_patch", "submit_paper"):
        assert tool in shown
    assert f"showing {len(replayed)} of {len(replayed)} steps" in shown
    assert opened.dom.title == f"labrxiv analysis: {opened.run}"
    assert not opened.dom.hidden


@pytest.mark.slow
def test_the_tool_filter_hides_the_other_steps(opened: Opened) -> None:
    replayed = [item for item, _ in steps(opened.events)]
    graded = {f"r0-step-{s.number}" for s in replayed if "evaluate" in [a.tool for a in s.actions]}
    assert 0 < len(graded) < len(replayed)
    assert set(opened.filtered.steps) - opened.filtered.hidden == graded
    assert f"showing {len(graded)} of {len(replayed)} steps" in " ".join(opened.filtered.text)


@pytest.mark.slow
def test_a_finding_renders_and_links_to_the_step_holding_its_event(opened: Opened) -> None:
    found = [f for f in detect(opened.events) if f.mode == "silent_failure"]
    assert found, "the run was made to show a silent failure"
    assert any(f["data-mode"] == "silent_failure" for f in opened.dom.findings)
    assert found[0].summary in " ".join(opened.dom.text)
    holding = {str(e): s.number for s, _ in steps(opened.events) for e in s.events}
    assert opened.dom.links, "no finding links to its events"
    for link in opened.dom.links:
        target = link["href"].removeprefix("#")
        assert opened.dom.ids[target]["tag"] == "tr", f"{target} is not a step"
        assert target == f"r0-step-{holding[link['data-event']]}"


@pytest.mark.slow
def test_the_inspectors_verdict_renders_with_its_evidence_linked(opened: Opened) -> None:
    shown = " ".join(" ".join(opened.dom.text).split())
    assert "LLM inspector: FAIL" in shown
    cited = str(opened.events[-1].id)
    holding = {str(e): s.number for s, _ in steps(opened.events) for e in s.events}
    (link,) = [link for link in opened.dom.links if link["data-event"] == cited]
    assert link["href"] == f"#r0-step-{holding[cited]}"


@pytest.mark.slow
def test_hostile_output_is_shown_as_text(opened: Opened) -> None:
    assert HOSTILE in "".join(opened.dom.text)
    assert opened.dom.tags.get("img", 0) == 0
    assert opened.dom.tags["script"] == 2  # the data and the page's own script, no other
    assert "XSS" not in opened.dom.title


@pytest.mark.slow
def test_the_screenshot_is_not_blank(opened: Opened) -> None:
    with Image.open(opened.screenshot) as image:
        pixels = image.convert("RGB")
        colors = pixels.getcolors(maxcolors=1 << 20) or []
        inked = sum(n for n, c in colors if c != (255, 255, 255))
        assert pixels.size == (1280, 2000)
    # Text, tables, plots and the trajectory: many colours and a good share not white.
    assert len(colors) > 50, f"{len(colors)} colours"
    assert inked / (1280 * 2000) > 0.05, f"{inked / (1280 * 2000):.1%} inked"
