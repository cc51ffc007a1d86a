"""The agent's side of the lab's tools, copied into the sandbox and run there by the
project's interpreter: `launcher.py` (starts the agent, its model base URL on loopback),
`labclient.py` (the socket client), `lab.py` (the `lab` command) and `lab_mcp.py` (the
same tools as an MCP server over stdio).

`launcher.py`, `labclient.py` and `lab.py` use the standard library only and import nothing of
labrxiv: inside the sandbox they are scripts beside each other, not this package.
"""

from pathlib import Path

FOLDER = Path(__file__).resolve().parent
"""Where the files to copy are."""

FILES = ("launcher.py", "labclient.py", "lab.py", "lab_mcp.py")
"""The files to copy into the sandbox, side by side in one folder."""
