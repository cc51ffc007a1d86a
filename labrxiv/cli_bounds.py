"""The bounds of every integer a command takes: the 64 bits the log's databases store
(BIGINT) and JSON carries. Unbounded, 99999999999999999999 failed deep inside, with a
traceback (orjson's "Integer exceeds 64-bit range", SQLite's OverflowError, PostgreSQL's
DataError); tests/labrxiv/test_cli_int_options.py checks every option has them."""

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

SEED_MAX = INT64_MAX // 1000 - 1
"""The largest `--seed` of a campaign or demo whose labs' seeds still fit 64 bits: lab i
takes `seed * LAB_SEEDS + i` (`workers.lab.campaign.LAB_SEEDS`, 1000; a test checks the
two agree; importing it here would load the workers for every command's options)."""
