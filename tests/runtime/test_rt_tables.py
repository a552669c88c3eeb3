"""Match-action tables: match kinds, priorities, defaults, results, direct counters, API errors."""
import pytest

from irb import NO_ACTION, apply, assign, bit, extern, header, if_, lit, mem, program, struct
from p4sim.errors import RuntimeApiError
from p4sim.frontend import ir
from rtkit import pack, switch_for, unpack

K = header("k_t", ("k1", 32), ("k2", 16), ("out", 8), ("hit", 8))
H = struct("headers", ("k", K))
T = "MyIngress.t"


def table_program(kinds, default_val=0xEE, const_entries=None, counter=False, run_switch=False):
    """Table t keyed on k.k1 (kinds[0]) and k.k2 (kinds[1], optional); set_out(v) writes k.out;
    k.hit records hit (1) / miss (2); with run_switch the apply goes through switch(action_run)."""
    def ingress(b):
        k = mem(b.hdr, "k")
        set_out = b.action("set_out", [("v", bit(8))], lambda v: [assign(mem(k, "out"), v)])
        other = b.action("other", [], lambda: [assign(mem(k, "out"), lit(0x55, 8))])
        keys = [(mem(k, "k1"), kinds[0], "hdr.k.k1")]
        if len(kinds) > 1:
            keys.append((mem(k, "k2"), kinds[1], "hdr.k.k2"))
        dc = None
        if counter:
            dc = extern("direct_counter", "MyIngress.t_counter", ["packets_and_bytes"])
            b.locals.append(dc)
        ce = []
        for ks, (a, args), prio in const_entries or []:
            ce.append(ir.ConstEntry(ks, ir.ActionRef(a(set_out, other), [lit(x, 8) for x in args]), prio))
        t = b.table("t", keys, [set_out, other, NO_ACTION], default=set_out, default_args=[default_val],
                    const_entries=ce, direct_counter=dc, size=8)
        if run_switch:
            sw = ir.SwitchStmt(None, apply(t, "action_run"), [
                ir.SwitchCase([set_out], ir.Block(None, [assign(mem(k, "hit"), lit(10, 8))])),
                ir.SwitchCase([other], ir.Block(None, [assign(mem(k, "hit"), lit(11, 8))])),
                ir.SwitchCase(["default"], ir.Block(None, [assign(mem(k, "hit"), lit(12, 8))]))])
            body = [sw]
        else:
            body = [if_(apply(t, "hit"), assign(mem(k, "hit"), lit(1, 8)), assign(mem(k, "hit"), lit(2, 8)))]
        return body + [assign(mem(b.sm, "egress_spec"), lit(1, 9))]

    return program(H, ingress=ingress)


def lookup(sw, k1, k2=0):
    sw.send(0, pack([(k1, 32), (k2, 16), (0, 8), (0, 8)]))
    out = sw.take_output()
    assert len(out) == 1, sw.stats
    _, _, o, h = unpack(out[0][1], [32, 16, 8, 8])
    return o, h


def test_exact_match_hits_only_equal_key():
    sw = switch_for(table_program(["exact"]))
    sw.insert_entry(T, {"hdr.k.k1": 5}, "MyIngress.set_out", {"v": 1})
    assert lookup(sw, 5) == (1, 1)
    assert lookup(sw, 6) == (0xEE, 2)


def test_table_miss_runs_default_action_and_hit_is_false():
    sw = switch_for(table_program(["exact"], default_val=0x42))
    assert lookup(sw, 1) == (0x42, 2)


def test_set_default_action_replaces_the_miss_action():
    sw = switch_for(table_program(["exact"]))
    sw.set_default_action(T, "MyIngress.other")
    assert lookup(sw, 1) == (0x55, 2)
    assert sw.get_default_action(T) == ("MyIngress.other", {})
    sw.set_default_action(T, "MyIngress.set_out", {"v": 9})
    assert lookup(sw, 1) == (9, 2)
    assert sw.get_default_action(T) == ("MyIngress.set_out", {"v": 9})


def test_lpm_longest_prefix_wins():
    sw = switch_for(table_program(["lpm"]))
    sw.insert_entry(T, {"hdr.k.k1": ("10.0.0.0", 8)}, "set_out", {"v": 8})
    sw.insert_entry(T, {"hdr.k.k1": ("10.1.0.0", 16)}, "set_out", {"v": 16})
    sw.insert_entry(T, {"hdr.k.k1": ("10.1.2.0", 24)}, "set_out", {"v": 24})
    sw.insert_entry(T, {"hdr.k.k1": ("10.1.2.3", 32)}, "set_out", {"v": 32})
    ip = lambda s: int.from_bytes(bytes(int(x) for x in s.split(".")), "big")
    assert lookup(sw, ip("10.1.2.3"))[0] == 32
    assert lookup(sw, ip("10.1.2.4"))[0] == 24
    assert lookup(sw, ip("10.1.3.4"))[0] == 16
    assert lookup(sw, ip("10.2.3.4"))[0] == 8
    assert lookup(sw, ip("11.2.3.4")) == (0xEE, 2)


