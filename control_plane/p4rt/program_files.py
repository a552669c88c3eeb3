"""The program a switch runs: P4Info and device config, as read from the compiler's files."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2


@dataclass
class ProgramFiles:
    """What SetForwardingPipelineConfig carries: the P4Info and the target's device config."""

    p4info: p4info_pb2.P4Info
    device_config: bytes

    @property
    def cookie(self) -> int:
        """A 64-bit fingerprint of P4Info + device config: the pipeline's identity on a switch."""
        digest = hashlib.sha256(self.p4info.SerializeToString(deterministic=True) + self.device_config).digest()
        return int.from_bytes(digest[:8], "big")

    @classmethod
    def load(cls, device_config: str | Path, p4info: str | Path) -> "ProgramFiles":
        """Files as `p4c-bm2-ss` or `p4sim compile` write them (P4Info in text, JSON or binary)."""
        info = p4info_pb2.P4Info()
        data = Path(p4info).read_bytes()
        suffix = Path(p4info).suffix.lower()
        if suffix in (".bin", ".pb"):
            info.ParseFromString(data)
        elif suffix == ".json":
            from google.protobuf import json_format
            json_format.Parse(data.decode(), info)
        else:
            text_format.Merge(data.decode(), info)
        return cls(info, Path(device_config).read_bytes())

    @classmethod
    def compile(cls, source: str | Path, include_dirs: Sequence[str | Path] = (), out_dir: Optional[Path] = None,
                defines: Optional[Mapping[str, str]] = None, arch: str = "v1model",
                target: str = "p4sim") -> "ProgramFiles":
        """Compile through ``p4build`` (the one compile step per target: ``p4sim compile`` by
        default) into ``out_dir`` (a temp dir if None).  Raises ``p4build.BuildError``."""
        import tempfile

        from p4build import compile_program

        with tempfile.TemporaryDirectory() as tmp:
            where = Path(out_dir) if out_dir is not None else Path(tmp)
            built = compile_program(source, target, arch, where, include_dirs,
                                    defines=[f"{k}={v}" for k, v in (defines or {}).items()])
            return cls.load(*built.files())
