"""The compose stack (compose/docker-compose.yml) runs labrxiv as the code is today.

Every service's command is a real `labrxiv` command with real options, every variable
it sets is one the settings read, every file it mounts exists, the steps workers can be
scaled, Prometheus scrapes what the services serve and Grafana loads what is mounted.
The file is validated against the Compose specification without a Docker daemon by
Debian's `docker-compose` (v1: `config` needs no daemon; .ci/run installs it), and by
`docker compose` where the plugin is installed.
"""

import fnmatch
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from typer.testing import CliRunner

from labrxiv.cli import app
from labrxiv.settings import Settings, load_settings
from tests.needs import missing

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_DIR = ROOT / "compose"
COMPOSE_FILE = COMPOSE_DIR / "docker-compose.yml"
COMPOSE_TEXT = COMPOSE_FILE.read_text()
COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_TEXT)
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
LABRXIV_SERVICES = sorted(name for name, spec in SERVICES.items() if "build" in spec)
DOCKERFILE = (ROOT / "Dockerfile").read_text()
DEPLOY_DOC = (ROOT / "docs" / "deploy.md").read_text()


INTERPRETER_VARIABLES = {
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PIP_NO_CACHE_DIR",
    "PIP_DISABLE_PIP_VERSION_CHECK",
}
"""Variables the image sets for Python and pip themselves, not for labrxiv."""

THIRD_PARTY_PREFIXES = {"redis": ("REDISCLI_",), "postgres": ("POSTGRES_",), "grafana": ("GF_",)}
"""Variables each third-party image reads by its documented prefix; any other variable
set on such a service must be read by a file of this repository mounted into it."""


def interpolate(value: str) -> str:
    """`value` as compose sees it with no variable set: `${X:-d}` is `d`, `${X}` empty."""
    return re.sub(r"\$\{(\w+)(?::?-([^}]*))?\}", lambda m: m.group(2) or "", value)


def argv(service: str) -> list[str]:
    spec = SERVICES[service]
    entrypoint = spec.get("entrypoint") or []
    return [interpolate(str(part)) for part in [*entrypoint, *spec.get("command", [])]]


WORKERS = [service for service in LABRXIV_SERVICES if argv(service)[1:2] == ["worker"]]


def cli_command(words: list[str]) -> tuple[list[str], Any, list[str]]:
    """The path of subcommand names, the click command they lead to (None if missing),
    and the arguments left for it."""
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    rest = list(words)
    while rest and hasattr(command, "commands") and not rest[0].startswith("-"):
        name = rest.pop(0)
        path.append(name)
        command = command.commands.get(name)
        if command is None:
            return path, None, rest
    return path, command, rest


def bind_mounts(service: str) -> Iterator[tuple[Path, str]]:
    """(folder or file of this repository, path in the container) of each bind mount."""
    for volume in SERVICES[service].get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                yield (COMPOSE_DIR / volume["source"]).resolve(), volume["target"]
            continue
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/")):
            yield (COMPOSE_DIR / source).resolve(), target


def mount_target(service: str, source: Path) -> str:
    targets = [target for path, target in bind_mounts(service) if path == source.resolve()]
    assert targets, f"{service} does not mount {source.relative_to(ROOT)}"
    return targets[0]


def setting_variables() -> set[str]:
    """The environment variables `Settings` reads."""
    names = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        names.update(alias.choices if alias is not None else [f"LABRXIV_{name.upper()}"])  # type: ignore[union-attr]
    return names


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for block in re.findall(r"^ENV ((?:.*\\\n)*.*)$", DOCKERFILE, re.MULTILINE):
        env.update(re.findall(r"(\w+)=(\S+)", block))
    return env