def test_lpm_zero_length_prefix_matches_everything():
    sw = switch_for(table_program(["lpm"]))
    sw.insert_entry(T, {"hdr.k.k1": (0, 0)}, "set_out", {"v": 1})
    assert lookup(sw, 0xDEADBEEF) == (1, 1)


def test_lpm_with_exact_field_needs_both_to_match():
    sw = switch_for(table_program(["lpm", "exact"]))
    sw.insert_entry(T, {"hdr.k.k1": (0x0A000000, 8), "hdr.k.k2": 7}, "set_out", {"v": 1})
    sw.insert_entry(T, {"hdr.k.k1": (0x0A010000, 16), "hdr.k.k2": 8}, "set_out", {"v": 2})
    assert lookup(sw, 0x0A010101, 7)[0] == 1  # /16 exists but for k2 = 8 only
    assert lookup(sw, 0x0A010101, 8)[0] == 2
    assert lookup(sw, 0x0A010101, 9)[1] == 2


def test_priority_higher_wins_in_ternary():
    sw = switch_for(table_program(["ternary"]))
    sw.insert_entry(T, {"hdr.k.k1": (0x0A000000, 0xFF000000)}, "set_out", {"v": 1}, priority=10)
    sw.insert_entry(T, {"hdr.k.k1": (0x0A0B0000, 0xFFFF0000)}, "set_out", {"v": 2}, priority=5)
    assert lookup(sw, 0x0A0B0C0D)[0] == 1  # both match: priority 10 wins though less specific
    sw.insert_entry(T, {"hdr.k.k1": (0x0A0B0C00, 0xFFFFFF00)}, "set_out", {"v": 3}, priority=20)
    assert lookup(sw, 0x0A0B0C0D)[0] == 3
    assert lookup(sw, 0x0B000000)[1] == 2


def test_range_match_includes_both_bounds():
    sw = switch_for(table_program(["range"]))
    sw.insert_entry(T, {"hdr.k.k1": (100, 200)}, "set_out", {"v": 1}, priority=1)
    assert [lookup(sw, x)[1] for x in (99, 100, 150, 200, 201)] == [2, 1, 1, 1, 2]


def test_optional_match_none_is_wildcard():
    sw = switch_for(table_program(["optional", "optional"]))
    sw.insert_entry(T, {"hdr.k.k1": 5, "hdr.k.k2": None}, "set_out", {"v": 1}, priority=1)
    sw.insert_entry(T, {"hdr.k.k2": 9}, "set_out", {"v": 2}, priority=2)
    assert lookup(sw, 5, 1)[0] == 1
    assert lookup(sw, 6, 9)[0] == 2
    assert lookup(sw, 5, 9)[0] == 2
    assert lookup(sw, 6, 1)[1] == 2


def test_omitted_ternary_field_is_a_wildcard():
    sw = switch_for(table_program(["exact", "ternary"]))
    sw.insert_entry(T, {"hdr.k.k1": 1}, "set_out", {"v": 3}, priority=1)
    assert lookup(sw, 1, 12345)[0] == 3
    (e,) = sw.table_entries(T)
    assert e.match == {"hdr.k.k1": 1} and e.priority == 1


def test_const_entries_earlier_entry_wins_when_no_priority_given():
    ce = [([ir.KsMask(0x10, 0xF0)], (lambda s, o: s, [1]), None),
          ([ir.KsMask(0x12, 0xFF)], (lambda s, o: s, [2]), None)]
    sw = switch_for(table_program(["ternary"], const_entries=ce))
    assert lookup(sw, 0x12)[0] == 1  # first listed wins
    assert lookup(sw, 0x15)[0] == 1
    assert lookup(sw, 0x25)[1] == 2


def test_const_entries_explicit_priority_higher_wins():
    ce = [([ir.KsMask(0x10, 0xF0)], (lambda s, o: s, [1]), 1),
          ([ir.KsMask(0x12, 0xFF)], (lambda s, o: s, [2]), 50)]
    sw = switch_for(table_program(["ternary"], const_entries=ce))
    assert lookup(sw, 0x12)[0] == 2


def test_switch_on_action_run_selects_the_case_of_the_action_that_ran():
    sw = switch_for(table_program(["exact"], run_switch=True))
    sw.insert_entry(T, {"hdr.k.k1": 1}, "set_out", {"v": 1})
    sw.insert_entry(T, {"hdr.k.k1": 2}, "other")
    assert lookup(sw, 1)[1] == 10
    assert lookup(sw, 2)[1] == 11
    sw.set_default_action(T, "NoAction")
    assert lookup(sw, 3)[1] == 12  # NoAction ran: the default label


def test_modify_entry_changes_action_and_delete_removes_it():
    sw = switch_for(table_program(["exact"]))
    sw.insert_entry(T, {"hdr.k.k1": 5}, "set_out", {"v": 1})
    sw.modify_entry(T, {"hdr.k.k1": 5}, "set_out", {"v": 2})
    assert lookup(sw, 5)[0] == 2
    sw.delete_entry(T, {"hdr.k.k1": 5})
    assert lookup(sw, 5)[1] == 2
    assert sw.table_entries(T) == []


