"""Prometheus rules and queries: the compose config and the rules pass promtool,
every rule's unit tests (compose/prometheus/tests/) pass `promtool test rules`, and every
PromQL expression of the rules and of Grafana's dashboards returns data from a real
Prometheus scraping a real exporter and a real prefork worker while a small campaign runs.

An alert's expression returns data only while it fires, and a healthy campaign fires
none but the dead-letter alert this test provokes. So the expressions are asked with each
comparison made a `bool` one (`x > 0` becomes `x > bool 0`): the answer is then the
condition's value, 0 or 1, for every series the rule watches, and a non-empty answer
shows that every series it reads exists in a real scrape. Whether each alert fires when
it should is what the promtool unit tests show.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from events import Event, EventStore
from events.ids import derived_id
from events.payloads import RunFinished, RunStarted
from events.payloads.model import ModelCalled, ModelFailed, ModelResponded, Price, Usage
from tests.needs import missing
from tests.ports import free_port
from workers.app import make_celery
from workers.bus.base import RECORD_TASK, publish
from workers.bus.celery import CeleryBus

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS_DIR = ROOT / "compose" / "prometheus"
RULES_DIR = PROMETHEUS_DIR / "rules"
RULE_TESTS_DIR = PROMETHEUS_DIR / "tests"
DASHBOARDS_DIR = ROOT / "grafana" / "dashboards"
DATASOURCES_DIR = ROOT / "grafana" / "provisioning" / "datasources"
LABRXIV = Path(sys.executable).with_name("labrxiv")
DEADLINE_S = 220
"""The real campaign's test (12 s on an idle machine), all its waits together: under the
suite's pytest-timeout (300 s), so a hang fails with `Processes.diagnose`'s report of it
rather than the timeout's stack of the test's own sleep (a CI run's only clue)."""
NO_DATA_YET: dict[str, str] = {}
"""Worker counters with no series in a healthy run, and why (none: a worker exports 0 for
the retry and redelivery series of every task it runs, `workers.metrics.known_task`). A
dashboard expression that returns no data is excused only when it reads one of these,
and each must have no data: once one has, the test fails until it leaves the set."""
GRAFANA_WINDOWS = {"$__rate_interval": "30s", "$__interval": "30s", "$__range": "5m"}
"""Grafana's window variables, as a test a minute or two long can answer them (1s scrapes)."""


def need(tool: str) -> str:
    """The path of `tool` (Debian's prometheus package); fails under CI, skips elsewhere."""
    path = shutil.which(tool)
    if path is None:
        missing(f"{tool} is missing: install Debian's prometheus package (.ci/run does)")
    return path


def promtool(*args: str) -> str:
    result = subprocess.run(
        [need("promtool"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


def rules_files() -> list[Path]:
    files = sorted(RULES_DIR.glob("*.yml"))
    assert files, "no rules file"
    return files


def local_config(config: dict[str, Any]) -> dict[str, Any]:
    """The compose config with its rules' container path (/etc/prometheus/rules/) made
    this repository's."""
    local = dict(config)
    local["rule_files"] = [
        str(RULES_DIR / pattern.rsplit("/", 1)[1]) for pattern in config["rule_files"]
    ]
    return local


def compose_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    return config


# -- promtool -----------------------------------------------------------------------------


def test_compose_config_and_its_rules_pass_promtool_check_config(tmp_path: Path) -> None:
    file = tmp_path / "prometheus.yml"
    file.write_text(yaml.safe_dump(local_config(compose_config())))
    output = promtool("check", "config", str(file))
    assert "SUCCESS" in output
    assert f"{len(rules_files())} rule files found" in output, output


def test_rules_pass_promtool_check_rules() -> None:
    output = promtool("check", "rules", *map(str, rules_files()))
    assert output.count("SUCCESS") == len(rules_files()), output


def test_every_rule_has_unit_tests_and_they_pass() -> None:
    tests = sorted(RULE_TESTS_DIR.glob("*.yml"))
    assert tests, "no rule tests"
    tested_files: set[Path] = set()
    alerts_tested: set[str] = set()
    exprs_tested = ""
    for file in tests:
        spec = yaml.safe_load(file.read_text())
        tested_files.update((file.parent / name).resolve() for name in spec["rule_files"])
        for case in spec["tests"]:
            for check in case.get("alert_rule_test", []):
                # a firing case and a quiet one for each alert
                alerts_tested.add(f"{check['alertname']}:{bool(check['exp_alerts'])}")
            exprs_tested += "".join(f" {c['expr']}" for c in case.get("promql_expr_test", []))
    assert tested_files == {file.resolve() for file in rules_files()}
    for rule in all_rules():
        if "alert" in rule:
            for fires in (True, False):
                assert f"{rule['alert']}:{fires}" in alerts_tested, (rule["alert"], fires)
        else:
            assert re.search(rf"(^|\W){re.escape(rule['record'])}($|\W)", exprs_tested), rule
    output = promtool("test", "rules", *map(str, tests))
    assert output.count("SUCCESS") == len(tests), output


# -- the expressions ----------------------------------------------------------------------


def all_rules() -> list[dict[str, Any]]:
    return [
        rule
        for file in rules_files()
        for group in yaml.safe_load(file.read_text())["groups"]
        for rule in group["rules"]
    ]


def prometheus_uids() -> set[str]:
    """The uids of the Prometheus data sources Grafana is provisioned with."""
    return {
        str(source.get("uid"))
        for file in sorted(DATASOURCES_DIR.glob("*.yaml"))
        for source in (yaml.safe_load(file.read_text()) or {}).get("datasources", [])
        if source.get("type") == "prometheus"
    }


def is_prometheus(datasource: Any, uids: set[str]) -> bool:
    if isinstance(datasource, dict):
        return datasource.get("type") == "prometheus" or datasource.get("uid") in uids
    return isinstance(datasource, str) and ("prom" in datasource.lower() or datasource in uids)


def dashboard_exprs() -> dict[str, str]:
    """The PromQL of every target whose data source (its own, else its panel's) is
    Prometheus, in grafana/dashboards/*.json, named `file:panel title`."""
    uids = prometheus_uids()
    found: dict[str, str] = {}

    def walk(node: Any, file: str, inherited: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, file, inherited)
        elif isinstance(node, dict):
            datasource = node.get("datasource", inherited)
            for index, target in enumerate(node.get("targets") or []):
                source = target.get("datasource", datasource)
                if target.get("expr") and is_prometheus(source, uids):
                    found[f"{file}:{node.get('title', '?')}#{index}"] = target["expr"]
            for key, value in node.items():
                if key != "targets":
                    walk(value, file, datasource)

    for file in sorted(DASHBOARDS_DIR.glob("*.json")):
        walk(json.loads(file.read_text()), file.name, None)
    return found


def askable(expr: str) -> str:
    """`expr` with Grafana's variables given values and comparisons made `bool`."""
    for name, window in GRAFANA_WINDOWS.items():
        expr = expr.replace(name, window).replace("${" + name[1:] + "}", window)
    # A dashboard variable in a label matcher matches anything.
    expr = re.sub(r'(\w+)\s*=~?\s*"\$\{?\w+(?::\w+)?\}?"', r'\1=~".*"', expr)
    expr = re.sub(r"\$\{?\w+(?::\w+)?\}?", ".*", expr)
    protected = r'(\{[^{}]*\}|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')'
    parts = re.split(protected, expr)
    for index in range(0, len(parts), 2):  # outside label matchers and strings
        parts[index] = re.sub(r"(==|!=|>=|<=|>|<)(?!\s*bool\b)", r"\1 bool", parts[index])
    return "".join(parts)


def test_askable_makes_comparisons_bool_and_fills_grafana_variables() -> None:
    assert askable('up{job=~"a>b"} == 0') == 'up{job=~"a>b"} == bool 0'
    assert askable("a > 0 and on (x) b <= 1") == "a > bool 0 and on (x) b <= bool 1"
    assert askable("a > bool 0") == "a > bool 0"
    rate = 'rate(x{lab="$lab"}[$__rate_interval])'
    assert askable(rate) == 'rate(x{lab=~".*"}[30s])'


# -- a real Prometheus --------------------------------------------------------------------


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def wait_for(
    what: str, ready: Callable[[], Any], deadline: float, diagnose: Callable[[], str]
) -> Any:
    """The first true value of `ready()`, polled until `deadline` (connection errors
    count as not ready); past it, fails with what `diagnose()` says. Prints how long it
    waited (shown with a failure: where a slow run's time went)."""
    began = time.monotonic()
    while True:
        try:
            value = ready()
        except OSError:  # refused, reset, or a read that timed out (URLError is one too)
            value = None
        if value:
            print(f"waited {time.monotonic() - began:.1f}s for {what}")
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}\n{diagnose()}")
        time.sleep(0.5)


class Processes:
    """Started processes, each in its own session, ended (with their children) at exit."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder = env, folder
        self.started: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = self.folder / f"{name}.log"
        self.logs.append(log)
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started.append(process)
        return process

    def diagnose(self, pg_url: str) -> str:
        """What the log's database sessions are doing, then every labrxiv process's threads
        (SIGABRT with PYTHONFAULTHANDLER set: each prints its stacks, pool children too) and
        the tail of each log: a hung step says where it hangs."""
        parts = [_sessions(pg_url)]
        for process in self.started:
            if process.poll() is None and process.args[0] == str(LABRXIV):
                with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                    os.killpg(process.pid, signal.SIGABRT)
        time.sleep(3)
        for log in self.logs:
            if log.exists():  # lines cut short: the stacks end with a list of 100 modules
                lines = [line[:300] for line in log.read_text(errors="replace").splitlines()]
                parts.append(f"--- {log.name}\n" + "\n".join(lines)[-20000:])
        return "\n".join(parts)

    def stop(self) -> None:
        for process in reversed(self.started):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)


def _sessions(pg_url: str) -> str:
    """The test database's sessions: state, what each waits on, its query."""
    url = pg_url.replace("postgresql+psycopg://", "postgresql://")
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            rows = conn.execute(
                "SELECT pid, state, wait_event_type, wait_event, xact_start, left(query, 200) "
                "FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            ).fetchall()
            locks = conn.execute(
                "SELECT pid, locktype, relation::regclass::text, mode, granted FROM pg_locks "
                "WHERE database = (SELECT oid FROM pg_database WHERE datname = "
                "current_database()) AND (NOT granted OR locktype = 'advisory')"
            ).fetchall()
    except psycopg.Error as exc:
        return f"--- database sessions: {exc}"
    return "--- database sessions\n" + "\n".join(map(str, rows + locks))


@pytest.fixture
def processes(tmp_path: Path, pg_url: str, redis_url: str) -> Iterator[Processes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "PROMETHEUS_"))}
    env |= {
        "LABRXIV_REDIS_URL": redis_url,
        "LABRXIV_DATABASE_URL": pg_url,
        "LABRXIV_DATA_DIR": str(tmp_path / "data"),
        "PYTHONFAULTHANDLER": "1",  # SIGABRT prints every thread's stack (`diagnose`)
    }
    started = Processes(env, tmp_path)
    try:
        yield started
    finally:
        started.stop()


def scrape_config(exporter: int, worker: int, reactor: int, prometheus: int) -> dict[str, Any]:
    """The compose config, its jobs pointed at this test's ports: 1s scrapes and rule
    evaluations, the repository's rules."""
    config = local_config(compose_config())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {
        "labrxiv-exporter",
        "labrxiv-workers",
        "labrxiv-reactor",
        "prometheus",
    }, set(jobs)
    jobs["labrxiv-exporter"]["static_configs"] = [{"targets": [f"127.0.0.1:{exporter}"]}]
    workers = jobs["labrxiv-workers"]
    del workers["dns_sd_configs"], workers["relabel_configs"]  # compose's DNS
    target = {"targets": [f"127.0.0.1:{worker}"], "labels": {"service": "steps"}}
    workers["static_configs"] = [target]
    reacting = jobs["labrxiv-reactor"]
    del reacting["dns_sd_configs"]
    reacting["static_configs"] = [{"targets": [f"127.0.0.1:{reactor}"]}]
    jobs["prometheus"]["static_configs"] = [{"targets": [f"127.0.0.1:{prometheus}"]}]
    return config


PRICE = Price(input_per_mtok=1.0, cached_input_per_mtok=0.5, output_per_mtok=1.0, source="test")


def model_call_run(start: datetime) -> list[Event]:
    """A run with model calls (one priced, one failed, one with no usage reported): the
    offline labs call no model, and the model rules and panels read these calls."""
    stream, lab = "run-prometheus-model", "lab-prometheus-model"
    payloads = [
        RunStarted(task="simulated-task", lab=lab, policy="simulated"),
        ModelCalled(call_id="c1", request_id="r1", attempt=1, model="m", provider="x", messages=1),
        ModelResponded(
            call_id="c1",
            model="m",
            usage=Usage(input_tokens=1000, output_tokens=500),
            latency_s=0.1,
            price=PRICE,
            cost_usd=0.0015,
            cost_known=True,
        ),
        ModelCalled(call_id="c2", request_id="r2", attempt=1, model="m", provider="x", messages=1),
        ModelFailed(call_id="c2", error="server_error", latency_s=0.1, will_retry=False),
        ModelCalled(call_id="c3", request_id="r3", attempt=1, model="m", provider="x", messages=1),
        ModelResponded(
            call_id="c3",
            model="m",
            usage=None,
            latency_s=0.1,
            price=PRICE,
            cost_usd=None,
            cost_known=False,
        ),
        RunFinished(reason="done", detail="model calls for the Prometheus test"),
    ]
    return [
        Event(
            id=derived_id(f"{stream}:{version}", start + timedelta(seconds=version)),
            stream=stream,
            version=version,
            occurred_at=start + timedelta(seconds=version),
            actor=lab,
            payload=payload,
        )
        for version, payload in enumerate(payloads)
    ]


@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.slow
def test_every_expression_returns_data_from_a_real_campaign(
    processes: Processes, tmp_path: Path, pg_url: str, redis_url: str
) -> None:
    prometheus_bin = need("prometheus")
    deadline = time.monotonic() + DEADLINE_S
    ports = {
        "exporter": free_port(),
        "worker": free_port(),
        "reactor": free_port(),
        "prometheus": free_port(),
    }
    EventStore.from_url(pg_url).engine.dispose()  # the log's tables, before the children race

    processes.start(
        "worker",
        [str(LABRXIV), "worker", "-Q", "events,steps", "-P", "prefork", "-c", "2"]
        + ["--metrics-port", str(ports["worker"]), "--metrics-addr", "127.0.0.1"]
        + ["--metrics-dir", str(tmp_path / "metrics")],
    )
    processes.start("reactor", [str(LABRXIV), "reactor", "--metrics-port", str(ports["reactor"])])
    processes.start(
        "exporter",
        [str(LABRXIV), "exporter", "--port", str(ports["exporter"]), "--addr", "127.0.0.1"],
    )
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump(scrape_config(**ports)))
    api = f"http://127.0.0.1:{ports['prometheus']}"
    processes.start(
        "prometheus",
        [prometheus_bin, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}"]
        + [f"--web.listen-address=127.0.0.1:{ports['prometheus']}"],
    )

    def diagnose() -> str:
        return processes.diagnose(pg_url)

    def ready() -> bool:
        with urllib.request.urlopen(f"{api}/-/ready", timeout=10) as response:
            return bool(response.status == 200)

    wait_for("Prometheus to be ready", ready, deadline, diagnose)

    def query(expr: str) -> list[dict[str, Any]]:
        url = f"{api}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            answer = get_json(url)
        except urllib.error.HTTPError as exc:  # a bad expression: 400 with the reason
            pytest.fail(f"{expr}: {exc.read().decode(errors='replace')}")
        assert answer["status"] == "success", (expr, answer)
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def targets_up() -> bool:
        return len(query('up{job=~"labrxiv-.*"} == 1')) == 3

    wait_for("Prometheus to scrape the exporter and the worker", targets_up, deadline, diagnose)

    # A dead letter (a message that is not JSON) and a run with model calls, through the
    # worker's recorder, before the campaign: its last catch-up projects them.
    store = EventStore.from_url(pg_url)
    bus = CeleryBus(make_celery(redis_url, visibility_timeout=60))
    try:
        bus.send(RECORD_TASK, "{")
        calls = model_call_run(datetime(2026, 1, 1, tzinfo=UTC))
        publish(bus, calls)
    finally:
        bus.close()
    wait_for("the dead letter", lambda: store.dead_letters(), deadline, diagnose)
    wait_for(
        "the model calls in the log",
        lambda: len(store.read_stream(calls[0].stream)) == len(calls),
        deadline,
        diagnose,
    )
    store.engine.dispose()

    # Started as the others are, so a hang's diagnosis has its stacks and output too.
    campaign = processes.start(
        "campaign",
        [str(LABRXIV), "campaign", "--task", "continual-digits", "--labs", "2"]
        + ["--papers", "1", "--attempts", "2", "--seed", "5", "--timeout", "400"]
        + ["--campaign-tokens", "100000", "--campaign-dollars", "5"],
    )
    try:
        campaign.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pytest.fail(f"timed out waiting for the campaign\n{diagnose()}")
    assert campaign.returncode == 0, (tmp_path / "campaign.log").read_text(errors="replace")
    finished = time.time()

    # Two successful scrapes of every target after the campaign and its read models'
    # catch-up, then an evaluation of the rules after those. A scrape that failed (1s
    # scrapes time out at 1s: a busy machine's exporter can take longer) records `up` 0 and
    # none of the target's series; counted, it left a counter one sample and its rate()
    # nothing (a CI run's "no data for LabrxivModelErrorRateHigh").
    def scraped_after(moment: float) -> float | None:
        # timestamp() of a selector is its sample's time; of `up == 1`, the query's.
        up = 'timestamp(up{job=~"labrxiv-.*"}) and up{job=~"labrxiv-.*"} == 1'
        stamps = [float(s["value"][1]) for s in query(up)]
        return min(stamps) if len(stamps) == 3 and min(stamps) > moment else None

    first = wait_for(
        "a scrape after the campaign", lambda: scraped_after(finished), deadline, diagnose
    )
    wait_for("a second scrape", lambda: scraped_after(first), deadline, diagnose)
    # A scrape's samples carry its start time but are stored when it ends: a rule evaluated
    # after the second scrape started may not see them (a CI run's recorded error ratio had
    # no sample). Now that its `up` is seen, they are stored.
    seen = time.time()

    def evaluated_after() -> bool:
        stamps = query("timestamp(service:labrxiv_workers_up:sum)")
        return bool(stamps) and float(stamps[0]["value"][1]) > seen

    wait_for("the rules evaluated after the scrapes", evaluated_after, deadline, diagnose)

    exprs = {f"rule {r.get('alert') or r['record']}": r["expr"] for r in all_rules()}
    exprs |= {f"dashboard {name}": expr for name, expr in dashboard_exprs().items()}
    for metric in NO_DATA_YET:
        assert not query(metric), f"{metric} has data now: remove it from NO_DATA_YET"
    empty = {name: askable(expr) for name, expr in exprs.items() if not query(askable(expr))}
    excused = {
        name
        for name, expr in empty.items()
        if name.startswith("dashboard ")
        and any(re.search(rf"\b{metric}\b", expr) for metric in NO_DATA_YET)
    }
    unexcused = {name: expr for name, expr in empty.items() if name not in excused}
    assert not unexcused, f"no data for {unexcused}"

    rules = get_json(f"{api}/api/v1/rules")["data"]["groups"]
    loaded = [rule for group in rules for rule in group["rules"]]
    assert len(loaded) == len(all_rules())
    broken = [(r["name"], r.get("lastError")) for r in loaded if r["health"] != "ok"]
    assert not broken, broken

    def dead_letter_alert() -> bool:
        firing = query('ALERTS{alertname="LabrxivDeadLetters",alertstate="firing"}')
        return any(alert["metric"].get("reason") == "not_json" for alert in firing)

    wait_for("the dead-letter alert to fire", dead_letter_alert, deadline, diagnose)