@pytest.mark.parametrize("service", LABRXIV_SERVICES)
def test_every_command_is_a_real_cli_command(service: str) -> None:
    words = argv(service)
    assert words[0] == "labrxiv", f"{service} runs {words[0]}, not labrxiv"
    path, command, rest = cli_command(words[1:])
    assert command is not None, f"{service}: `labrxiv {' '.join(path)}` does not exist"
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, f"labrxiv {' '.join(path)} --help: {result.output}"

    try:
        command.make_context(" ".join(path), rest)  # parses and checks, runs nothing
    except Exception as exc:  # click's UsageError and BadParameter, from typer's click
        pytest.fail(f"{service}: labrxiv {' '.join(path)} {' '.join(rest)}: {exc}")


@pytest.mark.parametrize("service", WORKERS)
def test_worker_metrics_are_counted_in_a_folder_of_the_containers_own(service: str) -> None:
    # The default folder is under the data dir, which the steps containers share, and is
    # named by the worker's pid, the same in every container: they would empty each
    # other's counts.
    words = argv(service)
    assert "--metrics-port" in words, f"{service}: Prometheus cannot scrape it"
    assert "--metrics-dir" in words, f"{service}: --metrics-port without --metrics-dir"
    folder = Path(words[words.index("--metrics-dir") + 1])
    data_dir = Path(dockerfile_env()["LABRXIV_DATA_DIR"])
    assert data_dir not in [folder, *folder.parents], f"{service}: {folder} is in {data_dir}"


