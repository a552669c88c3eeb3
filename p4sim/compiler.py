"""The back end of ``p4sim compile``: p4sim's counterpart of ``p4c-bm2-ss``.

It writes two files, like p4c:

* a *device config* JSON that the p4sim target loads (through ``--p4`` style start-up or
  P4Runtime's SetForwardingPipelineConfig).  It is self-contained: the preprocessed program text
  travels inside it, so the target never needs the include files or the original paths;
* the P4Info, in the format chosen by the file extension as p4c does (``.txt``/``.txtpb``/
  ``.pbtxt``/``.p4info`` = protobuf text, ``.json`` = protobuf JSON, ``.bin``/``.pb`` = binary).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from google.protobuf import json_format, text_format

from p4sim.errors import CompileError
from p4sim.frontend import ir, load_text, preprocess
from p4sim.p4info import build_p4info

DEVICE_CONFIG_FORMAT = "p4sim-program/1"


def compile_files(path: str | os.PathLike, include_dirs: Iterable[str] = (),
                  defines: Optional[Mapping[str, Optional[str]] | Iterable[str]] = None,
                  out_json: Optional[str | os.PathLike] = None,
                  p4info_out: Optional[str | os.PathLike | Sequence[str | os.PathLike]] = None,
                  arch: Optional[tuple[str, ...]] = None,
                  p4info_format: Optional[str] = None) -> ir.Program:
    """Compile ``path`` and write the requested outputs; returns the checked program.

    ``p4info_out``: one P4Info file or several (p4c's ``--p4runtime-files a.txt,b.bin``), each
    in the format its extension names; ``p4info_format`` (text, json, binary) for files whose
    extension names none.  Nothing is written unless the whole program compiles (a failed
    compile must not leave a stale or half-written config behind for a target to load).
    """
    text = preprocess(path, include_dirs, defines)
    program = load_text(text, str(path))
    if arch is not None and program.arch not in arch:
        raise CompileError(f"{path}: the program is a {program.arch} program, not {' or '.join(arch)} "
                           "(--arch)")
    p4info = build_p4info(program)
    if out_json is not None:
        doc = {
            "format": DEVICE_CONFIG_FORMAT,
            "source": os.path.basename(str(path)),
            "program": text,
            "arch": program.arch,
            "generator": "p4sim compile",
        }
        _write_atomic(out_json, json.dumps(doc, indent=1).encode())
    outputs = [] if p4info_out is None else (
        [p4info_out] if isinstance(p4info_out, (str, os.PathLike)) else list(p4info_out))
    for out in outputs:
        _write_atomic(out, serialize_p4info(p4info, str(out), p4info_format))
    return program


P4INFO_FORMATS = ("text", "json", "binary")
_FORMAT_OF_SUFFIX = {".json": "json", ".bin": "binary", ".pb": "binary", ".txt": "text",
                     ".txtpb": "text", ".pbtxt": "text", ".p4info": "text"}


def serialize_p4info(p4info, filename: str, default_format: Optional[str] = None) -> bytes:
    """Encode P4Info by the file's extension, as p4c does; an extension that names no format
    takes ``default_format`` (``--p4runtime-format``), else text."""
    fmt = _FORMAT_OF_SUFFIX.get(Path(filename).suffix.lower(), default_format or "text")
    if fmt not in P4INFO_FORMATS:
        raise CompileError(f"unknown P4Runtime format {fmt!r} (one of {', '.join(P4INFO_FORMATS)})")
    if fmt == "json":
        return json_format.MessageToJson(p4info, preserving_proto_field_name=False).encode()
    if fmt == "binary":
        return p4info.SerializeToString()
    return text_format.MessageToString(p4info).encode()


def _write_atomic(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def device_config_bytes(text: str, source: str) -> bytes:
    """A device config for already-preprocessed program text (used by tests and tools)."""
    return json.dumps({"format": DEVICE_CONFIG_FORMAT, "source": source, "program": text,
                       "arch": "v1model", "generator": "p4sim"}).encode()


def load_device_config(data: bytes) -> ir.Program:
    """Re-check the program carried by a device config; CompileError if it is not one."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompileError(f"device config is not p4sim JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != DEVICE_CONFIG_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise CompileError(f"device config format is {found!r}, expected "
                           f"{DEVICE_CONFIG_FORMAT!r} (compile the program with p4sim compile)")
    text = doc.get("program")
    if not isinstance(text, str):
        raise CompileError("device config has no 'program' text")
    source = doc.get("source") if isinstance(doc.get("source"), str) else "<device-config>"
    return load_text(text, source)
