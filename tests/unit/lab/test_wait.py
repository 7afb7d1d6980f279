"""The one bounded wait (module_utils/lab/wait.py): done, timed out, and what check raises."""
import pytest

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.wait import WaitTimeout, wait_until


def fake_clock(step):
    ticks = iter(range(0, 10 ** 6, step))
    return lambda: next(ticks)


def test_done_returns_what_the_last_look_saw_and_how_long_it_took():
    seen, pauses, lefts = iter(["Pending", "Pending", "Running"]), [], []

    def look(left):
        lefts.append(left)
        phase = next(seen)
        return phase == "Running", phase

    value, waited = wait_until("phase Running", look, 60, interval=2, clock=fake_clock(5),
                               pause=pauses.append)
    assert value == "Running" and waited == 15
    assert pauses == [2, 2]                       # between looks, never after the last
    assert lefts == [60, 55, 50]                  # the seconds still to wait, for a blocking look


def test_the_timeout_says_what_was_awaited_for_how_long_and_the_last_thing_seen():
    looks = []

    def look(_left):
        looks.append(1)
        return False, {"phase": "Pending", "look": len(looks)}

    with pytest.raises(WaitTimeout) as err:
        wait_until("phase Running", look, 30, clock=fake_clock(10), pause=lambda s: None,
                   describe=lambda pod: "phase %s" % pod["phase"])
    assert str(err.value) == "waited 30s for phase Running; last seen: phase Pending"
    assert err.value.waited == 30 and err.value.timeout == 30 and err.value.what == "phase Running"
    assert err.value.last == {"phase": "Pending", "look": 3} and len(looks) == 3
    assert isinstance(err.value, LabError)       # a refusal like every other: modules report it


def test_a_timeout_of_zero_is_one_look():
    looks = []

    def look(_left):
        looks.append(1)
        return False, "absent"

    with pytest.raises(WaitTimeout, match="waited 0s for x; last seen: absent"):
        wait_until("x", look, 0, pause=lambda s: pytest.fail("no pause after the only look"))
    assert len(looks) == 1
    # one look waits nothing, however slow the read (a CI run of 35f5c71: a kept pod_wait record read
    # under load reported waited 0.1)
    assert wait_until("x", lambda _left: (True, "here"), 0, clock=fake_clock(7)) == ("here", 0.0)


def test_what_check_raises_propagates_unchanged():
    class Boom(Exception):
        pass

    def look(_left):
        raise Boom("the API server refused")

    with pytest.raises(Boom, match="the API server refused"):
        wait_until("anything", look, 60, pause=lambda s: None)


def test_the_default_clock_and_pause_really_wait():
    calls = []

    def look(_left):
        calls.append(1)
        return len(calls) == 3, len(calls)

    value, waited = wait_until("three looks", look, 5, interval=0.01)
    assert value == 3 and 0.015 <= waited < 5


def test_the_tests_wait_through_the_one_bounded_wait():
    """tests/lab_testing.wait_for returns what the check found, or fails naming what was awaited and
    what was last seen; no test keeps a deadline loop of its own."""
    import re

    from lab_testing import TESTS, wait_for
    looks = iter([None, 0, "found"])
    assert wait_for("the third look", lambda: next(looks), 5, interval=0) == "found"
    with pytest.raises(pytest.fail.Exception, match=r"waited 0s for nothing; last seen: \[\]"):
        wait_for("nothing", lambda: [], 0)
    loops = [str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py")
             if "_corpus" not in str(p) and p.name != "lab_testing.py"
             and re.search(r"deadline\s*=|time\.monotonic\(\)\s*\+", p.read_text())]
    assert loops == []
