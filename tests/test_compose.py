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
import stat
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


PASSWORDS = ["REDIS_PASSWORD", "POSTGRES_PASSWORD", "GRAFANA_DB_PASSWORD", "GRAFANA_ADMIN_PASSWORD"]
"""The stack's passwords: required variables, no defaults (compose/secrets.sh makes them)."""

SECRETS_SCRIPT = COMPOSE_DIR / "secrets.sh"


def interpolate(value: str) -> str:
    """`value` as compose sees it with only the passwords set (to `secret`): `${X:-d}` is
    `d`, `${X}` empty, a required `${X:?message}` `secret`."""

    def value_of(match: re.Match[str]) -> str:
        if match.group(2) == "?":
            return "secret"
        return match.group(3) or ""

    return re.sub(r"\$\{(\w+)(?::?([-?])([^}]*))?\}", value_of, value)


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


ROOT_USERS = {"root", "0"}
"""How a container's user names root (`user: 0:0` is `0` before the colon)."""

IMAGE_USERS = {
    "redis": "redis",
    "postgres": "postgres",
    "prometheus": "nobody",
    "grafana": "grafana",
}
"""The non-root user each third-party image has (docs/deploy.md, "Who runs what")."""


def dockerfile_user() -> str:
    users = re.findall(r"^USER (\S+)", DOCKERFILE, re.MULTILINE)
    assert users, "the Dockerfile sets no USER: the image runs as root"
    return users[-1]


def test_no_service_runs_as_root() -> None:
    user = dockerfile_user()
    assert user not in ROOT_USERS, "the image must end as a non-root user"
    assert re.search(rf"^RUN .*useradd .*\b{user}\b", DOCKERFILE, re.MULTILINE | re.DOTALL)
    for service, spec in SERVICES.items():
        assert not spec.get("privileged"), f"{service} is privileged"
        assert not spec.get("cap_add"), f"{service} adds capabilities {spec.get('cap_add')}"
        named = str(spec.get("user", "")).split(":")[0]
        assert named not in ROOT_USERS, f"{service} runs as root"
        if service in LABRXIV_SERVICES:
            assert named == user, f"{service} runs as {named!r}, not the image's {user}"
        else:
            image = spec["image"].split(":")[0].split("/")[-1]
            assert named == IMAGE_USERS[image], f"{service}: no user, or not its image's own"


