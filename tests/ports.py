"""A free TCP port on 127.0.0.1 for a server a test starts (the kernel's pick; another
process may take it before the server binds it, which the caller's start-up check sees)."""

import socket


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
