"""The parameter declarations (control_plane/params.py) against everything that derives from them:
the P4 defaults of both programs, the contract's action parameters, what the render writes, the
render-time refusal of keys an architecture does not implement, docs/parameters.md, and the
architecture registry (arches.py; tests/test_structure.py checks that no import circles remain)."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from control_plane import archnames, arches, contract, p4consts, params, render_tna
from control_plane.model import CLASSES, load_fabric, load_fabric_text
from control_plane.params import P4, ControlPlane, Fixed, Refused
from control_plane.render import RenderError, render_fabric

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fabrics" / "lab.yaml"


def _define_file(arch: str) -> Path:
    return ROOT / params.DEFINE_FILES[arch]


# ---------------------------------------------------------------------------------------------
# declarations <-> P4
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", params.ARCHES)
def test_every_p4_default_equals_its_declaration(arch: str) -> None:
    checked = 0
    for p in params.PARAMS:
        impl = p.implementation(arch)
        if isinstance(impl, (P4, Fixed)) and impl.define:
            value = impl.value if isinstance(impl, Fixed) else p.default
            assert p4consts.constant(_define_file(arch), impl.define) == impl.to_p4(value), \
                f"{arch}: {impl.define} is not {p.name}'s declared {value!r} x {impl.scale}"
            checked += 1
    assert checked >= {"v1model": 20, "tna": 5}[arch]


@pytest.mark.parametrize("arch,pattern", [("v1model", r"DEFAULT_\w+"), ("tna", r"TNA_\w+")])
def test_every_tunable_define_is_declared(arch: str, pattern: str) -> None:
    """A default the data plane adds to define.p4 needs its declaration (params.py) too."""
    declared = {impl.define for p in params.PARAMS for impl in p.arches.values()
                if isinstance(impl, (P4, Fixed)) and impl.define}
    found = {name for name in p4consts.defines(_define_file(arch)) if re.fullmatch(pattern, name)}
    assert found, f"no {pattern} in {params.DEFINE_FILES[arch]}"
    assert not found - declared, f"undeclared P4 defaults: {sorted(found - declared)}"


def test_the_drain_margin_is_one_value_in_both_programs() -> None:
    p = params.param("dataplane.flowlet.drain_margin_us")
    assert p4consts.constant(_define_file("v1model"), "DEFAULT_DRAIN_MARGIN_US") * 1000 == \
        p4consts.constant(_define_file("tna"), "TNA_DRAIN_MARGIN_NS") == p.implementation("tna").to_p4(p.default)


def test_the_tna_penalty_is_the_programs() -> None:
    assert render_tna.TNA_DRE_DELAY_PENALTY == p4consts.constant(_define_file("tna"), "TNA_DRE_DELAY_PENALTY") == 256


def test_declarations_restate_no_other_source() -> None:
    """The few values params.py holds that another file also owns agree with it."""
    assert params.ECN_PROB_ONE == p4consts.constant(_define_file("v1model"), "ECN_PROB_ONE")
    assert params.param("dataplane.tna_profile").choices == tuple(contract.TNA_PROFILES)
    assert params.param("dataplane.default_class").choices == CLASSES
    assert contract.PLACEMENT_DEFAULTS == {n: p4consts.constant(_define_file("v1model"), f"DEFAULT_{n.upper()}")
                                           for n in contract.PLACEMENT_DEFAULTS}


def test_an_unreadable_p4_constant_is_an_error(tmp_path: Path) -> None:
    source = tmp_path / "define.p4"
    source.write_text("#define PLAIN 0x10 /* sixteen */\nconst bit<16> TYPED = 7;\n#define EXPR (1 << 4)\n"
                      "#define MACRO(x) x\n/* #define COMMENTED 3 */\n")
    assert p4consts.constant(source, "PLAIN") == 16 and p4consts.constant(source, "TYPED") == 7
    for name, why in (("EXPR", "not a plain number"), ("MACRO", "not a plain number"),
                      ("COMMENTED", "no #define or const"), ("ABSENT", "no #define or const")):
        with pytest.raises(p4consts.P4ConstantError, match=why):
            p4consts.constant(source, name)
    with pytest.raises(p4consts.P4ConstantError, match="cannot read"):
        p4consts.constant(tmp_path / "missing.p4", "PLAIN")
    with pytest.raises(p4consts.P4ConstantError, match="NO_SUCH_SIZE"):
        contract.resolve_size("NO_SUCH_SIZE")


def test_declared_fields_are_the_contracts_action_parameters() -> None:
    for p in params.PARAMS:
        for arch, impl in p.arches.items():
            if not isinstance(impl, P4) or not impl.field:
                continue
            actions = {a: dict(ps) for t in contract.ARCHES[arch].tables.values() for a, ps in t.actions.items()}
            action, _, name = impl.field.rpartition(".")
            if impl.field in actions:        # the action itself (a parameter that selects rows)
                continue
            assert action in actions and name in actions[action], f"{p.name} on {arch}: no {impl.field}"


@pytest.mark.parametrize("arch", params.ARCHES)
def test_the_render_writes_the_declared_values(arch: str) -> None:
    """Every non-derived binding's action parameter carries the declared value x scale."""
    fabric = load_fabric(LAB)
    entries = [e for doc in render_fabric(fabric, arch=arch).documents.values() for e in doc["entries"]]
    checked = 0
    for p in params.PARAMS:
        impl = p.implementation(arch)
        if not isinstance(impl, P4) or impl.derived or not impl.field or impl.field.count(".") < 2:
            continue
        action, _, name = impl.field.rpartition(".")
        value = params.model_value(fabric.dataplane, p) if p.yaml else p.default
        written = [e["params"][name] for e in entries if e.get("action") == action and name in e["params"]]
        assert written and set(written) == {impl.to_p4(value)}, f"{arch}: {impl.field} = {set(written)}"
        checked += 1
    assert checked >= {"v1model": 15, "tna": 5}[arch]


