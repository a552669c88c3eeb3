"""p4src/CONTRACT.md is what the control plane renders entries from: check it against the P4Info
(and the default actions) of the compiled program, so a renamed table or a changed width fails
here instead of in a controller.

The contract is Markdown for people; the parsing below relies only on its table rows and on
backticked `Name(param: width, ...)` signatures, which the file uses consistently.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from testkit.leaf import REPO, STELLAR_P4

CONTRACT = REPO / "p4src" / "CONTRACT.md"
SIZE_P4 = REPO / "p4src" / "include" / "size.p4"
MATCH_KINDS = {"exact": 2, "lpm": 3, "ternary": 4, "range": 5, "optional": 6}
ROW = re.compile(r"^\|(.+)\|\s*$")


def _sizes() -> dict[str, int]:
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^#define\s+(\w+)\s+(\d+)", SIZE_P4.read_text(), re.M)}


def _size(text: str) -> int:
    expr = text.replace("`", "").strip()
    sizes = _sizes()
    return int(eval(re.sub(r"[A-Z_]+", lambda m: str(sizes[m.group(0)]), expr), {}))  # noqa: S307


def _cells(line: str) -> list[str]:
    m = ROW.match(line)
    return [c.strip() for c in m.group(1).split("|")] if m else []


def _sections(text: str, level: str) -> dict[str, str]:
    parts = re.split(rf"^{level} ", text, flags=re.M)
    return {p.splitlines()[0].strip(): p for p in parts[1:]}


def _signatures(text: str) -> dict[str, list[tuple[str, int]]]:
    """`Block.action(a: 16, port0..port7: 9)` -> {name: [(param, width), ...]}."""
    out = {}
    for m in re.finditer(r"`((?:StellarIngress|StellarEgress)\.[\w.]+)\(([^)`]*)\)`", text):
        params = []
        for part in filter(None, (p.strip() for p in m.group(2).split(","))):
            name, width = (s.strip() for s in part.split(":"))
            rng = re.fullmatch(r"(\w+?)(\d+)\.\.\1(\d+)", name)
            names = [f"{rng.group(1)}{i}" for i in range(int(rng.group(2)), int(rng.group(3)) + 1)] \
                if rng else [name]
            params += [(n, int(width)) for n in names]
        out[m.group(1)] = params
    return out


@pytest.fixture(scope="module")
def p4info(stellar_program):
    return stellar_program.p4info


@pytest.fixture(scope="module")
def contract() -> str:
    return CONTRACT.read_text()


def _by_name(entities):
    return {e.preamble.name: e for e in entities}


def test_every_contract_table_exists_with_its_keys(p4info, contract):
    tables = _by_name(p4info.tables)
    seen = 0
    for heading, body in _sections(contract, "###").items():
        m = re.fullmatch(r"`((?:StellarIngress|StellarEgress)\.[\w.]+)`.*", heading)
        if not m:
            continue
        name = m.group(1)
        assert name in tables, f"CONTRACT table {name} is not in the P4Info"
        keys = [(c[0].strip("`"), c[1], int(c[2])) for c in map(_cells, body.splitlines())
                if len(c) == 3 and c[1] in MATCH_KINDS]
        got = [(f.name, f.match_type, f.bitwidth) for f in tables[name].match_fields]
        assert got == [(k, MATCH_KINDS[kind], w) for k, kind, w in keys], name
        seen += 1
    assert seen == len(tables), "every P4Info table must be in the CONTRACT"


def test_every_contract_action_signature_matches(p4info, contract):
    actions = _by_name(p4info.actions)
    sigs = _signatures(contract)
    assert len(sigs) >= 12
    for name, params in sigs.items():
        assert name in actions, f"CONTRACT action {name} is not in the P4Info"
        got = [(p.name, p.bitwidth) for p in actions[name].params]
        assert got == params, name


def test_parameter_tables_match_widths_and_program_defaults(stellar_program, p4info, contract):
    import p4sim
    sw = p4sim.Switch(stellar_program)
    actions = _by_name(p4info.actions)
    for table, action in (("StellarIngress.config.params", "StellarIngress.config.set_params"),
                          ("StellarIngress.config.adapt", "StellarIngress.config.set_adapt"),
                          ("StellarIngress.feedback_lookup.params", "StellarIngress.feedback_lookup.set_feedback"),
                          ("StellarEgress.ecn.floor", "StellarEgress.ecn.set_floor"),
                          ("StellarEgress.ecn.config", "StellarEgress.ecn.set_ecn_params")):
        body = _sections(contract, "###")[next(h for h in _sections(contract, "###")
                                               if h.startswith(f"`{table}`"))]
        rows = [c for c in map(_cells, body.splitlines())
                if len(c) == 4 and c[1].isdigit() and c[0].startswith("`")]
        documented = [(c[0].strip("`"), int(c[1]), int(c[2])) for c in rows]
        assert [(p.name, p.bitwidth) for p in actions[action].params] == \
            [(n, w) for n, w, _ in documented], action
        default_action, default_params = sw.get_default_action(table)
        assert default_action == action
        assert default_params == {n: d for n, _, d in documented}, f"{table} defaults"


def test_registers_counters_meter_and_digests(p4info, contract):
    sections = _sections(contract, "##")
    registers = _by_name(p4info.registers)
    reg_rows = [c for c in map(_cells, sections[next(k for k in sections if "Registers" in k)]
                               .splitlines()) if len(c) >= 5 and c[0].startswith("`")]
    assert reg_rows
    for c in reg_rows:
        for name in re.findall(r"`([\w.]+)`", c[0]):
            if "." not in name and any(r.startswith("Stellar") and r.endswith("." + name)
                                       for r in registers) and name not in registers:
                # "`StellarIngress.elephant.cms_row0` / `cms_row1`": same block as the first name
                prefix = re.findall(r"`([\w.]+)`", c[0])[0].rsplit(".", 1)[0]
                name = f"{prefix}.{name}"
            assert name in registers, f"register {name}"
            assert registers[name].size == _size(c[1]), name
            assert registers[name].type_spec.bitstring.bit.bitwidth == int(c[2]), name
    assert len({n for c in reg_rows for n in re.findall(r"`([\w.]+)`", c[0])}) == len(registers)

    counters = _by_name(p4info.counters)
    cnt_rows = [c for c in map(_cells, sections[next(k for k in sections if "Counters" in k)]
                               .splitlines()) if len(c) == 3 and c[0].startswith("`")]
    assert {c[0].strip("`") for c in cnt_rows} == set(counters)
    for c in cnt_rows:
        assert counters[c[0].strip("`")].size == _size(c[1]), c[0]

    meters = _by_name(p4info.meters)
    assert set(meters) == {"StellarIngress.qos.tenant_meter"}
    assert meters["StellarIngress.qos.tenant_meter"].size == _size("TENANT_SLOTS")

    structs = p4info.type_info.structs
    dig_rows = [c for c in map(_cells, sections[next(k for k in sections if "Digests" in k)]
                               .splitlines()) if len(c) == 3 and c[0].startswith("`")]
    assert {c[0].strip("`") for c in dig_rows} == {d.preamble.name for d in p4info.digests}
    for c in dig_rows:
        fields = [(n.strip(), int(w)) for n, w in
                  (f.split(":") for f in c[1].strip("`").split(","))]
        got = [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in structs[c[0].strip("`")].members]
        assert got == fields, c[0]
