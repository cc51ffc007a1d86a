"""Step leases keep a second take of a step out (`workers.lab.lease`).

The same step could be sent twice at once (a reaction sent again: a recorder killed
between sending a run's next step and moving the reactor's checkpoint), and two workers
took it together, running the same tools in the same workspace. A lease only told the
reaper to leave the run alone; now a take gets it only if no take of the same step, or
of a later one, holds it live, and gives it back when it raises or writes nothing.
"""

import pytest

from events import EventStore
from workers.lab.lease import Leases


@pytest.fixture
def leases(store_url: str) -> Leases:
    return Leases(EventStore.from_url(store_url), ttl=60.0)


def test_a_second_take_of_a_held_step_is_kept_out(leases: Leases) -> None:
    with leases.holding("run-x", 4) as first:
        assert first
        with leases.holding("run-x", 4) as second:
            assert not second, "two takes of one step at once"
    # Done, its events on their way to the recorder: the lease is left to run out, and a
    # take of the same step sent again meanwhile stays out.
    with leases.holding("run-x", 4) as again:
        assert not again
    with leases.holding("run-x", 2) as older:
        assert not older, "a stale take of an earlier step took a later step's lease"
    with leases.holding("run-x", 7) as later:
        assert later, "the run's next step is taken while the last one's lease runs out"
    with leases.holding("run-y", 4) as elsewhere:
        assert elsewhere, "another run's step"


def test_a_lease_run_out_is_taken(store_url: str) -> None:
    expired = Leases(EventStore.from_url(store_url), ttl=0.0)
    with expired.holding("run-x", 4) as first:
        assert first
    with expired.holding("run-x", 4) as second:
        assert second  # a take whose lease ran out (it died: the reaper's case)


def test_a_take_that_raises_gives_its_lease_back(leases: Leases) -> None:
    with pytest.raises(ConnectionError), leases.holding("run-x", 4) as held:
        assert held
        raise ConnectionError("the broker went away while publishing")
    with leases.holding("run-x", 4) as retried:
        assert retried, "the task's retry of the step found its own lease held"


def test_a_take_given_back_can_be_taken_again(leases: Leases) -> None:
    with leases.holding("run-x", 4) as held:
        assert held
    leases.give_back("run-x", 4)  # it wrote nothing (a run waiting for its reviews)
    with leases.holding("run-x", 4) as woken:
        assert woken
    leases.give_back("run-x", 3)  # not this step's: left as it is
    with leases.holding("run-x", 4) as again:
        assert not again