# ---------------------------------------------------------------------------------------------
# every YAML key, rendered on every architecture: implemented or refused with file:line:key
# ---------------------------------------------------------------------------------------------
def _fabric_with_every_key(values: dict[str, object] | None = None) -> tuple[str, dict[str, int]]:
    """The lab with a dataplane section that sets every declared key (its default unless
    ``values`` says otherwise), one key per line; also each key's line."""
    values = values or {}
    lab = LAB.read_text()
    head, _, rest = lab.partition("\ndataplane:\n")
    tail = rest[rest.index("\nswitches:"):]
    classes = re.search(r"\n(  classes:.*?)\n  scheduler:", rest, re.S).group(1)
    lines = head.split("\n") + ["dataplane:"]
    where: dict[str, int] = {}
    section = None
    for p in params.PARAMS:
        if not p.yaml:
            continue
        parts = p.name.split(".")[1:]
        if p.kind == "section":
            where[p.name] = len(lines) + 2
            lines += classes.split("\n")
            continue
        if len(parts) == 2 and parts[0] != section:
            section = parts[0]
            lines.append(f"  {section}:")
        value = values.get(p.name, p.default)
        text = str(value).lower() if isinstance(value, bool) else str(value)
        lines.append(("    " if len(parts) == 2 else "  ") + f"{parts[-1]}: {text}")
        where[p.name] = len(lines)
        section = parts[0] if len(parts) == 2 else section
    return "\n".join(lines) + tail, where


def _expected_refusals(arch: str, values: dict[str, object]) -> set[str]:
    out = set()
    for p in params.PARAMS:
        impl = p.implementation(arch)
        if p.yaml and (isinstance(impl, Refused)
                       or isinstance(impl, Fixed) and values.get(p.name, p.default) != impl.value):
            out.add(p.name)
    return out


@pytest.mark.parametrize("arch", params.ARCHES)
@pytest.mark.parametrize("values", [{}, {"dataplane.flowlet.hysteresis_us": 20, "dataplane.tna_profile": "no-dre",
                                         "dataplane.flowlet.gap_moves": False, "dataplane.malformed_l4": "forward",
                                         "dataplane.flowlet.report_path_changes": True}],
                         ids=["defaults", "other-values"])
