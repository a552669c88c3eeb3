"""Compile generated C with the system C compiler through cffi, cached by content hash.

The cache lives in ``$P4SIM_CACHE_DIR`` or ``~/.cache/p4sim`` (never in the repository): a program
compiles once per machine, and every later load (``p4sim.compile``, every switch of a fabric)
imports the built module.  Builds go to a private temporary directory and are moved into place
atomically, so concurrent processes never see half a module.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RUNTIME_H = HERE / "p4n_runtime.h"
CFLAGS = ["-O2", "-w"]


# One build at a time per process: cffi's compile changes the working directory while it runs,
# and the switches of one fabric load the same program from several threads (P4Runtime servers).
_BUILD_LOCK = threading.Lock()


class NativeUnavailable(Exception):
    """The native backend cannot be built here (no C compiler, no cffi, a failed build)."""


def cache_dir() -> Path:
    d = os.environ.get("P4SIM_CACHE_DIR")
    return Path(d) if d else Path.home() / ".cache" / "p4sim"


def compiler_missing() -> str | None:
    """Why no C compiler can be used, or None."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    exe = cc.split()[0]
    if shutil.which(exe) is None:
        return f"no C compiler ({exe!r} not on PATH)"
    return None


def build(cdef: str, source: str) -> Any:
    """The compiled extension module (``.ffi``, ``.lib``) for this C source."""
    try:
        import cffi
    except ImportError as exc:  # pragma: no cover - cffi is a requirement
        raise NativeUnavailable(f"cffi is not installed ({exc})") from None
    runtime = RUNTIME_H.read_text()
    key = hashlib.sha256("\0".join([cdef, source, runtime, " ".join(CFLAGS), cffi.__version__, sys.version,
                                    sysconfig.get_platform()]).encode()).hexdigest()[:24]
    name = f"_p4n_{key}"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    root = cache_dir() / "native"
    path = root / (name + suffix)
    with _BUILD_LOCK:
        if not path.exists():
            _compile(cffi, cdef, source, name, root, path)
        return _load(name, path)


def _compile(cffi: Any, cdef: str, source: str, name: str, root: Path, path: Path) -> None:
    """Build the module in a private directory, then move it to ``path`` atomically."""
    why = compiler_missing()
    if why:
        raise NativeUnavailable(why)
    root.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=name + ".", dir=root)
    try:
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        ffi.set_source(name, source, include_dirs=[str(HERE)], extra_compile_args=CFLAGS)
        try:
            built = ffi.compile(tmpdir=tmp, verbose=False)
        except Exception as exc:
            raise NativeUnavailable(f"the C compiler failed: {type(exc).__name__}: {exc}") from None
        os.replace(built, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_loaded: dict[str, Any] = {}


def _load(name: str, path: Path) -> Any:
    mod = _loaded.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _loaded[name] = mod
    return mod
