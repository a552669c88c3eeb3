"""Entry priorities under each convention (tests/runtime/p4/priorities.p4).

* ``@priority(N)`` on const entries (the old annotation p4c copies into BMv2's JSON): BMv2 gives
  precedence to the smallest N.
* ``entries`` with ``priority = N:`` and entries without: numbered as p4c's front end does
  (frontends/p4/entryPriorities.cpp) from ``largest_priority_wins`` and ``priority_delta``.
* entries written by the control plane (P4Runtime): the higher priority wins.
"""
from pathlib import Path

import pytest

import p4sim
from p4sim.errors import RuntimeApiError

PRIO = Path(__file__).parent / "p4" / "priorities.p4"


@pytest.fixture()
def sw():
    return p4sim.Switch(p4sim.compile(str(PRIO)))


def run(sw, op: int, a: int) -> int:
    sw.send(0, bytes([op, a, 0]))
    [(port, out)] = sw.take_output()
    assert port == 1
    return out[2]


def test_legacy_priority_annotation_smallest_number_wins(sw):
    assert run(sw, 1, 0x05) == 2  # @priority(1) beats @priority(3) although it comes later
    assert run(sw, 1, 0x06) == 11
    assert run(sw, 1, 0x07) == 1


def test_entries_largest_priority_wins_by_default(sw):
    assert run(sw, 2, 0x05) == 3  # 100 beats 90 and 50
    assert run(sw, 2, 0x15) == 4  # 90 beats 50
    assert run(sw, 2, 0x33) == 5


def test_entry_without_priority_gets_previous_minus_priority_delta(sw):
    t = "I.largest"
    assert [e.priority for e in sw.table_entries(t)] == [100, 90, 50]
    # a control-plane entry at 95 beats the implied 90; at 85 it does not
    sw.insert_entry(t, {"hdr.c.a": (0x15, 0xFF)}, "I.set", {"v": 77}, priority=95)
    assert run(sw, 2, 0x15) == 77
    sw.delete_entry(t, {"hdr.c.a": (0x15, 0xFF)}, priority=95)
    sw.insert_entry(t, {"hdr.c.a": (0x15, 0xFF)}, "I.set", {"v": 78}, priority=85)
    assert run(sw, 2, 0x15) == 4


def test_entries_smallest_priority_wins_when_largest_priority_wins_is_false(sw):
    assert run(sw, 3, 0x05) == 6  # 10 beats 20 and 30
    assert run(sw, 3, 0x15) == 7  # 20 beats 30
    assert run(sw, 3, 0x33) == 8


def test_entries_without_any_priority_earlier_entry_wins(sw):
    assert run(sw, 4, 0x05) == 9
    assert run(sw, 4, 0x06) == 10
    assert [e.priority for e in sw.table_entries("I.implied")] == [2, 1]


def test_p4runtime_entries_higher_priority_wins(sw):
    t = "I.implied"
    sw.insert_entry(t, {"hdr.c.a": (0x07, 0xFF)}, "I.set", {"v": 40}, priority=1000)
    sw.insert_entry(t, {"hdr.c.a": (0x07, 0x0F)}, "I.set", {"v": 41}, priority=2000)
    assert run(sw, 4, 0x07) == 41
    sw.modify_entry(t, {"hdr.c.a": (0x07, 0x0F)}, "I.set", {"v": 42}, priority=2000)
    assert run(sw, 4, 0x07) == 42
    sw.delete_entry(t, {"hdr.c.a": (0x07, 0x0F)}, priority=2000)
    assert run(sw, 4, 0x07) == 40


def test_initial_entries_are_writable_except_those_marked_const(sw):
    t = "I.largest"
    sw.modify_entry(t, {"hdr.c.a": (0x05, 0x0F)}, "I.set", {"v": 44}, priority=90)
    assert run(sw, 2, 0x15) == 44
    with pytest.raises(RuntimeApiError):
        sw.modify_entry(t, {"hdr.c.a": (0x05, 0xFF)}, "I.set", {"v": 45}, priority=100)
    with pytest.raises(RuntimeApiError):
        sw.delete_entry(t, {"hdr.c.a": (0x05, 0xFF)}, priority=100)
    assert run(sw, 2, 0x05) == 3
