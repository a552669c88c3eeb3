"""One target-control API for both targets.

What ``simple_switch_CLI`` offers BMv2 operators -- queue rate and depth, port state -- plus the
virtual clock p4sim has and BMv2 has not.  Tests and tools call ``TargetControl`` and never care
which switch is behind it; an operation a target cannot do raises ``NotSupportedByTarget`` with
the reason, so a test can skip with that reason printed instead of silently passing.
"""
from __future__ import annotations

import abc
import shutil
import subprocess
from typing import Mapping, Sequence


class NotSupportedByTarget(Exception):
    """The target has no way to do this (e.g. advancing time on a wall-clock switch)."""


class TargetControl(abc.ABC):
    name = "abstract"

    @abc.abstractmethod
    def set_queue_rate(self, pps: int, port: int | None = None, priority: int | None = None) -> None:
        """Departures per second of a queue (0 = unlimited); no port = every port."""

    @abc.abstractmethod
    def set_queue_depth(self, pkts: int, port: int | None = None, priority: int | None = None) -> None:
        """Queue capacity in packets (drop-tail)."""

    @abc.abstractmethod
    def set_port_up(self, port: int, up: bool) -> None:
        """Bring a port's link up or down."""

    def set_queue_weight(self, weight: int, port: int | None = None, priority: int | None = None,
                         group: int | None = None) -> None:
        """DWRR weight of a queue in bytes per round (0 = strict priority), p4sim.tm's scheduler."""
        raise NotSupportedByTarget(f"{self.name}: no weighted queue scheduler")

    def set_queue_weights(self, port: int, weights: Mapping[int, tuple[int, int]], port_pps: int) -> None:
        """Apply a port's class weights: queue -> (weight, group), weight 0 = strict
        (``control_plane.scheduler.queue_weights``).  ``port_pps`` is the port's line rate in
        packets/s, for targets that can only express weights as rates."""
        for queue, (weight, group) in sorted(weights.items()):
            self.set_queue_weight(weight, port, queue, group)

    @property
    def has_virtual_clock(self) -> bool:
        return False

    def now_us(self) -> int:
        raise NotSupportedByTarget(f"{self.name}: the switch clock cannot be read")

    def advance_us(self, us: int) -> int:
        raise NotSupportedByTarget(f"{self.name}: time cannot be advanced (wall clock)")

    def stats(self) -> dict[str, int]:
        """The switch's packet tallies (received, transmitted, drops by reason)."""
        raise NotSupportedByTarget(f"{self.name}: no packet tallies over this channel")

    def sync(self) -> None:
        """Return once every packet the switch took in is processed and its output sent."""
        raise NotSupportedByTarget(f"{self.name}: no processing barrier")

    def close(self) -> None:
        pass


class P4simTarget(TargetControl):
    """p4sim over its side channel (``p4sim run --control-addr``)."""

    name = "p4sim"

    def __init__(self, control_addr: str) -> None:
        from p4sim.target_control import ControlClient

        self.client = ControlClient(control_addr)
        self._clock = self.client.call("info")["clock"]

    def _call(self, op: str, **args):
        from p4sim.target_control import ControlError

        try:
            return self.client.call(op, **{k: v for k, v in args.items() if v is not None})
        except ControlError as err:
            if err.kind == "not_supported":
                raise NotSupportedByTarget(f"p4sim: {err}") from err
            raise ValueError(f"p4sim refused {op}: {err}") from err

    def set_queue_rate(self, pps, port=None, priority=None):
        self._call("set_queue_rate", pps=pps, port=port, priority=priority)

    def set_queue_depth(self, pkts, port=None, priority=None):
        self._call("set_queue_depth", pkts=pkts, port=port, priority=priority)

    def set_port_up(self, port, up):
        self._call("set_port", port=port, up=up)

    def enable_pktgen_port_down(self, app_id: int) -> None:
        """TNA: the packet generator sends a port-down packet into ingress when a port fails."""
        self._call("enable_pktgen_port_down", app_id=app_id)

    def set_queue_weight(self, weight, port=None, priority=None, group=None):
        self._call("set_queue_weight", weight=weight, port=port, priority=priority, group=group)

    @property
    def has_virtual_clock(self) -> bool:
        return self._clock == "virtual"

    def now_us(self) -> int:
        return int(self._call("now_us"))

    def advance_us(self, us: int) -> int:
        if not self.has_virtual_clock:
            raise NotSupportedByTarget("p4sim: running with --clock wall; time cannot be advanced")
        return int(self._call("advance", us=us))

    def stats(self) -> dict[str, int]:
        return dict(self._call("stats"))

    def sync(self) -> None:
        self._call("sync")

    def close(self) -> None:
        self.client.close()


