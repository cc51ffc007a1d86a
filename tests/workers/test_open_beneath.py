"""Root reads a workspace file without following a link anywhere on the way: a folder
swapped for a link to /proc/self (the worker's own environment) or to hidden data is
refused, not read."""

import os
from pathlib import Path

import pytest

from events.blobs import digest
from events.payloads import FileDigest
from workers.sandbox.beneath import open_beneath
from workers.tools.contents import kept_contents
from workers.tools.digest import file_sha256


def test_a_file_under_the_workspace_is_opened(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c.txt").write_text("inside")
    fd = open_beneath(tmp_path, "a/b/c.txt", os.O_RDONLY)
    with os.fdopen(fd) as handle:
        assert handle.read() == "inside"


@pytest.mark.parametrize("relative", ["d/environ", "d", "../x", ""])
def test_a_link_anywhere_on_the_way_is_refused(tmp_path: Path, relative: str) -> None:
    (tmp_path / "d").symlink_to("/proc/self")
    with pytest.raises(OSError):
        os.close(open_beneath(tmp_path, relative, os.O_RDONLY))


def test_hashing_and_keeping_never_read_through_a_swapped_folder(tmp_path: Path) -> None:
    os.environ["LABRXIV_TEST_SECRET"] = "sk-never-in-a-blob"
    try:
        (tmp_path / "d").symlink_to("/proc/self")
        assert file_sha256(tmp_path / "d" / "environ", tmp_path) is None
        own = Path("/proc/self/environ").read_bytes()
        item = FileDigest(path="d/environ", sha256=digest(own), size=len(own))
        assert kept_contents(tmp_path, [item]) == {}
    finally:
        del os.environ["LABRXIV_TEST_SECRET"]


def test_a_fifo_does_not_block_the_worker(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    item = FileDigest(path="pipe", sha256="0" * 64, size=10)
    assert file_sha256(tmp_path / "pipe", tmp_path) is None
    assert kept_contents(tmp_path, [item]) == {}
