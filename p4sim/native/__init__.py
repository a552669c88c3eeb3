"""p4sim's native backend: the v1model pipeline, or a TNA pipe's six blocks (p4sim/native/tna.py),
generated as C from the IR and compiled once.

The Python backend (p4sim/runtime/codegen.py) is the reference.  ``load_native(program)`` gives
the compiled program, or None after ONE warning (per program) naming why: a construct outside
the native subset (with its file:line:col), or no usable C compiler.  A program the native
backend cannot run whole runs whole on the reference: no mix of the two within one program.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Any, Optional


class NativeFallbackWarning(UserWarning):
    """The native backend was asked for but the reference backend runs this program."""


# Program -> its NativeProgram, or the fallback message already warned about (beside the Program,
# so p4sim.program needs no field for it).
_NATIVE: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def load_native(program: Any) -> Optional[Any]:
    """The ``NativeProgram`` for a ``p4sim.Program`` (built once per program), or None after one
    warning."""
    cached = _NATIVE.get(program)
    if cached is not None:
        return cached if not isinstance(cached, str) else None
    from p4sim.native.build import NativeUnavailable
    from p4sim.native.cgen import Unsupported
    from p4sim.native.program import NativeProgram

    where = program.path or "program"
    try:
        if program.ir.arch in ("tna", "t2na"):
            from p4sim.native.tna_pipeline import TnaNativeProgram

            native: Any = TnaNativeProgram(program.ir)
        else:
            native = NativeProgram(program.ir)
    except Unsupported as exc:
        reason = f"{exc.pos}: {exc.what}" if exc.pos else exc.what
        native = f"the native backend does not run {reason} ({where}); using the reference backend"
    except NativeUnavailable as exc:
        native = f"native backend unavailable: {exc}; using the reference backend for {where}"
    _NATIVE[program] = native
    if isinstance(native, str):
        warnings.warn(native, NativeFallbackWarning, stacklevel=3)
        return None
    return native


def native_pipeline(program: Any, ctx: Any) -> Optional[Any]:
    """A ``NativePipeline`` for ``program`` in a switch with context ``ctx``, or None (after
    the one warning) when the reference must run it."""
    native = load_native(program)
    if native is None:
        return None
    from p4sim.native.pipeline import NativePipeline

    return NativePipeline(program.code(), ctx, native)


def native_tna_pipeline(program: Any, ctx: Any) -> Optional[Any]:
    """A ``NativeTnaPipeline`` for a TNA ``program`` in a TnaSwitch with context ``ctx``, or
    None (after the one warning) when the reference must run it."""
    native = load_native(program)
    if native is None:
        return None
    from p4sim.native.tna_pipeline import NativeTnaPipeline

    return NativeTnaPipeline(program.code(), ctx, native)
