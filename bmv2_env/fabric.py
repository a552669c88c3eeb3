"""Every switch of a fabric YAML as a local process: ``python -m bmv2_env up fabrics/lab.yaml``.

The one-command lab for an operator: each switch of the YAML is started on its own P4Runtime
address and device id (the YAML's, so ``stellarctl push/stats/watch/fail-link`` reach it as they
would real switches), with its own Thrift port and log, and the fabric's links wired:

* ``--transport nn`` (default, no root): each switch's ports are one nanomsg socket; a small
  process (``bmv2_env.wires``) carries each packet a switch sends on a link port to the port at
  the link's other end, and connects the host ports to ``hosts.ipc``, where
  ``python -m bmv2_env traffic`` sends from and receives at the GPUs.
* ``--transport veth`` (root): one veth pair per link, switch port to switch port, and one per
  host port whose far end is where ``traffic`` sends and receives (AF_PACKET).  The way to run
  ``--target bmv2`` (simple_switch_grpc), whose ports are interfaces.

The switches start without a pipeline: ``stellarctl push FABRIC`` compiles and pushes it, as an
operator's controller does.  ``down`` stops every process ``up`` started, removes the sockets,
interfaces and the fabric's failed-links record (it described these switches, which are gone).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from bmv2_env.commands import SwitchOptions, switch_command
from bmv2_env.env import EnvError, check_target, free_port

REPO = Path(__file__).resolve().parents[1]
CPU_PORT = 255


@dataclass
class FabricSwitch:
    name: str
    pid: int
    grpc_addr: str
    device_id: int
    thrift_port: int
    log: str
    ipc: Optional[str] = None                                        # nn: the switch's socket
    interfaces: dict[str, str] = field(default_factory=dict)        # veth: port -> interface


@dataclass
class FabricState:
    """What ``up`` started: the contract with ``traffic`` and ``down``."""

    fabric: str
    target: str
    transport: str
    switches: dict[str, FabricSwitch]
    hosts_ipc: Optional[str] = None                                  # nn: where traffic attaches
    wires_pid: Optional[int] = None
    host_interfaces: dict[str, str] = field(default_factory=dict)   # veth: host -> its far end
    veths: list[str] = field(default_factory=list)                   # veth: one end of each pair made

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> "FabricState":
        try:
            data = json.loads(path.read_text())
            data["switches"] = {n: FabricSwitch(**s) for n, s in data["switches"].items()}
            return cls(**data)
        except FileNotFoundError:
            raise EnvError(f"no fabric state {path}: is the fabric up? (python -m bmv2_env up FABRIC)") from None
        except (TypeError, KeyError, json.JSONDecodeError) as err:
            raise EnvError(f"{path}: not a bmv2_env fabric state file ({err})") from None


def state_path(fabric_path: str | Path, state_dir: Path) -> Path:
    return state_dir / Path(fabric_path).stem / "fabric.json"


def _load_fabric(fabric_path: str | Path):
    from control_plane.errors import FabricError
    from control_plane.model import load_fabric

    try:
        return load_fabric(str(fabric_path))
    except FabricError as err:
        raise EnvError(str(err)) from None


def _veth_pair(a: str, b: str) -> None:
    from bmv2_env.env import _ip

    _ip("link", "add", a, "type", "veth", "peer", "name", b)
    for ifname in (a, b):
        _ip("link", "set", ifname, "up")
        subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1"], capture_output=True)


def _wire_veths(fabric, tag: str) -> tuple[dict[str, dict[int, str]], dict[str, str], list[str]]:
    """One veth pair per link and per host port: ({switch: {port: interface}}, {host: far end},
    [one end of each pair])."""
    if os.geteuid() != 0:
        raise EnvError("--transport veth needs root (the default --transport nn does not)")
    ports: dict[str, dict[int, str]] = {name: {} for name in fabric.switches}
    hosts: dict[str, str] = {}
    made: list[str] = []

    def name(node: str, port: int) -> str:
        text = f"{tag}{node}-{port}"
        if len(text) > 15:
            raise EnvError(f"interface name {text!r} is longer than 15 characters (--tag shorter)")
        return text

    try:
        for link in fabric.links:
            a, b = name(link.leaf, link.leaf_port), name(link.spine, link.spine_port)
            _veth_pair(a, b)
            made.append(a)
            ports[link.leaf][link.leaf_port], ports[link.spine][link.spine_port] = a, b
        for host in fabric.hosts.values():
            a, b = name(host.leaf, host.port), f"{tag}{host.name}"
            if len(b) > 15:
                raise EnvError(f"interface name {b!r} is longer than 15 characters")
            _veth_pair(a, b)
            made.append(a)
            ports[host.leaf][host.port], hosts[host.name] = a, b
    except EnvError:
        _delete_veths(made)
        raise
    return ports, hosts, made


def _delete_veths(names: list[str]) -> None:
    for ifname in names:
        subprocess.run(["ip", "link", "del", ifname], capture_output=True)


def _answers(addr: str) -> bool:
    import socket

    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


def _wait_listening(addr: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    """Bounded wait until ``addr`` accepts TCP connections (the switch's gRPC server is up)."""
    import socket

    host, port = addr.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise EnvError(f"switch exited with status {proc.returncode}; log {log}:\n{log.read_text()[-1500:]}")
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise EnvError(f"switch not serving on {addr} after {timeout:g}s; log {log}") from None
            time.sleep(0.1)  # poll interval of a bounded wait


def up(fabric_path: str | Path, state_dir: Path, target: str = "p4sim", transport: str = "nn",
       clock: str = "wall", tag: str = "", python: str = sys.executable) -> FabricState:
    """Start every switch of the fabric (and, for nn, the wires); on any failure everything
    started is stopped again before the error is raised."""
    fabric = _load_fabric(fabric_path)
    path = state_path(fabric_path, state_dir)
    if path.exists():
        raise EnvError(f"{path} exists: the fabric is up (python -m bmv2_env down {fabric_path})")
    check_target(target, transport)
    if target == "bmv2" and transport == "nn":
        raise EnvError("--target bmv2 runs over --transport veth (simple_switch_grpc's ports are interfaces)")
    run_dir = path.parent.resolve()  # the switches run in the checkout: every path they get is absolute
    run_dir.mkdir(parents=True, exist_ok=True)
    state = FabricState(str(Path(fabric_path).resolve()), target, transport, {})
    if transport == "veth":
        ports, state.host_interfaces, state.veths = _wire_veths(fabric, tag)
    state.save(path)  # saved first so that 'down' can clean up a half-started fabric
    try:
        for name, sw in sorted(fabric.switches.items()):
            if _answers(sw.p4runtime):  # another switch holds it: this one would exit, that one answer
                raise EnvError(f"{name}: {sw.p4runtime}: address already in use (another switch or fabric "
                               "is running there)")
            log = run_dir / f"{name}.log"
            ipc = f"ipc://{(run_dir / f'{name}.ipc').resolve()}" if transport == "nn" else None
            ifaces = ports[name] if transport == "veth" else {}
            opts = SwitchOptions(grpc_addr=sw.p4runtime, device_id=sw.device_id, thrift_port=free_port(),
                                 interfaces=ifaces, packet_in=ipc, cpu_port=CPU_PORT,
                                 priority_queues=fabric.dataplane.priority_queues, log_file=str(log),
                                 clock=clock if target == "p4sim" else None)
            argv = switch_command(target, opts, python=python)
            with open(run_dir / f"{name}.out", "w") as out:
                proc = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            state.switches[name] = FabricSwitch(name, proc.pid, sw.p4runtime, sw.device_id, opts.thrift_port,
                                                str(log), ipc, {str(p): i for p, i in ifaces.items()})
            state.save(path)
            _wait_listening(sw.p4runtime, proc, run_dir / f"{name}.out")
        if transport == "nn":
            state.hosts_ipc = f"ipc://{(run_dir / 'hosts.ipc').resolve()}"
            with open(run_dir / "wires.log", "w") as out:
                wires = subprocess.Popen([python, "-m", "bmv2_env.wires", str(path.resolve())], cwd=REPO, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
            state.wires_pid = wires.pid
            state.save(path)
            _wait_ready(run_dir / "wires.log", wires)
    except Exception:
        down(fabric_path, state_dir)
        raise
    return state


def _wait_ready(log: Path, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while "wires ready" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise EnvError(f"the wires process did not start; log {log}:\n{log.read_text()[-1500:]}")
        time.sleep(0.05)  # poll interval of a bounded wait


def _stop(pid: int) -> None:
    """SIGTERM, a bounded wait, then SIGKILL (the process group ``up`` started)."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:  # not our child: poll for it
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.05)  # poll interval of a bounded wait
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def down(fabric_path: str | Path, state_dir: Path, failed_links_dir: Optional[Path] = None) -> tuple[FabricState, list[str]]:
    """Stop what ``up`` started and remove what it made; returns the state and what was removed
    besides the processes (the fabric's failed-links record among them)."""
    path = state_path(fabric_path, state_dir)
    state = FabricState.load(path)
    if state.wires_pid:
        _stop(state.wires_pid)
    for sw in state.switches.values():
        _stop(sw.pid)
    removed = []
    for sw in state.switches.values():
        if sw.ipc and sw.ipc.startswith("ipc://"):
            Path(sw.ipc[len("ipc://"):]).unlink(missing_ok=True)
    if state.hosts_ipc:
        Path(state.hosts_ipc[len("ipc://"):]).unlink(missing_ok=True)
    if state.veths:
        _delete_veths(state.veths)
        removed.append(f"{len(state.veths)} veth pairs")
    record = remove_failed_links_record(fabric_path, failed_links_dir)
    if record is not None:
        removed.append(f"failed-links record {record}")
    path.unlink(missing_ok=True)
    return state, removed


def remove_failed_links_record(fabric_path: str | Path, directory: Optional[Path] = None) -> Optional[Path]:
    """Remove ``stellarctl fail-link``'s record of the fabric (it described switches that are
    gone: fresh ones start with every link up); returns its path if there was one."""
    from control_plane.linkstate import default_state_path

    record = default_state_path(fabric_path, directory)
    if not record.exists():
        return None
    record.unlink()
    return record


def describe(state: FabricState) -> str:
    lines = [f"fabric {state.fabric}: {len(state.switches)} switches ({state.target}, {state.transport})"]
    for sw in state.switches.values():
        where = sw.ipc or ", ".join(f"{p}@{i}" for p, i in sorted(sw.interfaces.items(), key=lambda kv: int(kv[0])))
        lines.append(f"  {sw.name:<8} pid {sw.pid:<7} P4Runtime {sw.grpc_addr} device {sw.device_id}  "
                     f"thrift {sw.thrift_port}  log {sw.log}")
        lines.append(f"           ports {where}")
    if state.hosts_ipc:
        lines.append(f"  wires    pid {state.wires_pid}: links carried between the sockets; hosts on {state.hosts_ipc}")
    return "\n".join(lines)
