"""``stellarctl watch``: the live congestion map and gray links, kept going while switches come and go.

A fabric under watch is one where things fail: a switch that is down, restarting or not yet
started must not end the command or blank the map.  Each refresh reads every switch it can
(connecting again to those it could not reach before), shows the links of those it read, and
names the ones it could not, with why.
"""
from __future__ import annotations

import time
from typing import Callable, Optional, TextIO

from . import archnames
from .controller import CongestionMap, HistogramReader, format_congestion
from .graylinks import GrayLinkReader
from .model import Fabric
from .p4rt import P4RuntimePushError, SwitchSession
from .reach import refusing

Connect = Callable[[str], SwitchSession]


def read_only_session(fabric: Fabric, timeout: float = 5.0) -> Connect:
    """A read-only session (no arbitration: watching never displaces the primary controller)."""
    def connect(name: str) -> SwitchSession:
        sw = fabric.switches[name]
        why = refusing({name: sw.p4runtime}).get(name)
        if why:
            raise P4RuntimePushError(f"switch {name}: cannot connect to {sw.p4runtime}: {why}")
        session = SwitchSession(sw.p4runtime, sw.device_id, name=name, timeout=timeout).connect(read_only=True)
        try:
            session.load_switch_p4info()
        except P4RuntimePushError:
            session.close()
            raise
        return session
    return connect


def watch_fabric(fabric: Fabric, interval_s: float, count: int, out: TextIO, top: int = 10,
                 arch: str = "v1model", connect: Optional[Connect] = None) -> dict[str, str]:
    """Print the congestion map ``count`` times, ``interval_s`` apart; returns {switch: why} for
    the switches missing from the last map."""
    connect = connect or read_only_session(fabric)
    hist = HistogramReader(archnames.names(arch).qdelay_hist)
    gray = GrayLinkReader(fabric, arch)
    sessions: dict[str, SwitchSession] = {}
    missing: dict[str, str] = {}
    try:
        for i in range(count):
            cmap = CongestionMap(0.0)
            gray.start()
            missing = {}
            for name, switch in fabric.switches.items():
                ports = [p.number for p in switch.ports.values() if p.peer_switch is not None]
                if not ports:
                    continue
                try:
                    if name not in sessions:
                        sessions[name] = connect(name)
                    for port, delay in hist.read(name, sessions[name], ports).items():
                        cmap.qdelay_us[(name, port)] = delay
                    gray.read(name, sessions[name])
                except (P4RuntimePushError, KeyError) as exc:
                    missing[name] = str(exc)
                    dropped = sessions.pop(name, None)
                    if dropped is not None:
                        dropped.close()
            out.write(format_congestion(fabric, cmap, top))
            out.write(gray.report())
            for name, why in missing.items():
                out.write(f"  {name}: MISSING ({why})\n")
            out.flush()
            if i + 1 < count:
                time.sleep(interval_s)  # a human-facing refresh cadence, not a timing mechanism
    finally:
        for session in sessions.values():
            session.close()
    return missing
