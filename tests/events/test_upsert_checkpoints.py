"""INSERT … ON CONFLICT written once for both backends, and the one checkpoint machinery
that projectors and the reactor each use on a table of their own."""

from sqlalchemy import Column, Integer, MetaData, String, Table, select

from events.checkpoints import Checkpoints
from events.engines import make_engine, writing
from events.upsert import insert_ignore, upsert


def test_insert_ignore_keeps_the_stored_row_and_upsert_replaces_it(store_url: str) -> None:
    table = Table(
        "kv",
        MetaData(),
        Column("key", String(20), primary_key=True),
        Column("value", Integer, nullable=False),
        Column("note", String(20)),
    )
    engine = make_engine(store_url)
    try:
        table.create(engine)
        with writing(engine) as conn:
            conn.execute(insert_ignore(conn, table).values(key="a", value=1, note="first"))
            conn.execute(insert_ignore(conn, table).values(key="a", value=2, note="second"))
            conn.execute(upsert(conn, table, {"key": "b", "value": 1, "note": "x"}))
            conn.execute(upsert(conn, table, {"key": "b", "value": 5, "note": "y"}))
            conn.execute(
                upsert(conn, table, {"key": "b", "value": 9, "note": "z"}, table.c.value > 5)
            )
        with engine.connect() as conn:
            rows = conn.execute(select(table).order_by(table.c.key)).all()
        assert [tuple(r) for r in rows] == [("a", 1, "first"), ("b", 5, "y")]
    finally:
        engine.dispose()


def test_two_readers_tables_keep_their_checkpoints_apart(store_url: str) -> None:
    metadata = MetaData()
    ones, others = Checkpoints("ones", metadata), Checkpoints("others", metadata)
    engine = make_engine(store_url)
    try:
        metadata.create_all(engine)
        with writing(engine) as conn:
            ones.ensure(conn, ["r"])
            ones.ensure(conn, ["r"])  # a second ensure leaves it where it is
            assert ones.claim(conn, ["r"]) == {"r": 0}
            assert ones.advance(conn, ["r"], 0, 7)
            assert not ones.advance(conn, ["r"], 0, 9)  # not at 0 any more: already done
        with engine.connect() as conn:
            assert (ones.read(conn, "r"), others.read(conn, "r")) == (7, 0)
            assert others.read_many(conn, ["r"]) == {}
    finally:
        engine.dispose()