def test_steps_workers_scale_and_run_the_rootless_sandbox() -> None:
    steps = SERVICES["steps"]
    assert "container_name" not in steps and "hostname" not in steps, "fixed name: no --scale"
    assert "ports" not in steps, "a fixed host port: a second steps worker could not bind it"
    # The rootless backend (workers/sandbox/backends/userns.py), named rather than `auto`:
    # a container that cannot make user namespaces stops the worker, saying why.
    assert steps["environment"]["LABRXIV_SANDBOX"] == "userns"
    # What the container must allow a user without capabilities: unshare, mount and
    # pivot_root (seccomp), mount (AppArmor), a new /proc (no masked /proc paths).
    wanted = {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"}
    assert set(steps.get("security_opt", [])) == wanted
    for service in set(SERVICES) - {"steps"}:
        assert not SERVICES[service].get("security_opt"), f"{service} needs no security_opt"
    # The other labrxiv services keep the image's `auto`: they run no lab code.
    for service in set(LABRXIV_SERVICES) - {"steps"}:
        assert "LABRXIV_SANDBOX" not in SERVICES[service]["environment"], service
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


def compose_plugin() -> list[str] | None:
    """`docker compose` where the Docker CLI's compose plugin is installed, else None."""
    docker = shutil.which("docker")
    plugin = docker and subprocess.run(
        [docker, "compose", "version"], capture_output=True, check=False, timeout=60
    )
    return [docker, "compose"] if docker and plugin and plugin.returncode == 0 else None


def need_compose_plugin() -> list[str]:
    command = compose_plugin()
    if command is None:
        # The Docker CLI's compose plugin is optional: the v1 tests validate the file
        # against the same specification and must pass everywhere.
        pytest.skip(
            "the Docker CLI's compose plugin is missing (Docker's docker-compose-plugin "
            "package; Debian has none): docker-compose v1 validated the file"
        )
    return command


def write_secrets(folder: Path) -> Path:
    """An env file made by compose/secrets.sh in `folder`."""
    made = subprocess.run(
        ["sh", str(SECRETS_SCRIPT), str(folder / "secrets.env")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return folder / "secrets.env"


def read_env(file: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in file.read_text().splitlines() if line)


def compose(
    command: list[str],
    env_file: Path,
    args: list[str],
    files: tuple[Path, ...] = (COMPOSE_FILE,),
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """`command` (docker-compose, or docker compose) on `files` with `env` alone and the
    variables of `env_file`: no password of the shell's, no compose/.env of a checkout."""
    clean = {"PATH": os.environ["PATH"], "HOME": str(env_file.parent), **env}
    return subprocess.run(
        [*command, "--env-file", str(env_file), *(f"--file={f}" for f in files), *args],
        cwd=COMPOSE_DIR,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def validate(command: list[str], folder: Path) -> None:
    result = compose(command, write_secrets(folder), ["config", "--quiet"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_file_is_valid_for_docker_compose_v1(tmp_path: Path) -> None:
    need_docker_compose()
    validate(["docker-compose"], tmp_path)


def test_compose_file_is_valid_for_docker_compose_v2(tmp_path: Path) -> None:
    validate(need_compose_plugin(), tmp_path)


def refuses_a_published_stack_without_passwords(command: list[str], folder: Path) -> None:
    empty = folder / "empty.env"
    empty.write_text("")
    result = compose(command, empty, ["config", "--quiet"], PUBLISH_ADDRESS="0.0.0.0")
    said = result.stdout + result.stderr
    assert result.returncode != 0, "a stack published on 0.0.0.0 with no passwords started"
    for name in PASSWORDS:
        assert name in said, f"the refusal does not name {name}: {said}"
    assert "compose/secrets.sh" in said, said

    # Each password alone: the refusal names it, whichever the others are.
    secrets = read_env(write_secrets(folder))
    for name in PASSWORDS:
        partial = folder / f"without-{name}.env"
        partial.write_text("".join(f"{k}={v}\n" for k, v in secrets.items() if k != name))
        result = compose(command, partial, ["config", "--quiet"], PUBLISH_ADDRESS="0.0.0.0")
        assert result.returncode != 0, f"started without {name}"
        assert name in result.stdout + result.stderr, result.stdout + result.stderr


def test_docker_compose_v1_refuses_a_published_stack_without_passwords(tmp_path: Path) -> None:
    need_docker_compose()
    refuses_a_published_stack_without_passwords(["docker-compose"], tmp_path)


def test_docker_compose_v2_refuses_a_published_stack_without_passwords(tmp_path: Path) -> None:
    refuses_a_published_stack_without_passwords(need_compose_plugin(), tmp_path)


def test_no_password_has_a_default() -> None:
    for name in PASSWORDS:
        uses = re.findall(rf"\$\{{{name}(\W[^}}]*)?\}}", COMPOSE_TEXT)
        assert uses, f"{name} is not used"
        for use in uses:
            assert use.startswith(":?"), f"${{{name}{use}}} is not a required variable"


def test_the_passwords_reach_every_service_and_redis_requires_its_own(tmp_path: Path) -> None:
    need_docker_compose()
    secrets_file = write_secrets(tmp_path)
    secrets = read_env(secrets_file)
    result = compose(["docker-compose"], secrets_file, ["config"], PUBLISH_ADDRESS="10.0.0.5")
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    redis, postgres = secrets["REDIS_PASSWORD"], secrets["POSTGRES_PASSWORD"]
    for service in LABRXIV_SERVICES:
        env = services[service]["environment"]
        assert env["LABRXIV_REDIS_URL"] == f"redis://:{redis}@redis:6379/0", service
        assert env["LABRXIV_DATABASE_URL"] == (
            f"postgresql://labrxiv:{postgres}@postgres:5432/labrxiv"
        ), service
    command = services["redis"]["command"]
    assert command[command.index("--requirepass") + 1] == redis
    assert services["redis"]["environment"]["REDISCLI_AUTH"] == redis  # its healthcheck
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == postgres
    reader = secrets["GRAFANA_DB_PASSWORD"]
    assert services["postgres"]["environment"]["GRAFANA_DB_PASSWORD"] == reader
    assert services["grafana"]["environment"]["GRAFANA_DB_PASSWORD"] == reader
    admin = services["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"]
    assert admin == secrets["GRAFANA_ADMIN_PASSWORD"]
    for service in ("redis", "postgres", "prometheus", "grafana"):
        ports = [str(port) for port in services[service]["ports"]]  # address:host:container
        assert all(port.startswith("10.0.0.5:") for port in ports), (service, ports)


def test_secrets_script_writes_random_passwords_only_its_owner_reads(tmp_path: Path) -> None:
    file = write_secrets(tmp_path)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    secrets = read_env(file)
    assert sorted(secrets) == sorted(PASSWORDS)
    assert all(re.fullmatch(r"[0-9a-f]{32}", value) for value in secrets.values()), secrets
    assert len(set(secrets.values())) == len(PASSWORDS)
    assert read_env(write_secrets(tmp_path)) == secrets, "a second run changed a password"
    (tmp_path / "other").mkdir()
    other = read_env(write_secrets(tmp_path / "other"))
    assert not set(other.values()) & set(secrets.values()), "the same password twice"


def test_secrets_script_keeps_what_the_file_has(tmp_path: Path) -> None:
    file = tmp_path / "secrets.env"
    file.write_text("PUBLISH_ADDRESS=10.0.0.5\nPOSTGRES_PASSWORD=kept")  # no final newline
    file.chmod(0o644)
    file = write_secrets(tmp_path)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600, "a file others read kept its mode"
    secrets = read_env(file)
    assert secrets["PUBLISH_ADDRESS"] == "10.0.0.5"
    assert secrets["POSTGRES_PASSWORD"] == "kept"
    assert sorted(set(secrets) - {"PUBLISH_ADDRESS"}) == sorted(PASSWORDS)

    file.write_text("REDIS_PASSWORD=\n")
    refused = subprocess.run(
        ["sh", str(SECRETS_SCRIPT), str(file)], capture_output=True, text=True, check=False
    )
    assert refused.returncode != 0
    assert "REDIS_PASSWORD is empty" in refused.stderr, refused.stderr


def test_secrets_stay_out_of_git_and_of_the_image() -> None:
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "compose/.env" in ignored, "compose/.env (the passwords) could be committed"
    # The image's build context is the repository: compose/ (and its .env) is left out.
    patterns = (ROOT / ".dockerignore").read_text().splitlines()
    assert "compose" in patterns, "compose/.env would be copied into the image"


def test_the_offline_override_runs_the_same_stack_on_local_images(tmp_path: Path) -> None:
    """compose/offline/ (docs/deploy.md, "How this is checked"): every service but
    Grafana on images built from Debian's packages, the labrxiv image on the local base,
    merged by docker-compose as it runs them, each service as the same non-root user."""
    need_docker_compose()
    files = (COMPOSE_FILE, COMPOSE_DIR / "offline" / "docker-compose.offline.yml")
    result = compose(["docker-compose"], write_secrets(tmp_path), ["config"], files)
    assert result.returncode == 0, result.stdout + result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    for name in ("redis", "postgres", "prometheus"):
        image = services[name]["image"]
        assert image == f"labrxiv-offline/{name}", image
        dockerfile = (COMPOSE_DIR / "offline" / f"{name}.Dockerfile").read_text()
        # The stand-in runs as the user the official image has, whom the compose file names.
        assert re.findall(r"^USER (\S+)", dockerfile, re.M)[-1] == services[name]["user"]
    for name in ("recorder", "steps", "reactor", "projector", "exporter", "serve", "cli"):
        assert services[name]["build"]["args"] == {"BASE": "labrxiv-offline/python:3.11"}
        assert services[name]["command"] == yaml.safe_load(COMPOSE_TEXT)["services"][name].get(
            "command", services[name]["command"]
        )
    for name, spec in services.items():
        assert spec.get("user", "root").split(":")[0] not in ROOT_USERS, f"{name} runs as root"
        assert not spec.get("privileged"), name
    assert services["steps"]["environment"]["LABRXIV_SANDBOX"] == "userns"
    assert sorted(services["steps"]["security_opt"]) == sorted(SERVICES["steps"]["security_opt"])
