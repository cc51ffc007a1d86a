"""`labrxiv`'s command line imports the export modules only when an export command runs:
loading the command line (what every command pays) leaves `projections.exports` alone."""

import subprocess
import sys

import orjson


def test_the_command_line_does_not_import_the_exports_at_start_up() -> None:
    code = (
        "import sys, orjson, labrxiv.cli\n"
        "found = sorted(m for m in sys.modules if m.startswith('projections.exports'))\n"
        "print(orjson.dumps(found).decode())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout) == []
