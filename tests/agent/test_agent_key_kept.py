"""The provider's API key goes to the provider and nowhere else: not into the agent's
environment (nor any process it can read the environment of), the log's events or
blobs, or any file of the run's workspace."""

import json
import sqlite3
from pathlib import Path
from typing import Any

from events.blobs import BlobRef
from tests.agent.agent_support import KEY, run_campaign, run_events, script_folder, store_of
from tests.llm.fake_server import FakeServer, completion, error, usage

AGENT = '''"""Writes down every environment it can see, calls the model once, finishes."""
import glob
import json
import os
import subprocess
from pathlib import Path

from openai import OpenAI

files = {}
for path in ["/proc/self/environ", f"/proc/{os.getppid()}/environ", *glob.glob("/proc/*/environ")]:
    try:
        files[path] = Path(path).read_bytes().decode(errors="replace")
    except OSError as exc:
        files[path] = None
        print(f"{path}: {exc}", flush=True)
Path("seen.json").write_text(json.dumps({"environ": dict(os.environ), "files": files}))
client = OpenAI()
try:  # the provider's refusal names the key it was given
    client.chat.completions.create(
        model=os.environ["OPENAI_MODEL"], messages=[{"role": "user", "content": "hello"}]
    )
except Exception as exc:
    Path("refused.txt").write_text(f"{exc!r}")
    print(f"refused: {exc}", flush=True)
client.chat.completions.create(
    model=os.environ["OPENAI_MODEL"], messages=[{"role": "user", "content": "hello"}]
)
subprocess.run(["lab", "finish", "looked around"], check=True)
'''


def refs_in(value: Any) -> list[BlobRef]:
    """Every blob reference in an event payload."""
    if isinstance(value, BlobRef):
        return [value]
    if isinstance(value, list | tuple):
        return [r for v in value for r in refs_in(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs_in(v)]
    fields = getattr(type(value), "model_fields", None)
    if fields is None:
        return []
    return [r for name in fields for r in refs_in(getattr(value, name))]


def test_the_key_is_nowhere_but_in_the_providers_requests(tmp_path: Path) -> None:
    folder = script_folder(tmp_path, "looker.py", AGENT)
    reply = completion(text="hello to you", usage=usage(20, 3))
    with FakeServer(default=reply, models=("gpt-4o-mini",)) as server:
        server.queue(error(401, f"Incorrect API key provided: {KEY}."))
        said = run_campaign(
            tmp_path,
            server.url,
            "--labs", "1", "--papers", "1", "--mode", "isolated",
            "--agent", f"python {folder}/looker.py",
            "--agent-env", str(folder),
            "--model", "gpt-4o-mini",
            "--timeout", "200",
        )  # fmt: skip
        requests = server.completions()
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    assert KEY not in said.stdout + said.stderr
    assert [r.headers["authorization"] for r in requests] == [f"Bearer {KEY}"] * 2
    ((run, events),) = run_events(tmp_path).items()
    assert events[-1].payload.reason == "done", events[-1].payload
    # What the agent saw: its own environment and every one it could read.
    workspaces = tmp_path / "data" / "workspaces"
    (seen_file,) = workspaces.rglob("seen.json")
    (refused,) = workspaces.rglob("refused.txt")
    assert "401" in refused.read_text() and "Incorrect API key provided" in refused.read_text()
    seen = json.loads(seen_file.read_text())
    assert seen["environ"]["OPENAI_API_KEY"] == "labrxiv"
    readable = {path: text for path, text in seen["files"].items() if text is not None}
    assert "LABRXIV_LAB_SOCKET" in readable["/proc/self/environ"]
    assert len(readable) >= 2  # its own, and its launcher's
    assert KEY not in json.dumps(seen)
    # The log: every payload, every blob referenced, every blob stored.
    assert KEY not in json.dumps([e.payload.model_dump(mode="json") for e in events])
    refs = [r for e in events for r in refs_in(e.payload)]
    (failed,) = [e.payload for e in events if e.type == "model.failed"]
    assert failed.status_code == 401 and "Incorrect API key provided" in failed.detail
    assert [e.type for e in events].count("model.called") == 2 and refs
    store = store_of(tmp_path)
    try:
        for ref in refs:
            data = store.get_blob(ref.sha256)
            assert data is not None, ref
            assert KEY.encode() not in data
    finally:
        store.engine.dispose()
    with sqlite3.connect(tmp_path / "data" / "labrxiv.db") as db:
        blobs = db.execute("select sha256, data from blobs").fetchall()
    assert len(blobs) >= len({r.sha256 for r in refs})
    assert not [sha for sha, data in blobs if KEY.encode() in bytes(data)]
    # Every file of the data folder, the workspaces and the database's own files included.
    files = [p for p in (tmp_path / "data").rglob("*") if p.is_file() and not p.is_symlink()]
    assert seen_file in files and refused in files
    assert not [p for p in files if KEY.encode() in p.read_bytes()]