class Bmv2Target(TargetControl):
    """BMv2 simple_switch_grpc through ``simple_switch_CLI`` on its Thrift port.

    Port state: simple_switch_CLI has no link up/down command, and ``ip link set ... down`` on an
    interface simple_switch_grpc 1.15.5 has attached stalls the whole switch (libpcap: no packet
    on any port until that interface is up again or deleted; one test would take the others down
    with it).  So with a known interface map (veth transport) a port is cut below the switch, as
    the Mininet fabric does: ``cut_link`` gives both ends of its veth pair a zero-length root
    queue, which drops every frame either side sends while both interfaces stay up; ``up``
    removes it.  Without an interface (nanomsg transport) it is NotSupportedByTarget.
    """

    name = "bmv2"

    def __init__(self, thrift_port: int = 9090, interfaces: dict[int, str] | None = None,
                 cli: str = "simple_switch_CLI") -> None:
        self.thrift_port = thrift_port
        self.interfaces = dict(interfaces or {})
        self.cli = cli

    def run_cli(self, commands: Sequence[str]) -> str:
        """Feed commands to simple_switch_CLI; raises RuntimeError on a CLI error."""
        if shutil.which(self.cli) is None:
            raise NotSupportedByTarget(f"bmv2: {self.cli} not found on PATH")
        proc = subprocess.run([self.cli, "--thrift-port", str(self.thrift_port)],
                              input="\n".join(commands) + "\n", capture_output=True, text=True,
                              timeout=30)
        out = proc.stdout + proc.stderr
        if proc.returncode != 0 or "Error" in out or "Invalid" in out:
            raise RuntimeError(f"simple_switch_CLI failed: {out.strip()}")
        return out

    @staticmethod
    def _queue_cmd(cmd: str, amount: int, port: int | None, priority: int | None) -> str:
        if priority is not None and port is None:
            raise ValueError("a queue priority needs a port (simple_switch_CLI syntax)")
        parts = [cmd, str(amount)]
        if port is not None:
            parts.append(str(port))
        if priority is not None:
            parts.append(str(priority))
        return " ".join(parts)

    def set_queue_rate(self, pps, port=None, priority=None):
        self.run_cli([self._queue_cmd("set_queue_rate", pps, port, priority)])

    def set_queue_depth(self, pkts, port=None, priority=None):
        self.run_cli([self._queue_cmd("set_queue_depth", pkts, port, priority)])

    def set_queue_weights(self, port, weights, port_pps):
        """BMv2 has no weighted scheduler: weights become per-queue rates.

        ``simple_switch --priority-queues`` rate-limits each priority queue on its own and serves,
        in strict priority, the queues whose limiter allows a send (QueueingLogicPriRL: a port whose
        queues are all busy can emit the sum of their rates).  So a weighted group's queues each
        get share x ``port_pps`` (share = its weight over the sum of the groups' weights) and
        strict queues the full ``port_pps``.  What that gives: a backlogged class is held to its
        share, so a flood in one class cannot take another's.  What it cannot give: the shares
        are caps, not work-conserving (an idle class's share is not lent out), and a class whose
        mouse and elephant queues are both busy may use up to twice its share.  p4sim's DWRR does
        neither; compare shares across targets only with one busy queue per class."""
        groups = {group: weight for weight, group in weights.values() if weight}
        total = sum(groups.values())
        commands = []
        for queue, (weight, group) in sorted(weights.items()):
            pps = max(1, round(port_pps * weight / total)) if weight else port_pps
            commands.append(self._queue_cmd("set_queue_rate", pps, port, queue))
        self.run_cli(commands)

    def set_port_up(self, port, up):
        ifname = self.interfaces.get(port)
        if ifname is None:
            raise NotSupportedByTarget(
                f"bmv2: port {port} has no Linux interface (nanomsg transport); "
                "simple_switch_CLI cannot change link state")
        cut_link(ifname, not up)


def veth_peer(ifname: str) -> str | None:
    """The other end of the veth pair ``ifname`` belongs to (None if it is not a veth here)."""
    from pathlib import Path

    try:
        peer_index = Path(f"/sys/class/net/{ifname}/iflink").read_text().strip()
        if peer_index == Path(f"/sys/class/net/{ifname}/ifindex").read_text().strip():
            return None
        for dev in Path("/sys/class/net").iterdir():
            if (dev / "ifindex").read_text().strip() == peer_index:
                return dev.name
    except OSError:
        return None
    return None


def cut_link(ifname: str, cut: bool) -> list[str]:
    """Cut (or restore) the link at ``ifname`` and its veth peer without taking an interface
    down: a root ``pfifo limit 0`` drops whatever each end sends.  Returns the interfaces set."""
    names = [ifname] + [p for p in [veth_peer(ifname)] if p]
    for name in names:
        cmd = (["tc", "qdisc", "replace", "dev", name, "root", "pfifo", "limit", "0"] if cut
               else ["tc", "qdisc", "del", "dev", name, "root"])
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0 and cut:  # deleting a qdisc that is not there is fine
            raise RuntimeError(f"{' '.join(cmd)}: {res.stderr.strip()}")
    return names


def connect(target: str, control_addr: str | None = None, thrift_port: int | None = None,
            interfaces: dict[int, str] | None = None) -> TargetControl:
    """The TargetControl for a running switch described by a state file / test params."""
    if target == "p4sim":
        if not control_addr:
            raise ValueError("p4sim target control needs its --control-addr")
        return P4simTarget(control_addr)
    if target == "bmv2":
        return Bmv2Target(thrift_port or 9090, interfaces)
    raise ValueError(f"unknown target {target!r} (p4sim or bmv2)")


def stop_process(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Stop a switch (or helper) process: SIGTERM, then SIGKILL if it has not exited in
    ``timeout`` seconds; a process that already exited is left alone."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
