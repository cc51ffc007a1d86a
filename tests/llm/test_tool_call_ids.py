"""Tool calls of an `llm` run are logged under ids unique in the run, whatever ids the
model's server gives them (some reuse call_0, call_1… in every answer, or send one id
twice in an answer), and the conversation sent back answers each with the server's own
id; a run logged before keeps working."""

import json
from typing import Any

from fake_server import completion, conversation_problem
from llm_support import unpriced_answer

from events.blobs import blob_ref
from events.payloads import LlmConfig, ModelResponded, ToolReturned
from runstate import Exchange
from workers.lab.policies.llm.context import group_messages
from workers.lab.policies.llm.history import SERVER_ID_CHARS, reply_of

CALLS = [("bash", '{"command": "ls"}'), ("read_file", '{"path": "a.txt"}')]


def _answer(call_id: str, server_ids: list[str]) -> tuple[ModelResponded, dict[str, bytes]]:
    """A recorded answer whose tool calls the server named `server_ids`."""
    body: dict[str, Any] = completion(tool_calls=CALLS[: len(server_ids)]).body  # type: ignore[assignment]
    calls = body["choices"][0]["message"]["tool_calls"]
    for call, server_id in zip(calls, server_ids, strict=True):
        call["id"] = server_id
    data = json.dumps(body).encode()
    responded = unpriced_answer(call_id, response=blob_ref(data))
    return responded, {blob_ref(data).sha256: data}


def _result(call_id: str, tool: str) -> ToolReturned:
    return ToolReturned(call_id=call_id, tool=tool, exit_code=0, duration_s=0.1, preview="ok")


def test_ids_are_unique_in_the_run_and_kept_short() -> None:
    long_id = "call_" + "x" * 500
    first, blobs = _answer("run-a:3/1", ["call_1", "call_1"])
    second, more = _answer("run-a:9/2", ["call_1", long_id])
    blobs |= more
    ids = []
    for responded in (first, second):
        reply = reply_of(responded, "experiment", "native", blobs.get)
        ids += [call.id for call in reply.tool_calls]
        assert [c.answer_id for c in reply.tool_calls] == [
            c["id"] for c in reply.message["tool_calls"]
        ], "the server's ids are what goes back to it"
    assert len(set(ids)) == 4, ids
    assert ids[:3] == ["call_1@3/1", "call_1@3/1#1", "call_1@9/2"]
    assert len(ids[3]) < SERVER_ID_CHARS + 10 and ids[3].startswith("call_xxx")


def test_the_conversation_answers_each_call_with_the_servers_id() -> None:
    config = LlmConfig(model="m")
    responded, blobs = _answer("run-a:3/1", ["call_1", "call_2"])
    logged = [c.id for c in reply_of(responded, "experiment", "native", blobs.get).tool_calls]
    for results in (
        (_result(logged[0], "bash"), _result(logged[1], "read_file")),
        (_result("call_1", "bash"), _result("call_2", "read_file")),  # a run logged before
    ):
        exchange = Exchange(answer=responded, phase="experiment", results=results)
        messages = group_messages(exchange, config, blobs.get)
        answers = [m for m in messages if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in answers] == ["call_1", "call_2"]
        assert conversation_problem({"messages": messages}) is None


def test_a_call_whose_server_gave_no_id_is_logged_and_answered() -> None:
    responded, blobs = _answer("run-a:5/1", ["call_1"])
    body = json.loads(blobs[responded.response.sha256])  # type: ignore[union-attr]
    del body["choices"][0]["message"]["tool_calls"][0]["id"]
    data = json.dumps(body).encode()
    responded = responded.model_copy(update={"response": blob_ref(data)})
    reply = reply_of(responded, "experiment", "native", {blob_ref(data).sha256: data}.get)
    (call,) = reply.tool_calls
    assert call.id == "@5/1" and call.answer_id == ""
