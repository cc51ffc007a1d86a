"""Settings from `LABRXIV_*` environment variables, validated once at start-up."""

import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError


class SettingsError(Exception):
    """An environment variable has a wrong value; the message names it."""


class Settings(BaseSettings):
    """How this labrxiv process finds its database and broker."""

    model_config = SettingsConfigDict(
        env_prefix="LABRXIV_", extra="ignore", frozen=True, allow_inf_nan=False
    )

    data_dir: Path = Path(".labrxiv")
    """Where the embedded SQLite log and reports live."""
    database_url: str | None = None
    """`postgresql://…` for a shared log; unset means a SQLite file in `data_dir`."""
    redis_url: str | None = None
    """`redis://host:port/db` for Celery; unset means the in-process bus (one process)."""
    visibility_timeout: int = Field(default=1800, ge=1)
    """Seconds before an unacknowledged task is delivered again to another worker."""
    max_message_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    """A published message larger than this is dead-lettered unread."""
    gym_path: list[Path] = Field(default_factory=list)
    """Extra folders of task bundles, as a JSON list (e.g. '["/data/tasks"]')."""
    log_level: str = "INFO"
    """Level of labrxiv's own log lines (a logging level name); other libraries log
    warnings only, unless DEBUG (`labrxiv.console.configure_logging`)."""
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY")
    )
    """The model endpoint's key (the standard variable); never logged or recorded."""
    openai_base_url: str = Field(
        default="https://api.openai.com/v1", validation_alias=AliasChoices("OPENAI_BASE_URL")
    )
    """The OpenAI-compatible endpoint (vLLM, Ollama, LM Studio…), the standard variable."""
    prices: Path | None = None
    """A price table file (TOML, see docs/models.md) whose entries override the shipped ones."""
    llm_timeout: float = Field(default=120.0, gt=0)
    """Seconds before a model call times out (it is then retried)."""
    llm_max_attempts: int = Field(default=4, ge=1)
    """Physical attempts per model request, retries included."""
    stall_seconds: float = Field(default=30.0, gt=0)
    """A run with no event for this long and no step being taken has lost its step (a
    message lost with Redis, a worker killed): the reaper sends it again. Also the time
    to live of a step's lease (renewed while the step runs): a step whose worker died is
    taken over by another once it runs out (`workers.lab.lease`)."""
    reactor_interval: float = Field(default=0.5, gt=0)
    """Seconds between the reactor's looks at the log (`labrxiv reactor`)."""
    sandbox: str = "auto"
    """The sandbox backend lab code runs in (`workers/sandbox/backends`): `jail` (root),
    `userns` (rootless), or `auto`, the strongest that works on this machine."""

    @field_validator("data_dir", mode="before")
    @classmethod
    def _some_folder(cls, value: object) -> object:
        # Empty, it was the path "" (the current folder): `LABRXIV_DATA_DIR= labrxiv runs`
        # looked for a log there (found running labrxiv from outside).
        if isinstance(value, str) and not value.strip():
            raise ValueError("empty: name a folder, or unset it for the default .labrxiv")
        return value

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, value: str | None) -> str | None:
        if value and not value.startswith(("sqlite:", "postgresql:", "postgresql+psycopg:")):
            raise ValueError("must start with sqlite: or postgresql:")
        return value or None

    @field_validator("redis_url")
    @classmethod
    def _known_redis(cls, value: str | None) -> str | None:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        if value and value.startswith("unix://"):
            # The broker passes a socket URL's parameters to redis-py as text (a timeout
            # of '5' failed at the first connection), and `db` is all it needs.
            other = sorted({key for key, _ in parse_qsl(urlsplit(value).query)} - {"db"})
            if other:
                raise ValueError(f"a unix:// URL takes only ?db=N, not {', '.join(other)}")
        return value or None

    @field_validator("openai_base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        problem = http_url_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value.rstrip("/")

    @field_validator("prices")
    @classmethod
    def _prices_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError("no such file")
        if value is not None:  # read now, not when a run first prices a call
            from workers.llm.prices import PriceTable, PriceTableError

            try:
                PriceTable.load(value, builtin=None)
            except PriceTableError as exc:
                raise ValueError(exc.problem) from None  # the setting names the file
        return value

    @field_validator("sandbox")
    @classmethod
    def _known_sandbox(cls, value: str) -> str:
        from workers.sandbox.backends import AUTO, backend_names

        known = [AUTO, *backend_names()]
        if value not in known:
            raise ValueError(f"must be {', '.join(known[:-1])} or {known[-1]}")
        return value

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError("must be DEBUG, INFO, WARNING, ERROR or CRITICAL")
        return level

    @property
    def store_url(self) -> str:
        """The database the log lives in."""
        return self.database_url or f"sqlite:///{self.data_dir / 'labrxiv.db'}"

    @property
    def embedded(self) -> bool:
        """True when no Redis is configured: everything runs in this process."""
        return self.redis_url is None


def http_url_problem(value: str) -> str | None:
    """Why `value` is not an endpoint's URL (None: it is one); `OPENAI_BASE_URL` and the
    `--base-url` options are checked with it."""
    if not value.startswith(("http://", "https://")):
        return "must start with http:// or https://"
    return None


def load_settings(**overrides: object) -> Settings:
    """Read the environment once; a wrong value raises `SettingsError` naming the variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(_problem(err) for err in exc.errors())
        raise SettingsError(f"bad setting: {problems}") from None
    except SourceError as exc:
        # A list or object setting that is not JSON fails before validation, with a
        # message that names the field but not the variable.
        found = re.search(r'field "(\w+)"', str(exc))
        name = f"LABRXIV_{found.group(1).upper()}" if found else "a LABRXIV_ variable"
        value = os.environ.get(name, "")
        raise SettingsError(f"bad setting: {name}={value!r}: not valid JSON") from None


def _problem(err: ErrorDetails) -> str:
    """`VARIABLE='value': what is wrong`, never showing a secret's value."""
    field = str(err["loc"][0])
    name = field if field.startswith("OPENAI_") else f"LABRXIV_{field.upper()}"
    shown = "<hidden>" if "KEY" in name else repr(err.get("input"))
    message = str(err["msg"]).removeprefix("Value error, ")  # pydantic's, for a ValueError
    return f"{name}={shown}: {message}"
