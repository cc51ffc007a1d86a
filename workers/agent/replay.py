"""A fork's replay: an agent restarted from the starter workspace redoes its parent's
trajectory up to the fork point, its calls answered from the parent's log.

An agent's memory is its own process's, so a fork of an agent run (`labrxiv fork`)
starts the agent again; the calls its parent made before the fork point are answered
from the log, in the order they were made, without calling the model or running a tool:
the n-th model request gets the n-th answer recorded (`model.responded`, its response
blob), a lab-API call the recorded `tool.returned` of the same call. Nothing is recorded
for them: the fork inherits them already. A call that is not the one recorded next (a
request whose JSON differs, another lab call) is a divergence (`agent.diverged`): from
it on, every call is made and recorded as usual.
"""

import threading
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from events import EventStore
from events.payloads import ModelCalled, ModelFailed, ModelResponded, ToolInvoked, ToolReturned
from events.payloads.agent import AgentDiverged
from events.recorded import Fact
from runstate.fork import inherited, loader

DETAIL_CHARS = 500
"""Characters of a divergence's description at most."""


@dataclass(frozen=True)
class ModelAnswer:
    """A model call of the parent, answered: what was asked and what came back."""

    request: bytes
    response: bytes
    request_id: str
    """The call's `request_id` in the parent's log (its reported calls' ids end with it)."""


@dataclass(frozen=True)
class LabAnswer:
    """A lab-API call of the parent and its recorded result."""

    tool: str
    args: dict[str, Any]
    output: str
    exit_code: int


Recorded = ModelAnswer | LabAnswer


class Replay:
    """The parent's calls up to the fork point, taken in order by the restarted agent."""

    def __init__(self, calls: list[Recorded], reported: set[str]) -> None:
        self._calls = calls
        self.reported = reported
        """Call ids of the reported `tool.invoked` the fork inherits."""
        self.model_calls = sum(isinstance(c, ModelAnswer) for c in calls)
        """R: the model calls answered from the log at most."""
        self.taken = 0
        """Calls answered from the log so far."""
        self.live = not calls
        """True once a divergence or the end of the recorded calls was reached."""
        self._lock = threading.Lock()

    def model(self, body: bytes) -> ModelAnswer | AgentDiverged | None:
        """The recorded answer to the model request `body`; the divergence when the
        request is not the one recorded next; None when the call is live."""
        with self._lock:
            head = self._head()
            if head is None:
                return None
            if isinstance(head, LabAnswer):
                return self._diverged(
                    "model", f"a model request where the parent called {head.tool}"
                )
            found = json_difference(orjson.loads(head.request), orjson.loads(body))
            if found:
                return self._diverged("model", f"the request differs from the parent's: {found}")
            self.taken += 1
            return head

    def lab(self, tool: str, args: dict[str, Any]) -> LabAnswer | AgentDiverged | None:
        """The recorded result of lab call `tool` with `args`; the divergence when it is
        not the call recorded next; None when the call is live."""
        with self._lock:
            head = self._head()
            if head is None:
                return None
            if isinstance(head, ModelAnswer):
                return self._diverged("lab", f"lab call {tool} where the parent asked the model")
            if head.tool != tool:
                return self._diverged("lab", f"lab call {tool} where the parent called {head.tool}")
            found = json_difference(head.args, args)
            if found:
                return self._diverged("lab", f"the {tool} arguments differ: {found}")
            self.taken += 1
            return head

    def _head(self) -> Recorded | None:
        if self.live:
            return None
        if self.taken == len(self._calls):
            self.live = True
            return None
        return self._calls[self.taken]

    def _diverged(self, kind: Literal["model", "lab"], detail: str) -> AgentDiverged:
        self.live = True
        answered = sum(isinstance(c, ModelAnswer) for c in self._calls[: self.taken])
        return AgentDiverged(
            call=self.taken + 1,
            kind=kind,
            model_calls=answered,
            lab_calls=self.taken - answered,
            detail=detail[:DETAIL_CHARS],
        )


def replay_of(store: EventStore, first: Fact) -> Replay:
    """The replay of the fork whose `run.started` is `first`: its inherited trajectory's
    answered model calls and finished lab calls, in log order."""
    return replay_from(inherited(first, loader(store)), store)


def replay_from(events: list[Fact], store: EventStore) -> Replay:
    """The replay of the trajectory `events` (blobs read from `store`)."""
    calls: list[Recorded | None] = []
    asked: dict[str, tuple[int, ModelCalled]] = {}
    tools: dict[str, tuple[int, ToolInvoked]] = {}
    reported: set[str] = set()
    for event in events:
        payload = event.payload
        if isinstance(payload, ModelCalled):
            asked[payload.call_id] = (len(calls), payload)
            calls.append(None)
        elif isinstance(payload, ModelResponded) and payload.call_id in asked:
            index, called = asked.pop(payload.call_id)
            request = store.get_blob(called.request.sha256) if called.request else None
            response = store.get_blob(payload.response.sha256) if payload.response else None
            if request is None or response is None:  # not kept: the agent goes live here
                calls = calls[:index]
                break
            calls[index] = ModelAnswer(request, response, called.request_id)
        elif isinstance(payload, ModelFailed):
            asked.pop(payload.call_id, None)
        elif isinstance(payload, ToolInvoked) and payload.reported:
            reported.add(payload.call_id)
        elif isinstance(payload, ToolInvoked):
            tools[payload.call_id] = (len(calls), payload)
            calls.append(None)
        elif isinstance(payload, ToolReturned) and payload.call_id in tools:
            index, invoked = tools.pop(payload.call_id)
            output = _output(payload, store)
            if output is None:  # not kept: the agent goes live here
                calls = calls[:index]
                break
            calls[index] = LabAnswer(invoked.tool, invoked.args, output, payload.exit_code)
    # A call the fork point cut before its result (or a failed one) is no call to replay.
    return Replay([c for c in calls if c is not None], reported)


def _output(returned: ToolReturned, store: EventStore) -> str | None:
    """A lab call's whole output; None when the log lost it. (A call's preview is its whole
    output where the reference names no more than it: logs whose short outputs named a
    blob that was not kept.)"""
    if returned.output is None or len(returned.preview.encode()) == returned.output.size:
        return returned.preview
    data = store.get_blob(returned.output.sha256)
    return None if data is None else data.decode()


def json_difference(recorded: Any, given: Any, path: str = "") -> str:
    """Where the JSON value `given` first differs from `recorded` ('' when equal; the
    keys' order does not count)."""
    where = path or "the top"
    if isinstance(recorded, dict) and isinstance(given, dict):
        for key in sorted(recorded.keys() | given.keys()):
            if key not in given:
                return f"{path}.{key} is missing"
            if key not in recorded:
                return f"{path}.{key} is new"
        for key in sorted(recorded):
            found = json_difference(recorded[key], given[key], f"{path}.{key}")
            if found:
                return found
        return ""
    if isinstance(recorded, list) and isinstance(given, list):
        for index, (old, new) in enumerate(zip(recorded, given, strict=False)):
            found = json_difference(old, new, f"{path}[{index}]")
            if found:
                return found
        if len(recorded) != len(given):
            return f"{where} has {len(given)} items, not {len(recorded)}"
        return ""
    if recorded != given or type(recorded) is not type(given):
        return f"{where} is {_short(given)}, not {_short(recorded)}"
    return ""


def _short(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 120 else text[:117] + "..."
