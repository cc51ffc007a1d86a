"""The fleet's pipes (`workers.bus.processes.wire`) within the open-file limit a normal
user has by default."""

import subprocess
import sys
import textwrap

from labrxiv.wiring import MAX_PROCESSES


def test_the_pipes_of_the_most_processes_allowed_fit_the_usual_open_file_limit() -> None:
    """`--processes` allows MAX_PROCESSES; the parent makes a pipe from every process to
    every child at once (about 2 * N * (N + 1) open files), beyond a soft limit of 1024
    from about 22 processes: the campaign ended with "Too many open files"."""
    code = textwrap.dedent(
        f"""
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
        from workers.bus.processes import wire
        wire({MAX_PROCESSES})
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
