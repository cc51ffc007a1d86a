"""A worker process for the fleet's tests: each task writes a line naming its process to a
file, and may send more tasks (`hop`), or end its process (`die`)."""

import os
from pathlib import Path
from typing import Any

from workers.bus.local import LocalBus
from workers.bus.processes import Child


def serve(folder: str, child: Child) -> None:
    local = LocalBus(threads=2, on_done=child.done)
    bus = child.bus(local)

    def run(task: str, args: tuple[Any, ...]) -> None:
        if task == "die":
            os._exit(3)
        stream, left = args
        with (Path(folder) / f"{child.index}.txt").open("a") as out:
            out.write(f"{stream} {left}\n")
        if left > 0:
            bus.send("hop", f"{stream}/{left}", left - 1)

    local.start(run)
    child.serve(local)
