"""The test tree imports as pytest does: test modules are imported by their file name
(no `__init__.py` in the test folders), so two test files of one name in two folders
make the collection of the whole suite fail with "import file mismatch"."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_two_test_files_share_a_name() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert sorted(name for name, count in names.items() if count > 1) == []
