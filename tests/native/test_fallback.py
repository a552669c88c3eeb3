"""Choosing the backend, falling back to the reference (one warning naming the construct, with
its file:line:col), no C compiler, and the build cache."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import p4sim
from p4sim.native import NativeFallbackWarning, build
from p4sim.runtime.pipeline import Pipeline, backend_choice
from testkit.native_workloads import L3_P4, l3_switch


def _l3_with(tmp_path: Path, marker: str, replacement: str) -> str:
    src = L3_P4.read_text()
    assert marker in src
    path = tmp_path / "l3_variant.p4"
    path.write_text(src.replace(marker, replacement, 1))
    return str(path)


def test_backend_choice_argument_environment_and_default(monkeypatch):
    monkeypatch.delenv("P4SIM_BACKEND", raising=False)
    assert backend_choice() == "python"
    monkeypatch.setenv("P4SIM_BACKEND", "native")
    assert backend_choice() == "native"
    assert backend_choice("python") == "python"
    with pytest.raises(ValueError, match="unknown p4sim backend 'fast'"):
        backend_choice("fast")
    sw = p4sim.Switch(p4sim.compile(str(L3_P4)))  # from the environment
    assert sw.pipeline.backend == "native"


def test_unsupported_construct_falls_back_whole_with_one_warning(tmp_path):
    path = _l3_with(tmp_path, "        update_checksum(\n", "        update_checksum_with_payload(\n")
    prog = p4sim.compile(path)
    with pytest.warns(NativeFallbackWarning) as caught:
        sw = p4sim.Switch(prog, backend="native")
        sw2 = p4sim.Switch(prog, backend="native")  # same program: no second warning
    assert len(caught) == 1
    msg = str(caught[0].message)
    assert "update_checksum_with_payload()" in msg and "l3_variant.p4:144:" in msg, msg
    assert type(sw.pipeline) is Pipeline and type(sw2.pipeline) is Pipeline
    ref = p4sim.Switch(prog, backend="python")
    frame = l3_switch("python")[1][5]  # TTL 6: routed
    for s in (sw, ref):
        s.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0, 0)}, "MyIngress.ipv4_forward",
                       {"dstAddr": 5, "port": 2})
        s.send(0, frame)
    assert sw.take_output() == ref.take_output() != []


def test_without_a_c_compiler_the_reference_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    prog = p4sim.compile(str(L3_P4))
    with pytest.warns(NativeFallbackWarning, match="no C compiler"):
        sw = p4sim.Switch(prog, backend="native")
    assert type(sw.pipeline) is Pipeline
    assert not list((tmp_path / "cache").rglob("*.so"))


def test_a_negative_control_the_compiler_is_what_was_missing(tmp_path, monkeypatch):
    """With the compiler present and a fresh cache the same load builds and runs natively, and
    a second program object finds the build in the cache instead of compiling again."""
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NativeFallbackWarning)
        sw = p4sim.Switch(p4sim.compile(str(L3_P4)), backend="native")
        assert sw.pipeline.backend == "native"
        built = list((tmp_path / "cache").rglob("*.so"))
        assert len(built) == 1
        stamp = built[0].stat().st_mtime_ns
        build._loaded.clear()
        p4sim.Switch(p4sim.compile(str(L3_P4)), backend="native")
    assert [p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.so")] == [stamp]
    assert build.cache_dir() == tmp_path / "cache"


def test_the_cache_is_never_in_the_repository(monkeypatch):
    monkeypatch.delenv("P4SIM_CACHE_DIR", raising=False)
    assert build.cache_dir() == Path.home() / ".cache" / "p4sim"
    assert Path(p4sim.__file__).resolve().parents[1] not in build.cache_dir().resolve().parents



def test_threads_loading_one_program_into_a_cold_cache_all_run_natively(tmp_path, monkeypatch):
    """The switches of one fabric load the same program from several threads (their P4Runtime
    servers).  cffi's compile changes the working directory while it runs, so builds are
    serialised per process: every thread gets the native pipeline, none falls back."""
    import threading

    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path / "cache"))
    programs = [p4sim.compile(str(L3_P4)) for _ in range(4)]
    kinds: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NativeFallbackWarning)
        threads = [threading.Thread(target=lambda p=p: kinds.append(
            type(p4sim.Switch(p, backend="native").pipeline))) for p in programs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not [w for w in caught if issubclass(w.category, NativeFallbackWarning)]
    assert len(kinds) == 4 and Pipeline not in kinds
    assert len(list((tmp_path / "cache").rglob("*.so"))) == 1
