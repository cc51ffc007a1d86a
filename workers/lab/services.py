"""What lab steps need beyond the store and bus: bundles, workspaces, the archive, policies."""

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from events import EventStore
from events.payloads import LlmConfig, Price
from runstate import RunState
from workers.errors import BundleError, UnknownTask, WorkerError
from workers.gym.bundle import Bundle
from workers.gym.grading import protected_digests
from workers.gym.registry import find_bundle
from workers.lab.fork import restore
from workers.lab.policies import Policy, needs_of, new_policies
from workers.llm import Gateway
from workers.llm.prices import PriceTable
from workers.sandbox.backends import AUTO, new_sandbox
from workers.sandbox.base import Limits
from workers.tools.env import Archive, ToolEnv, ToolRun


@dataclass
class LabServices:
    """Built once per worker process by the application shell."""

    workspaces: Path
    """Where run workspaces live; shared by all workers of a deployment."""
    gym_dirs: list[Path]
    """Folders holding task bundles, searched in order."""
    archive: Archive
    hidden: list[Path] = field(default_factory=list)
    """Further folders processes must not see (the data folder with the log)."""
    gateways: Callable[[str | None], Gateway] | None = None
    """The model gateway for an endpoint (None: the worker's default); None: no LLM labs."""
    prices: Callable[[], PriceTable] | None = None
    """The price table (loaded on first use), for graders that call a model."""
    inflight: Path = Path(".labrxiv/inflight")
    """Markers of model calls being sent (outside every workspace)."""
    limits: Limits = field(default_factory=Limits)
    sandbox: str = AUTO
    """The sandbox backend of the runs' tools (`LABRXIV_SANDBOX`: a name, or `auto`)."""
    policies: dict[str, Policy] = field(default_factory=new_policies)
    """Every policy found (`workers/lab/policies`), this worker's instances."""
    _bundles: dict[str, Bundle] = field(default_factory=dict)
    _protected: dict[str, dict[str, str]] = field(default_factory=dict)

    def bundle(self, task: str) -> Bundle:
        """The bundle of `task` (cached)."""
        if task not in self._bundles:
            try:
                bundle = find_bundle(task, self.gym_dirs, needs_of(self.policies))
            except UnknownTask as exc:
                # A distributed worker finds bundles by its own settings, not the command's.
                folders = ", ".join(map(str, self.gym_dirs))
                raise BundleError(
                    f"{exc}; this worker's task folders: {folders} (every steps worker "
                    "needs the campaign's bundles in its LABRXIV_GYM_PATH)"
                ) from None
            self._bundles[task] = bundle
        return self._bundles[task]

    def gateway(self, config: LlmConfig | None) -> Gateway:
        """The gateway an `llm` run's calls go through, pricing by the prices the run
        recorded first (`LlmConfig.prices`), then by this worker's table."""
        if config is None:
            return self.priced_gateway(None, {})
        return self.priced_gateway(config.base_url, config.prices)

    def priced_gateway(self, base_url: str | None, recorded: Mapping[str, Price]) -> Gateway:
        """The gateway of `base_url` (None: the worker's default), pricing by `recorded`
        (what a run or a campaign's reviews recorded, `LlmConfig.prices`) first."""
        if self.gateways is None:
            raise WorkerError("this worker has no model gateway configured")
        gateway = self.gateways(base_url)
        return gateway.priced_by(gateway.prices.with_recorded(recorded))

    def policy(self, name: str) -> Policy:
        """The policy called `name`."""
        if name not in self.policies:
            raise WorkerError(f"no policy {name!r}; known: {', '.join(sorted(self.policies))}")
        return self.policies[name]

    def env_for(self, state: RunState, store: EventStore | None = None) -> ToolEnv:
        """The run's tool environment; its workspace is created from the starter on first
        use (for a fork, with what its parent's inherited tool calls changed: `store`)."""
        bundle = self.bundle(state.task)
        root = self.workspaces / state.stream
        hidden = [*self.gym_dirs, self.workspaces, *self.hidden]
        sandbox = new_sandbox(self.sandbox, root, hidden=hidden, limits=self.limits)
        if not (root / ".labrxiv-ready").exists():
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(bundle.workspace_dir, root)
            point = state.started.forked_from
            if point is not None:
                if store is None:
                    raise WorkerError(f"{state.stream} is a fork: its workspace needs the log")
                restore(store, root, point)
            (root / ".labrxiv-ready").write_text(state.stream)
            sandbox.prepare()
        if bundle.id not in self._protected:
            self._protected[bundle.id] = protected_digests(bundle.path)
        run = ToolRun(
            stream=state.stream,
            lab=state.lab,
            task=state.task,
            campaign=state.campaign,
            reads_archive=state.started.reads_archive,
            accepted_only=state.started.archive_reads == "accepted",
            attempts=len(state.attempts),
            papers=len(state.papers),
        )
        return ToolEnv(
            sandbox=sandbox,
            card=bundle.card,
            bundle=bundle.path,
            archive=self.archive,
            run=run,
            protected=self._protected[bundle.id],
            prices=self.prices,
        )
