"""Malformed requests on an agent's lab socket are refused there: a model request whose
body is not a JSON object (400, recorded nowhere, not sent), a lab call of no such name
(404, one line), a paper with malformed claims (the tool's own error; the run goes on)."""

import json
from pathlib import Path

from tests.agent.agent_support import run_campaign, run_events, script_folder, store_of
from tests.llm.fake_server import FakeServer, completion, usage

AGENT = '''"""Sends malformed requests to the lab socket and its base URL, says what came back."""
import http.client
import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.unix = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix)


def post(path, body):
    connection = Unix(os.environ["LABRXIV_LAB_SOCKET"])
    connection.request("POST", path, body=body, headers={"content-type": "application/json"})
    answer = connection.getresponse()
    return answer.status, answer.read().decode()


BAD = {
    "not json": ("/v1/chat/completions", b"{not json"),
    "empty": ("/v1/chat/completions", b""),
    "a list": ("/v1/chat/completions", b'[{"model": "fake-model", "messages": []}]'),
    "a string": ("/chat/completions", b'"hello"'),
    "responses not json": ("/v1/responses", b"\\xff\\xfe"),
    "responses a number": ("/v1/responses", b"3"),
    "model not a string": ("/v1/chat/completions", b'{"model": 3, "messages": []}'),
    "lab call no name": ("/lab/nonsense", b"{}"),
    "lab call not an object": ("/lab/evaluate", b"[]"),
}
for name, (path, body) in BAD.items():
    status, text = post(path, body)
    print(json.dumps({"try": name, "status": status, "body": text}), flush=True)
RAW = {
    "bad chunk size": b"transfer-encoding: chunked\\r\\n\\r\\nzz\\r\\n{}\\r\\n0\\r\\n\\r\\n",
    "negative chunk size": b"transfer-encoding: chunked\\r\\n\\r\\n-5\\r\\n",
    "bad content-length": b"content-length: many\\r\\n\\r\\n{}",
    "negative content-length": b"content-length: -1\\r\\n\\r\\n{}",
}
for name, rest in RAW.items():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.settimeout(60)  # the connection stays open: only an answer ends the wait
        raw.connect(os.environ["LABRXIV_LAB_SOCKET"])
        raw.sendall(b"POST /v1/chat/completions HTTP/1.1\\r\\nhost: lab\\r\\n" + rest)
        answer = http.client.HTTPResponse(raw)
        try:
            answer.begin()
            status, text = answer.status, answer.read().decode()
        except (OSError, http.client.HTTPException) as exc:
            status, text = 0, repr(exc)
    print(json.dumps({"try": name, "status": status, "body": text}), flush=True)
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=b"not json either",
    headers={"content-type": "application/json"},
)
try:
    urllib.request.urlopen(request, timeout=60)
except urllib.error.HTTPError as exc:
    said = {"try": "base url not json", "status": exc.code, "body": exc.read().decode()}
    print(json.dumps(said), flush=True)
Path("paper.md").write_text("# A paper\\n\\nIts abstract.\\n\\nIts body.\\n")
claims = [{"subtask": "final_accuracy", "metric": "accuracy", "value": "high", "attempt": 1}]
Path("claims.json").write_text(json.dumps(claims))
for name, claims_file in (("submit bad claim", "claims.json"), ("submit no file", "none.json")):
    done = subprocess.run(
        ["lab", "submit", "paper.md", "--claims", claims_file], capture_output=True, text=True
    )
    said = {"try": name, "status": done.returncode, "body": done.stdout + done.stderr}
    print(json.dumps(said), flush=True)
done = subprocess.run(["lab", "budget"], capture_output=True, text=True)
print(json.dumps({"try": "budget", "status": done.returncode, "body": done.stdout}), flush=True)
subprocess.run(["lab", "finish", "tried"], check=True)
'''


def test_malformed_requests_are_refused_at_the_socket_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    folder = script_folder(tmp_path, "malformer.py", AGENT)
    with FakeServer(default=completion(text="unused", usage=usage(1, 1))) as server:
        said = run_campaign(
            tmp_path,
            server.url,
            "--labs", "1", "--papers", "1", "--mode", "isolated",
            "--agent", f"python {folder}/malformer.py",
            "--agent-env", str(folder),
            "--model", "fake-model",
            "--timeout", "200",
        )  # fmt: skip
        received = list(server.received)
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    assert received == []
    ((run, events),) = run_events(tmp_path).items()
    (exited,) = [e.payload for e in events if e.type == "agent.exited"]
    assert exited.exit_code == 0, exited.stderr_tail
    store = store_of(tmp_path)
    try:
        assert exited.stdout is not None
        stdout = (store.get_blob(exited.stdout.sha256) or b"").decode()
    finally:
        store.engine.dispose()
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    tries = {t["try"]: t for t in map(json.loads, lines)}
    model_tries = [
        "not json",
        "empty",
        "a list",
        "a string",
        "responses not json",
        "responses a number",
        "model not a string",
        "base url not json",
        "bad chunk size",
        "negative chunk size",
        "bad content-length",
        "negative content-length",
    ]
    for name in model_tries:
        assert tries[name]["status"] == 400, tries[name]
        error = json.loads(tries[name]["body"])["error"]
        assert error["type"] == "invalid_request_error" and error["message"], error
    for name in ("lab call no name", "lab call not an object"):
        answer = json.loads(tries[name]["body"])
        assert set(answer) == {"error"}, answer
        assert isinstance(answer["error"], str) and "\n" not in answer["error"], answer
    assert tries["lab call no name"]["status"] == 404
    assert "no lab call 'nonsense'" in tries["lab call no name"]["body"]
    assert tries["lab call not an object"]["status"] == 400
    # A malformed claim is the submit tool's own error; a missing file the command's.
    bad = tries["submit bad claim"]
    assert bad["status"] == 1 and bad["body"].startswith("error: "), bad
    assert "malformed" in bad["body"] or "bad arguments" in bad["body"], bad
    assert tries["submit no file"]["status"] == 2, tries["submit no file"]
    assert tries["budget"]["status"] == 0
    # None of the malformed model requests is recorded; the run went on to its finish.
    types = [e.type for e in events]
    assert not {"model.called", "model.responded", "model.failed"} & set(types)
    lab = [e.payload.tool for e in events if e.type == "tool.invoked"]
    assert lab == ["submit_paper", "budget", "finish"]
    (submitted,) = [
        e.payload for e in events if e.type == "tool.returned" and e.payload.tool == "submit_paper"
    ]
    assert submitted.exit_code == 1 and submitted.preview == bad["body"].strip()
    assert "paper.submitted" not in types
    assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
