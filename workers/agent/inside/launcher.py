"""Starts an agent inside the sandbox: its model base URL on loopback, relayed to the lab
socket (`OPENAI_BASE_URL`, `OPENAI_API_BASE` and `LABRXIV_MODEL_BASE_URL` end in `/v1`;
`ANTHROPIC_BASE_URL`, for Anthropic's clients, does not); its output passed on within
bounds; stopped when the worker asks.

Run by labrxiv as `python launcher.py SOCKET -- COMMAND...` in the run's workspace. The
standard library only: it runs in the sandbox with whatever interpreter shows there.
It exits with the agent's exit status (128 + N for a signal N).
"""

import os
import signal
import socket
import subprocess
import sys
import threading
from collections import deque

HEAD = 1 << 20
"""Bytes of each of the agent's outputs passed on from the start."""
TAIL = 64 << 10
"""Bytes of each output kept from the end, past the head."""
PUMP_GRACE = 5.0
"""Seconds the output is still passed on after the agent exited."""
STOP_GRACE = 5.0
"""Seconds between SIGTERM and SIGKILL when the worker stops the agent."""


def _pump(a: socket.socket, b: socket.socket) -> None:
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for end, how in ((b, socket.SHUT_WR), (a, socket.SHUT_RD)):
            try:
                end.shutdown(how)
            except OSError:
                pass


def _connect(path: str) -> socket.socket:
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.connect(path)
    return unix


def _relay(listener: socket.socket, path: str) -> None:
    """Each loopback connection, joined byte for byte to a new lab-socket connection."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        try:
            unix = _connect(path)
        except OSError:
            conn.close()
            continue
        for a, b in ((conn, unix), (unix, conn)):
            threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _bounded(source, sink) -> None:
    """Pass `source` on to `sink`: its first HEAD bytes, then its last TAIL bytes."""
    passed = 0
    tail: deque[bytes] = deque()
    kept = 0
    dropped = 0
    for chunk in iter(lambda: source.read1(65536), b""):
        if passed < HEAD:
            part = chunk[: HEAD - passed]
            sink.write(part)
            sink.flush()
            passed += len(part)
            chunk = chunk[len(part) :]
        if chunk:
            tail.append(chunk)
            kept += len(chunk)
            while kept - len(tail[0]) >= TAIL:
                dropped += len(tail[0])
                kept -= len(tail.popleft())
    if dropped:
        sink.write(f"\n[labrxiv: {dropped} bytes of output left out]\n".encode())
    for chunk in tail:
        sink.write(chunk)
    sink.flush()


def _stop_when_asked(path: str, agent: subprocess.Popen) -> None:
    """Wait for the worker's word (`GET /lab/_stop`), then stop the agent's process group."""
    try:
        unix = _connect(path)
        unix.sendall(b"GET /lab/_stop HTTP/1.0\r\nhost: lab\r\n\r\n")
        while unix.recv(4096):
            pass
    except OSError:
        return
    if agent.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, None)):
        try:
            os.killpg(agent.pid, sig)
        except ProcessLookupError:
            return
        try:
            agent.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: launcher.py SOCKET -- COMMAND...", file=sys.stderr)
        return 2
    path, command = argv[0], argv[2:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    threading.Thread(target=_relay, args=(listener, path), daemon=True).start()
    base = f"http://127.0.0.1:{port}/v1"
    env = dict(
        os.environ,
        OPENAI_BASE_URL=base,
        OPENAI_API_BASE=base,
        ANTHROPIC_BASE_URL=base.removesuffix("/v1"),
        LABRXIV_MODEL_BASE_URL=base,
    )
    try:
        agent = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        print(f"labrxiv: cannot start the agent {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    pumps = [
        threading.Thread(target=_bounded, args=(agent.stdout, sys.stdout.buffer), daemon=True),
        threading.Thread(target=_bounded, args=(agent.stderr, sys.stderr.buffer), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    threading.Thread(target=_stop_when_asked, args=(path, agent), daemon=True).start()
    code = agent.wait()
    # What the agent left running in the background (a server, `cmd &`) goes with it: it
    # would hold the output pipes open, and the launcher with them, to the run's end.
    try:
        os.killpg(agent.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pump in pumps:
        pump.join(PUMP_GRACE)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
