"""Differential check of the packet corpus: the same frames through two targets running
stellar.p4 with the campaign leaf's entries, forwarding decisions compared frame by frame.

Run by ``bench/fuzz_diff.py`` and by tests/robustness/test_packet_fuzz.py.  Each target is a separate process as a user starts it (``p4sim run`` or ``simple_switch_grpc``,
``--priority-queues 8``, ports over nanomsg as PTF's ``--platform nn``), programmed over
P4Runtime with exactly the entries of ``testkit.packet_fuzz.campaign_leaf`` (recorded from the
Leaf class, not copied).  After every corpus frame a sentinel frame (UDP to host port 1, carrying the frame
number) is sent; the frame's outputs are what arrives up to the sentinel plus a short grace, so
a drop is known without waiting for a timeout.

A decision is "drop", or the set of (egress port, bytes after the Ethernet addresses) -- an
uplink counts as "uplink" whichever of the two was chosen, because the adaptive path choice
depends on timing (wall clocks differ between targets) and the rewrite MACs follow the port.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from bmv2_env.target import stop_process

ROOT = Path(__file__).resolve().parents[1]

P4TOOLS_BIN = Path("/opt/p4tools/bin")
HDR = struct.Struct("<iii")
PACKET_IN, PACKET_OUT = 3, 4
SENTINEL = b"STELLAR-SENTINEL"
GRACE_S = 0.005


def _which(tool: str) -> Optional[str]:
    found = shutil.which(tool)
    if found:
        return found
    cand = P4TOOLS_BIN / tool
    return str(cand) if cand.is_file() and os.access(cand, os.X_OK) else None


def bmv2_missing() -> Optional[str]:
    """Why the BMv2 side cannot run here, or None."""
    missing = [t for t in ("simple_switch_grpc", "p4c-bm2-ss") if _which(t) is None]
    if missing:
        return (f"{' and '.join(missing)} not on PATH nor in {P4TOOLS_BIN} "
                f"({'READY marker present' if Path('/opt/p4tools/READY').exists() else 'no READY marker'})")
    return None


# -- the leaf's entries, recorded -------------------------------------------------------------
class _Recorder:
    """Stands in for p4sim.Switch while testkit.leaf.Leaf installs its entries."""

    def __init__(self, *_a: Any, **_k: Any) -> None:
        self.calls: list[tuple] = []

    def insert_entry(self, table, match, action, params=None, priority=None):
        self.calls.append(("insert", table, match, action, params or {}, priority))

    def set_default_action(self, table, action, params=None):
        self.calls.append(("default", table, None, action, params or {}, None))

    def __getattr__(self, name):
        raise AttributeError(f"the leaf setup called {name}, which the differential does not replay")


def leaf_calls() -> list[tuple]:
    from testkit.packet_fuzz import campaign_leaf

    class Module:
        Switch = _Recorder

    return campaign_leaf(Module, program=None).sw.calls


def _int(v: Any) -> int:
    if isinstance(v, int):
        return v
    if isinstance(v, str) and ":" in v:
        return int(v.replace(":", ""), 16)
    if isinstance(v, str):
        import ipaddress

        return int(ipaddress.IPv4Address(v))
    raise TypeError(f"value {v!r}")


def install_leaf(client, skip: Optional[Callable[[tuple], bool]] = None) -> int:
    """Replay the leaf's entries over P4Runtime; ``skip(call)``: leave that one out (a broken
    switch, the negative control of the differential)."""
    from p4sim.p4rt.client import update

    n = 0
    for call in leaf_calls():
        kind, table, match, action, params, priority = call
        if skip is not None and skip(call):
            continue
        conv = {k: (tuple(_int(x) for x in v) if isinstance(v, tuple) else _int(v))
                for k, v in (match or {}).items()}
        entry = client.table_entry(table, conv, action, {k: _int(v) for k, v in params.items()},
                                   priority=priority or 0, default=(kind == "default"))
        client.write(update("MODIFY" if kind == "default" else "INSERT", table_entry=entry))
        n += 1
    return n


# -- one target -------------------------------------------------------------------------------
@dataclass
class TargetRun:
    target: str
    decisions: list[Any] = field(default_factory=list)
    lost_sentinels: int = 0
    seconds: float = 0.0


def _sentinel(i: int) -> bytes:
    from scapy.all import IP, UDP, Ether, Raw, raw

    return raw(Ether(src="02:00:00:00:09:09", dst="02:00:00:00:00:03") / IP(src="10.0.2.7", dst="10.0.1.1")
               / UDP(sport=9, dport=9) / Raw(SENTINEL + struct.pack("!I", i)))


def classify(outputs: list[tuple[int, bytes]]) -> Any:
    from testkit.leaf import UPLINKS

    if not outputs:
        return "drop"
    return tuple(sorted(("uplink" if p in UPLINKS else p, f[12:]) for p, f in outputs))


def _owner(frames: list[tuple[int, bytes, str]], i: int, out: bytes, back: int = 8) -> int:
    """Which frame an output belongs to: frame ``i`` (whose window it arrived in), unless it is
    an earlier frame's late copy -- an uplink's egress thread can trail the sentinel.  An output
    keeps its frame's length and tail (the switch rewrites MACs, TTL and checksum only), so the
    newest of the last ``back`` frames with that length and the same last 16 bytes owns it."""
    if len(out) >= 40:
        for k in range(i, max(-1, i - back), -1):
            data = frames[k][1]
            if len(data) == len(out) and data[-16:] == out[-16:]:
                return k
    return i


def run_target(target: str, frames: list[tuple[int, bytes, str]], work: Path,
               skip: Optional[Callable[[tuple], bool]] = None, grace_s: float = GRACE_S) -> TargetRun:
    """``grace_s``: how long after a frame's sentinel its own outputs may still arrive (BMv2
    runs each egress port in its own thread, so an uplink copy can trail the sentinel)."""
    import pynng

    from bmv2_env.env import compile_program, free_port, wait_for_grpc
    from p4sim.p4rt.client import P4RuntimeClient, load_p4info
    from testkit.leaf import STELLAR_P4

    work.mkdir(parents=True, exist_ok=True)
    saved_path = os.environ["PATH"]
    if target == "bmv2":
        os.environ["PATH"] = f"{P4TOOLS_BIN}{os.pathsep}{saved_path}"
    try:
        config, info = compile_program(target, STELLAR_P4, work / "build", [], [])
    finally:
        os.environ["PATH"] = saved_path
    grpc_addr = f"127.0.0.1:{free_port()}"
    ipc = f"ipc://{(work / 'ports.ipc').resolve()}"
    from bmv2_env.commands import SwitchOptions, switch_command

    # each its own Thrift port: BMv2 serves one, and p4sim holds one the same way (default 9090,
    # which another switch on this machine may have)
    opts = SwitchOptions(grpc_addr, device_id=1, packet_in=ipc, cpu_port=255, priority_queues=8, quiet=True,
                         thrift_port=free_port())
    cmd = switch_command(target, opts, binary=_which("simple_switch_grpc") or "simple_switch_grpc")
    log = work / "switch.log"
    with open(log, "w") as logf:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=logf, stderr=subprocess.STDOUT)
    run = TargetRun(target)
    sock = None
    client = None
    try:
        wait_for_grpc(grpc_addr, proc, log)
        client = P4RuntimeClient(grpc_addr, device_id=1, election_id=(0, 1))
        client.connect()
        client.set_pipeline(load_p4info(str(info)), config.read_bytes())
        install_leaf(client, skip)
        sock = pynng.Pair0(dial=ipc)
        sock.recv_timeout = 1000
        t0 = time.perf_counter()
        per_frame: list[list[tuple[int, bytes]]] = []
        for i, (port, data, _what) in enumerate(frames):
            sock.send(HDR.pack(PACKET_IN, port, len(data)) + data)
            sent = _sentinel(i)
            sock.send(HDR.pack(PACKET_IN, 3, len(sent)) + sent)
            outs: list[tuple[int, bytes]] = []
            per_frame.append(outs)
            done_at = None
            while True:
                if done_at is not None:
                    left = done_at - time.perf_counter()
                    if left <= 0:
                        break
                    sock.recv_timeout = max(1, int(left * 1000))
                try:
                    msg = sock.recv()
                except pynng.Timeout:
                    if done_at is None:
                        run.lost_sentinels += 1
                    break
                finally:
                    sock.recv_timeout = 1000
                mtype, oport, _n = HDR.unpack_from(msg)
                payload = msg[HDR.size:]
                if mtype != PACKET_OUT:
                    continue
                marker = payload.find(SENTINEL)
                if marker >= 0:
                    if struct.unpack_from("!I", payload, marker + len(SENTINEL))[0] == i:
                        done_at = time.perf_counter() + grace_s
                    continue
                per_frame[_owner(frames, i, payload)].append((oport, payload))
        run.decisions = [classify(o) for o in per_frame]
        run.seconds = time.perf_counter() - t0
    finally:
        if sock is not None:
            sock.close()
        if client is not None:
            client.close()
        stop_process(proc)
    return run


@dataclass
class DiffResult:
    a: TargetRun
    b: TargetRun
    frames: list[tuple[int, bytes, str]]

    @property
    def agree(self) -> int:
        return sum(x == y for x, y in zip(self.a.decisions, self.b.decisions))

    @property
    def agreement(self) -> float:
        return self.agree / max(1, len(self.frames))

    def disagreements(self) -> list[str]:
        out = []
        for i, (x, y) in enumerate(zip(self.a.decisions, self.b.decisions)):
            if x != y:
                port, data, what = self.frames[i]
                show = lambda d: d if d == "drop" else [(p, len(b)) for p, b in d]  # noqa: E731
                out.append(f"#{i} ({what}, port {port}, {len(data)} B): {self.a.target} {show(x)} "
                           f"vs {self.b.target} {show(y)}  {data.hex()[:80]}")
        return out

    def text(self) -> str:
        drops = sum(d == "drop" for d in self.a.decisions)
        lines = [f"differential {self.a.target} vs {self.b.target}: {len(self.frames)} frames, "
                 f"{self.agree} same decisions = {self.agreement:.2%} agreement "
                 f"({drops} drops on {self.a.target}; sentinels lost {self.a.lost_sentinels}/"
                 f"{self.b.lost_sentinels}; {self.a.seconds:.0f} s / {self.b.seconds:.0f} s)"]
        lines += [f"    {d}" for d in self.disagreements()[:15]]
        return "\n".join(lines)


def differential(seed: int, count: int, a: str = "p4sim", b: str = "bmv2",
                 grace_s: float = GRACE_S) -> DiffResult:
    from testkit.packet_fuzz import mutated_frames

    frames = list(mutated_frames(seed, count))
    with tempfile.TemporaryDirectory() as tmp:
        ra = run_target(a, frames, Path(tmp) / a, grace_s=grace_s)
        rb = run_target(b, frames, Path(tmp) / f"{b}-b", grace_s=grace_s)
    return DiffResult(ra, rb, frames)