def test_every_yaml_key_is_implemented_or_refused(arch: str, values: dict[str, object]) -> None:
    text, where = _fabric_with_every_key(values)
    fabric = load_fabric_text(text, "every-key.yaml")
    assert {k for k, _, _ in fabric.dataplane_keys if params.covering(k)} >= \
        {p.name for p in params.PARAMS if p.yaml and p.kind != "section"}
    expected = _expected_refusals(arch, values)
    if not expected:
        render_fabric(fabric, arch=arch)
        return
    with pytest.raises(RenderError) as caught:
        render_fabric(fabric, arch=arch)
    refused = set(re.findall(r"every-key\.yaml:\d+: ([\w.]+): ", str(caught.value)))
    assert refused == expected
    for key in expected:
        impl = params.param(key).implementation(arch)
        reason = impl.reason
        assert f"every-key.yaml:{where[key]}: {key}: " in str(caught.value) and reason in str(caught.value)
    # negative control: without the refused keys the same fabric renders
    kept = "\n".join(line for n, line in enumerate(text.split("\n"), start=1)
                     if n not in {where[k] for k in expected})
    render_fabric(load_fabric_text(kept, "every-key.yaml"), arch=arch)


def test_the_tna_refuses_the_adaptive_ecn_keys_and_v1model_takes_them() -> None:
    text = LAB.read_text().replace("    kmin_us: 4\n", "    window_us: 16\n    kmin_us: 4\n")
    fabric = load_fabric_text(text, "lab.yaml")
    line = text.split("\n").index("    window_us: 16") + 1
    ecn = [e for e in render_fabric(fabric).documents["leaf1"]["entries"]
           if e["action"] == "StellarEgress.ecn.set_ecn_params"]
    assert ecn and all(e["params"]["window_us"] == 16 for e in ecn)
    with pytest.raises(RenderError, match=rf"lab\.yaml:{line}: dataplane\.ecn\.window_us: not implemented on tna"):
        render_fabric(fabric, arch="tna")


def test_a_model_built_in_code_keeps_the_declared_ranges() -> None:
    lab = load_fabric(LAB)
    for arch in params.ARCHES:
        short = replace(lab, dataplane=replace(lab.dataplane, flowlet=replace(lab.dataplane.flowlet, timeout_us=0)))
        with pytest.raises(RenderError, match="dataplane.flowlet.timeout_us = 0 is below the minimum 1 us"):
            render_fabric(short, arch=arch)


def test_every_param_says_what_each_architecture_does() -> None:
    kinds = (P4, Fixed, Refused, ControlPlane)
    for p in params.PARAMS:
        assert set(p.arches) == set(params.ARCHES), p.name
        assert all(isinstance(i, kinds) for i in p.arches.values()), p.name
        if p.yaml and p.kind in ("int", "number"):
            assert params.range_problem(p, p.default) == "", f"{p.name}: the default breaks the range"
    assert len({p.name for p in params.PARAMS}) == len(params.PARAMS)


def test_docs_parameters_md_is_current() -> None:
    committed = (ROOT / "docs" / "parameters.md").read_text()
    assert committed == params.markdown(), "regenerate: python -m control_plane.params > docs/parameters.md"


# ---------------------------------------------------------------------------------------------
# the architecture registry
# ---------------------------------------------------------------------------------------------
def test_one_registry_names_the_architectures() -> None:
    assert tuple(arches.REGISTRY) == params.ARCHES == tuple(contract.ARCHES) == archnames.ARCHES
    for name, arch in arches.REGISTRY.items():
        assert (ROOT / arch.program).is_file() and (arch.templates / "leaf.j2").is_file()
        assert callable(arch.render_switch()) and arch.contract.arch == name and arch.names.arch == name
    assert arches.get("tna").controller_class().__name__ == "TnaController"
    with pytest.raises(ValueError, match="unknown architecture 'psa'"):
        arches.get("psa")
