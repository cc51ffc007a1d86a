"""The root jail: mount, network and PID namespaces built as root, commands run as
`nobody` with no capabilities, a cgroup per call (`workers/sandbox/jail.py`)."""

from workers.sandbox.local import LocalSandbox

BACKEND = LocalSandbox