@pytest.mark.parametrize("service", LABRXIV_SERVICES)
def test_labrxiv_variables_are_settings_with_valid_values(
    service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = setting_variables()
    env = {**dockerfile_env(), **SERVICES[service].get("environment", {})}
    unknown = sorted(set(env) - known - INTERPRETER_VARIABLES)
    assert not unknown, f"{service} sets {unknown}, which no setting reads"
    for name in os.environ:
        if name.startswith(("LABRXIV_", "OPENAI_")):
            monkeypatch.delenv(name)
    for name, value in env.items():
        if value is not None and name not in INTERPRETER_VARIABLES:  # None: from the shell
            monkeypatch.setenv(name, interpolate(str(value)))
    load_settings()  # a wrong value raises SettingsError naming the variable


@pytest.mark.parametrize("service", sorted(set(SERVICES) - set(LABRXIV_SERVICES)))
def test_third_party_variables_are_read(service: str) -> None:
    image = SERVICES[service]["image"].split(":")[0].split("/")[-1]
    prefixes = THIRD_PARTY_PREFIXES.get(image, ())
    mounted = "".join(
        file.read_text()
        for path, _ in bind_mounts(service)
        for file in ([path] if path.is_file() else sorted(path.rglob("*")))
        if file.is_file()
    )
    for name in SERVICES[service].get("environment", {}):
        if not name.startswith(prefixes):
            assert re.search(rf"\$(\{{)?{name}\b", mounted), (
                f"{service} sets {name}, which neither {image} nor a file mounted into it reads"
            )


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_mounted_file_exists_and_every_volume_is_declared(service: str) -> None:
    for path, _ in bind_mounts(service):
        assert path.exists(), f"{service} mounts {path}, which does not exist"
        assert ROOT in path.parents, f"{service} mounts {path}, outside the repository"
    for volume in SERVICES[service].get("volumes", []):
        source = volume.split(":")[0] if isinstance(volume, str) else volume.get("source", "")
        if isinstance(volume, str) and not source.startswith((".", "/")):
            assert source in COMPOSE.get("volumes", {}), f"{service}: volume {source} undeclared"
    build = SERVICES[service].get("build")
    if build:
        assert (COMPOSE_DIR / build["context"] / build["dockerfile"]).is_file()


def test_steps_workers_scale_and_may_run_the_sandbox() -> None:
    steps = SERVICES["steps"]
    assert "container_name" not in steps and "hostname" not in steps, "fixed name: no --scale"
    assert "ports" not in steps, "a fixed host port: a second steps worker could not bind it"
    # The jail needs root and namespaces (workers/sandbox/jail.py); nothing else does.
    assert steps.get("user") == "root"
    assert steps.get("privileged") is True or "SYS_ADMIN" in steps.get("cap_add", [])
    for service in set(LABRXIV_SERVICES) - {"steps"}:
        assert SERVICES[service].get("user") in (None, "labrxiv"), f"{service} runs as root"
        assert not SERVICES[service].get("privileged"), f"{service} is privileged"
    users = re.findall(r"^USER (\S+)", DOCKERFILE, re.MULTILINE)
    assert users and users[-1] not in ("root", "0"), "the image must end as a non-root user"
    # Every steps worker sees the same workspaces (docs/labs.md): a volume at the data dir.
    targets = [str(v).split(":")[1] for v in steps.get("volumes", [])]
    assert dockerfile_env()["LABRXIV_DATA_DIR"] in targets


def test_the_build_context_keeps_what_the_image_needs() -> None:
    assert re.search(r"^ARG BASE=python:3\.11-slim\n(?:#.*\n)*FROM \$\{BASE\}$", DOCKERFILE, re.M)
    assert "util-linux" in DOCKERFILE  # unshare, setpriv, pivot_root for the sandbox
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    needed = ["pyproject.toml", "requirements.lock", "README.md", "gym"]
    needed += ["gym/continual-digits/task.toml"]
    needed += ["events", "runstate", "analysis", "workers", "projections", "labrxiv"]
    for path in needed:
        assert (ROOT / path).exists(), path
        for pattern in patterns:
            plain = pattern.removeprefix("**/")
            assert not fnmatch.fnmatch(path, pattern) and not fnmatch.fnmatch(
                Path(path).name, plain
            ), f".dockerignore's {pattern} leaves {path} out of the image"


def test_prometheus_scrapes_what_the_services_serve() -> None:
    config_file = COMPOSE_DIR / "prometheus" / "prometheus.yml"
    config = yaml.safe_load(config_file.read_text())
    rules_dir = COMPOSE_DIR / "prometheus" / "rules"
    mount_target("prometheus", config_file)
    rules_target = mount_target("prometheus", rules_dir)
    rules = sorted(rules_dir.glob("*.yml"))
    assert rules, "no rules file"
    for pattern in config["rule_files"]:
        assert pattern.startswith(rules_target + "/"), f"{pattern} is outside the rules mount"
        assert any(fnmatch.fnmatch(f"{rules_target}/{r.name}", pattern) for r in rules)
    for file in rules:
        for group in yaml.safe_load(file.read_text())["groups"]:
            for rule in group["rules"]:
                assert rule["expr"] and ("alert" in rule or "record" in rule), file.name

    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    static = {
        target
        for job in jobs.values()
        for group in job.get("static_configs", [])
        for target in group["targets"]
    }
    dns = {
        (name, sd["port"])
        for job in jobs.values()
        for sd in job.get("dns_sd_configs", [])
        for name in sd["names"]
    }
    for service in LABRXIV_SERVICES:
        words = argv(service)
        if "--port" in words and words[1] == "exporter":
            assert f"{service}:{words[words.index('--port') + 1]}" in static
        if "--metrics-port" in words:
            assert (service, int(words[words.index("--metrics-port") + 1])) in dns, service
    for name, _ in dns:
        assert name in SERVICES, f"Prometheus looks up {name}, which is no service"


def test_prometheus_config_passes_promtool(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        missing("promtool is missing: install Debian's prometheus package (.ci/run does)")
    config = yaml.safe_load((COMPOSE_DIR / "prometheus" / "prometheus.yml").read_text())
    config["rule_files"] = [str(COMPOSE_DIR / "prometheus" / "rules" / "*.yml")]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [promtool, "check", "config", str(tmp_path / "prometheus.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_grafana_provisions_what_is_mounted() -> None:
    provisioning = ROOT / "grafana" / "provisioning"
    dashboards = ROOT / "grafana" / "dashboards"
    assert mount_target("grafana", provisioning) == "/etc/grafana/provisioning"
    dashboards_target = mount_target("grafana", dashboards)
    providers = [
        provider
        for file in sorted((provisioning / "dashboards").glob("*.yaml"))
        for provider in yaml.safe_load(file.read_text())["providers"]
    ]
    assert [p["options"]["path"] for p in providers] == [dashboards_target]

    sources = [
        source
        for file in sorted((provisioning / "datasources").glob("*.yaml"))
        for source in yaml.safe_load(file.read_text())["datasources"]
    ]
    by_type = {source["type"]: source for source in sources}
    prometheus = by_type["prometheus"]["url"]
    assert prometheus == "http://prometheus:9090" and "prometheus" in SERVICES
    postgres = by_type["grafana-postgresql-datasource"]
    assert postgres["url"] == "postgres:5432"
    assert postgres["jsonData"]["database"] == SERVICES["postgres"]["environment"]["POSTGRES_DB"]
    initdb = "".join(p.read_text() for p in (COMPOSE_DIR / "postgres" / "initdb").glob("*.sh"))
    assert f"CREATE ROLE {postgres['user']} " in initdb, "Grafana's role is never created"

    uids = {source["uid"] for source in sources}
    for file in sorted(dashboards.glob("**/*.json")):
        text = file.read_text()
        json.loads(text)
        for uid in re.findall(r'"datasource":\s*\{[^{}]*"uid":\s*"([^"$]+)"', text):
            assert uid in uids | {"grafana", "-- Grafana --"}, f"{file.name}: data source {uid}"


def test_every_compose_variable_is_documented() -> None:
    for name in sorted(set(re.findall(r"\$\{(\w+)", COMPOSE_TEXT))):
        assert f"`{name}`" in DEPLOY_DOC, f"{name} is used in the compose file, not in deploy.md"


def need_docker_compose() -> None:
    """Debian's docker-compose 1.29 validates and merges compose files with no daemon."""
    if shutil.which("docker-compose") is None:
        missing("docker-compose is missing: `apt-get install docker-compose` (.ci/run does)")


def validate(command: list[str]) -> None:
    result = subprocess.run(
        [*command, "--file", str(COMPOSE_FILE), "config", "--quiet"],
        cwd=COMPOSE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_file_is_valid_for_docker_compose_v1() -> None:
    need_docker_compose()
    validate(["docker-compose"])


def test_compose_file_is_valid_for_docker_compose_v2() -> None:
    docker = shutil.which("docker")
    plugin = docker and subprocess.run(
        [docker, "compose", "version"], capture_output=True, check=False, timeout=60
    )
    if not plugin or plugin.returncode != 0:
        # The Docker CLI's compose plugin is optional: the v1 test above validates the
        # file against the same specification and must pass everywhere.
        pytest.skip(
            "the Docker CLI's compose plugin is missing (Docker's docker-compose-plugin "
            "package; Debian has none): docker-compose v1 validated the file above"
        )
    validate([docker, "compose"])  # type: ignore[list-item]


def test_the_offline_override_runs_the_same_stack_on_local_images() -> None:
    """compose/offline/ (docs/deploy.md, "How this is checked"): every service but
    Grafana on images built from Debian's packages, the labrxiv image on the local base,
    and the steps workers without `privileged`, merged by docker-compose as it runs them."""
    need_docker_compose()
    files = [COMPOSE_FILE, COMPOSE_DIR / "offline" / "docker-compose.offline.yml"]
    files.append(COMPOSE_DIR / "offline" / "steps-narrow.yml")
    result = subprocess.run(
        ["docker-compose", *(f"--file={f}" for f in files), "config"],
        cwd=COMPOSE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    for name in ("redis", "postgres", "prometheus"):
        image = services[name]["image"]
        assert image == f"labrxiv-offline/{name}", image
        assert (COMPOSE_DIR / "offline" / f"{name}.Dockerfile").is_file()
    for name in ("recorder", "steps", "reactor", "projector", "exporter", "cli"):
        assert services[name]["build"]["args"] == {"BASE": "labrxiv-offline/python:3.11"}
        assert services[name]["command"] == yaml.safe_load(COMPOSE_TEXT)["services"][name].get(
            "command", services[name]["command"]
        )
    assert services["steps"]["privileged"] is False
    assert services["steps"]["cap_add"] == ["SYS_ADMIN"]
