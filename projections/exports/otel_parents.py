"""Which model call asked for a tool call, as the log's ids say it: the parent of a tool
call's `execute_tool` span.

A tool call a model's answer asked for is logged under an id that names that model call
after its last `@` (`ToolInvoked.call_id`):
- an `llm` lab's call `call_1@12/1` (or `call_1@12/1#2`, its answer's third call when
  the server gave an id twice): the model call whose `call_id` ends in `:12/1`, the part
  of the id after its last `:` (`workers.lab.policies.llm.history.logged_call_id`);
- an agent's reported call `toolu_1@run-3f2a9c-0:agent:4` (a tool call in an answer that
  the agent's own tool ran, `workers.agent.reported`): the model call of request
  `run-3f2a9c-0:agent:4`.
Any other tool call (an agent's calls of labrxiv's lab tools, `lab-2@17`; a run that
called no model; an id naming no model call of the run) was asked for by no model call
the log can name.
"""

from events.payloads import ModelCalled

LOGGED_TAIL = 40
"""The most characters of a model call's id an `llm` lab's tool call id keeps."""


def asking_names(called: ModelCalled) -> tuple[str, ...]:
    """The names a tool call's id may give the model call `called` by."""
    return called.call_id.rsplit(":", 1)[-1][:LOGGED_TAIL], called.request_id


def asked_by(tool_call_id: str) -> str | None:
    """The name of the model call a tool call's id says asked for it (see the module's
    docstring); None when it names none."""
    if "@" not in tool_call_id:
        return None
    named = tool_call_id.rsplit("@", 1)[1].split("#", 1)[0]
    return named or None