def test_direct_counter_counts_packets_and_bytes_of_each_entry():
    sw = switch_for(table_program(["exact"], counter=True))
    sw.insert_entry(T, {"hdr.k.k1": 5}, "set_out", {"v": 1})
    sw.insert_entry(T, {"hdr.k.k1": 6}, "set_out", {"v": 1})
    for _ in range(3):
        lookup(sw, 5)
    assert sw.direct_counter_read(T, {"hdr.k.k1": 5}) == (3, 3 * 8)  # bytes = packet_length
    assert sw.direct_counter_read(T, {"hdr.k.k1": 6}) == (0, 0)
    assert [e.counter for e in sw.table_entries(T)] == [(3, 24), (0, 0)]
    sw.direct_counter_write(T, {"hdr.k.k1": 5}, 0, 0)
    assert sw.direct_counter_read(T, {"hdr.k.k1": 5}) == (0, 0)


def test_match_values_accept_ints_bytes_and_address_strings():
    sw = switch_for(table_program(["exact"]))
    sw.insert_entry(T, {"hdr.k.k1": "10.0.0.1"}, "set_out", {"v": b"\x00\x07"})  # padded bytes are fine
    assert lookup(sw, 0x0A000001)[0] == 7
    sw.insert_entry(T, {"hdr.k.k1": b"\x0a\x00\x00\x02"}, "set_out", {"v": "0x08"})
    assert lookup(sw, 0x0A000002)[0] == 8


def code_of(fn):
    with pytest.raises(RuntimeApiError) as ei:
        fn()
    return ei.value.code


def test_api_errors_use_p4runtime_codes():
    sw = switch_for(table_program(["exact"]))
    sw.insert_entry(T, {"hdr.k.k1": 5}, "set_out", {"v": 1})
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": 5}, "set_out", {"v": 1})) == "ALREADY_EXISTS"
    assert code_of(lambda: sw.delete_entry(T, {"hdr.k.k1": 6})) == "NOT_FOUND"
    assert code_of(lambda: sw.modify_entry(T, {"hdr.k.k1": 6}, "set_out", {"v": 1})) == "NOT_FOUND"
    assert code_of(lambda: sw.insert_entry("MyIngress.nope", {}, "set_out")) == "NOT_FOUND"
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": 1 << 32}, "set_out", {"v": 1})) == "OUT_OF_RANGE"
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": 7}, "set_out", {"v": 256})) == "OUT_OF_RANGE"
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": 7}, "set_out", {})) == "INVALID_ARGUMENT"
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": 7}, "set_out", {"v": 1, "w": 2})) == "INVALID_ARGUMENT"
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": 7}, "nope")) == "NOT_FOUND"
    assert code_of(lambda: sw.insert_entry(T, {}, "set_out", {"v": 1})) == "INVALID_ARGUMENT"  # exact missing
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.zz": 1}, "set_out", {"v": 1})) == "INVALID_ARGUMENT"
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": 7}, "set_out", {"v": 1}, priority=3)) == "INVALID_ARGUMENT"
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": ""}, "set_out", {"v": 1})) == "INVALID_ARGUMENT"


def test_lpm_value_bits_past_prefix_are_rejected():
    sw = switch_for(table_program(["lpm"]))
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": ("10.0.0.1", 24)}, "set_out", {"v": 1})) == "INVALID_ARGUMENT"
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": (0, 33)}, "set_out", {"v": 1})) == "INVALID_ARGUMENT"


def test_ternary_table_requires_priority_and_rejects_value_outside_mask():
    sw = switch_for(table_program(["ternary"]))
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": (1, 1)}, "set_out", {"v": 1})) == "INVALID_ARGUMENT"
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": (3, 1)}, "set_out", {"v": 1}, priority=1)) == "INVALID_ARGUMENT"
    sw.insert_entry(T, {"hdr.k.k1": (1, 1)}, "set_out", {"v": 1}, priority=1)
    sw.insert_entry(T, {"hdr.k.k1": (1, 1)}, "set_out", {"v": 1}, priority=2)  # other priority: other entry
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": (1, 1)}, "set_out", {"v": 1}, priority=2)) == "ALREADY_EXISTS"
    assert code_of(lambda: sw.delete_entry(T, {"hdr.k.k1": (1, 1)}, priority=3)) == "NOT_FOUND"


def test_range_low_above_high_is_rejected():
    sw = switch_for(table_program(["range"]))
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": (5, 4)}, "set_out", {"v": 1}, priority=1)) == "INVALID_ARGUMENT"


def test_table_size_is_enforced():
    sw = switch_for(table_program(["exact"]))
    for i in range(8):
        sw.insert_entry(T, {"hdr.k.k1": i}, "set_out", {"v": 1})
    assert code_of(lambda: sw.insert_entry(T, {"hdr.k.k1": 99}, "set_out", {"v": 1})) == "RESOURCE_EXHAUSTED"
