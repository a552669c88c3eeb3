"""A fabric YAML as a Mininet network: hosts in namespaces, switches as target processes.

Each switch is a ``p4sim run`` (default) or ``simple_switch_grpc`` process attached to its Mininet
interfaces with ``-i PORT@IFACE`` and serving P4Runtime at the address the YAML gives it, so the
same controller (``stellarctl push``, the controller loop) drives it as it would real BMv2 boxes.
GPUs are Mininet hosts with the YAML's IP and MAC; their default route points at a gateway
address whose ARP entry is static (the Stellar program routes on IP and rewrites MACs; it
answers no ARP).  Needs root and Debian's ``mininet`` package; no Open vSwitch and no OpenFlow
controller (``controller=None``).

    sudo .venv/bin/python -m bmv2_env.mininet_fabric fabrics/lab.yaml [--target bmv2] [--cli]
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
DEBIAN_DIST = "/usr/lib/python3/dist-packages"  # where Debian's mininet lives (not in the venv)


def import_mininet():
    """Mininet from Debian's system Python, appended after the venv's own packages."""
    if DEBIAN_DIST not in sys.path:
        sys.path.append(DEBIAN_DIST)
    import mininet.net  # noqa: F401

    return mininet


def gateway_ip(host_ip: str) -> str:
    """The (virtual) gateway of a host: .254 of its /24; only its static ARP entry matters."""
    a, b, c, _ = host_ip.split(".")
    return f"{a}.{b}.{c}.254"


def make_switch_class(target: str, log_dir: Path, priority_queues: int):
    from mininet.node import Switch

    class TargetSwitch(Switch):
        """A Mininet switch that is a p4sim / simple_switch_grpc process (the p4lang/tutorials
        pattern: Mininet makes the interfaces, the target process owns them)."""

        def __init__(self, name: str, device_id: int, grpc_addr: str, **kw):
            super().__init__(name, dpid=f"{device_id:016x}", **kw)
            self.device_id = device_id
            self.grpc_addr = grpc_addr
            self.proc: Optional[subprocess.Popen] = None

        def command(self) -> list[str]:
            ifaces = [f"{port}@{intf.name}" for intf, port in sorted(self.ports.items(), key=lambda kv: kv[1])
                      if intf.name != "lo"]
            flags = [x for pi in ifaces for x in ("-i", pi)]
            common = ["--no-p4", "--device-id", str(self.device_id), "--priority-queues", str(priority_queues)]
            if target == "bmv2":
                return ["simple_switch_grpc", *flags, *common, "--", "--grpc-server-addr", self.grpc_addr]
            return [sys.executable, "-m", "p4sim", "run", *flags, *common, "--clock", "wall",
                    "--", "--grpc-server-addr", self.grpc_addr]

        def start(self, controllers) -> None:  # noqa: ARG002 - no OpenFlow controllers
            log = open(log_dir / f"{self.name}.log", "w")
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
            host, port = self.grpc_addr.rsplit(":", 1)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # bounded wait for the gRPC port to listen
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name}: target exited; see {log_dir / (self.name + '.log')}")
                with socket.socket() as s:
                    if s.connect_ex((host, int(port))) == 0:
                        return
                time.sleep(0.1)
            raise RuntimeError(f"{self.name}: P4Runtime {self.grpc_addr} did not come up in 30 s")

        def stop(self, deleteIntfs: bool = True) -> None:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
            super().stop(deleteIntfs)

    return TargetSwitch


def remove_stale_interfaces(fabric) -> None:
    """Delete interfaces with the names this fabric will create, left by a run that died before
    ``net.stop()`` (Mininet refuses to create a veth pair whose name exists)."""
    names = {f"{h}-eth0" for h in fabric.hosts}
    names |= {f"{name}-eth{n}" for name, s in fabric.switches.items() for n in s.ports}
    for name in sorted(names):
        if os.path.exists(f"/sys/class/net/{name}"):
            subprocess.run(["ip", "link", "del", name], check=False, capture_output=True)


def build_network(fabric, target: str = "p4sim", log_dir: Optional[Path] = None):
    """A started Mininet network of the fabric (switch processes up, no entries yet)."""
    import_mininet()
    from mininet.link import Link
    from mininet.net import Mininet

    log_dir = Path(log_dir or ROOT / "build" / "mininet")
    log_dir.mkdir(parents=True, exist_ok=True)
    cls = make_switch_class(target, log_dir, fabric.dataplane.priority_queues)
    remove_stale_interfaces(fabric)
    net = Mininet(controller=None, switch=cls, link=Link, autoSetMacs=False, autoStaticArp=False)
    for name, s in sorted(fabric.switches.items()):
        net.addSwitch(name, cls=cls, device_id=s.device_id, grpc_addr=s.p4runtime)
    for h in fabric.hosts.values():
        net.addHost(h.name, ip=f"{h.ip}/24", mac=h.mac)
    done = set()
    for name, s in sorted(fabric.switches.items()):
        for number, port in sorted(s.ports.items()):
            if port.host is not None:
                net.addLink(port.host, name, port2=number)
            elif port.peer_switch is not None:
                key = frozenset(((name, number), (port.peer_switch, port.peer_port)))
                if key not in done:
                    done.add(key)
                    net.addLink(name, port.peer_switch, port1=number, port2=port.peer_port)
    net.start()
    for h in fabric.hosts.values():
        node = net.get(h.name)
        gw = gateway_ip(str(h.ip))
        node.cmd(f"ip route add default via {gw}")
        node.cmd(f"arp -s {gw} {fabric.switches[h.leaf].mac}")
        # Stellar is a routed (L3-to-the-host) fabric that answers no ARP: neighbours in the same
        # /24 are reached through the leaf too, so their addresses resolve to the leaf's MAC.
        for other in fabric.hosts.values():
            if other is not h and gateway_ip(str(other.ip)) == gw:
                node.cmd(f"arp -s {other.ip} {fabric.switches[h.leaf].mac}")
        node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
    return net


def push(fabric, program_files) -> object:
    """Render and push every switch over P4Runtime (the same code as ``stellarctl push``)."""
    from control_plane.p4rt import ProgramFiles, push_fabric
    from control_plane.render import render_fabric

    return push_fabric(fabric, render_fabric(fabric).documents, ProgramFiles.load(*program_files), progress=None)


def main(argv: Optional[list[str]] = None) -> int:
    from fabric_sim.demo import build_program
    from control_plane.model import load_fabric

    ap = argparse.ArgumentParser(prog="python -m bmv2_env.mininet_fabric", description=__doc__.split("\n")[0])
    ap.add_argument("fabric")
    ap.add_argument("--target", choices=("p4sim", "bmv2"), default="p4sim")
    ap.add_argument("--cli", action="store_true", help="open the Mininet CLI after the push")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("error: Mininet needs root", file=sys.stderr)
        return 2
    if args.target == "bmv2" and not shutil.which("simple_switch_grpc"):
        print("error: simple_switch_grpc is not on PATH", file=sys.stderr)
        return 2
    fabric = load_fabric(args.fabric)
    files = build_program(ROOT / "build" / "mininet")
    net = build_network(fabric, args.target)
    try:
        result = push(fabric, files)
        print(f"pushed: {result.written} writes, ok={result.ok}")
        first, *rest = sorted(fabric.hosts)
        other = next(h for h in rest if fabric.hosts[h].leaf != fabric.hosts[first].leaf)
        print(net.get(first).cmd(f"ping -c 3 -W 2 {fabric.hosts[other].ip}"))
        if args.cli:
            from mininet.cli import CLI

            CLI(net)
    finally:
        net.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
