"""A fabric YAML as a Mininet network: hosts in namespaces, switches as target processes.

Each switch is a ``simple_switch_grpc`` (``--target bmv2``) or ``p4sim run`` (default) process
attached to its Mininet interfaces with ``-i PORT@IFACE``, with its own gRPC address (the
YAML's), its own Thrift port and its own log, so the same controller (``stellarctl push``,
``stats``, ``diff``, ``fail-link``) drives it as it would real switches.  The program comes from
the target's own compiler (``p4build``).  GPUs are Mininet hosts with the YAML's IP and MAC;
their default route points at a gateway address whose ARP entry is static (the Stellar program
routes on IP and rewrites MACs; it answers no ARP).  Needs root and Debian's ``mininet``
package; no Open vSwitch and no OpenFlow controller (``controller=None``).

    sudo .venv/bin/python -m bmv2_env.mininet_fabric fabrics/lab.yaml [--target bmv2]
        [--fail-link leaf1 spine2] [--ptf stellar] [--cli]

Whatever happens half way (a switch that does not start, a failed push, Ctrl-C), every switch
process is stopped and every interface the run created is deleted before it returns.
"""
from __future__ import annotations

import argparse
import io
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from bmv2_env.commands import SwitchOptions, switch_command
from bmv2_env.target import stop_process

ROOT = Path(__file__).resolve().parents[1]
DEBIAN_DIST = "/usr/lib/python3/dist-packages"  # where Debian's mininet lives (not in the venv)
STELLAR_P4 = ROOT / "p4src" / "v1model" / "stellar.p4"
CPU_PORT = 255


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


def intf_name(node: str, port: int, tag: str = "") -> str:
    """The Mininet interface of ``node``'s port ``port`` (hosts have one, eth0).  ``tag``
    prefixes every name, so two fabrics on one machine (concurrent test runs) never share one."""
    name = f"{tag}{node}-eth{port}"
    if len(name) > 15:
        raise ValueError(f"interface name {name!r} is longer than Linux's 15 characters")
    return name


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class SwitchPlan:
    """How one switch is started: its argv and everything a tool needs to reach it."""

    name: str
    argv: list[str]
    grpc_addr: str
    device_id: int
    thrift_port: int
    control_addr: Optional[str]
    log: Path
    interfaces: dict[int, str] = field(default_factory=dict)


def plan_switches(fabric, target: str, log_dir: Path, thrift_base: Optional[int] = None,
                  python: str = sys.executable, tag: str = "") -> dict[str, SwitchPlan]:
    """The command line of every switch of the fabric (sorted by name; the i-th switch gets
    Thrift port ``thrift_base + i``, or a free port when ``thrift_base`` is None)."""
    plans = {}
    for i, (name, s) in enumerate(sorted(fabric.switches.items())):
        thrift = thrift_base + i if thrift_base is not None else free_port()
        control = f"127.0.0.1:{free_port()}" if target == "p4sim" else None
        ifaces = {n: intf_name(name, n, tag) for n in sorted(s.ports)}
        opts = SwitchOptions(grpc_addr=s.p4runtime, device_id=s.device_id, thrift_port=thrift,
                             interfaces=ifaces, cpu_port=CPU_PORT,
                             priority_queues=fabric.dataplane.priority_queues,
                             clock="wall" if target == "p4sim" else None, control_addr=control)
        plans[name] = SwitchPlan(name, switch_command(target, opts, python=python), s.p4runtime,
                                 s.device_id, thrift, control, log_dir / f"{name}.log", ifaces)
    return plans


def make_switch_class():
    from mininet.node import Switch

    class TargetSwitch(Switch):
        """A Mininet switch that is a p4sim / simple_switch_grpc process (the p4lang/tutorials
        pattern: Mininet makes the interfaces, the target process owns them)."""

        def __init__(self, name: str, plan: SwitchPlan, **kw):
            super().__init__(name, dpid=f"{plan.device_id:016x}", **kw)
            self.plan = plan
            self.proc: Optional[subprocess.Popen] = None

        def start(self, controllers) -> None:  # noqa: ARG002 - no OpenFlow controllers
            for ifname in self.plan.interfaces.values():  # no IPv6 chatter on switch ports
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1"], capture_output=True)
            with open(self.plan.log, "w") as log:
                log.write("$ " + shlex.join(self.plan.argv) + "\n")
                log.flush()
                self.proc = subprocess.Popen(self.plan.argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                             start_new_session=True)
            host, port = self.plan.grpc_addr.rsplit(":", 1)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # bounded wait for the gRPC port to listen
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name}: target exited with {self.proc.returncode}; "
                                       f"log {self.plan.log}:\n{self.plan.log.read_text()[-1500:]}")
                with socket.socket() as s:
                    if s.connect_ex((host, int(port))) == 0 and self.proc.poll() is None:
                        return
                time.sleep(0.1)  # polling interval of the bounded wait
            raise RuntimeError(f"{self.name}: P4Runtime {self.plan.grpc_addr} did not come up in 60 s")

        def stop(self, deleteIntfs: bool = True) -> None:
            if self.proc is not None:
                stop_process(self.proc)
            super().stop(deleteIntfs)

    return TargetSwitch


def fabric_interfaces(fabric, tag: str = "") -> list[str]:
    """Every interface a Mininet run of this fabric creates."""
    names = {intf_name(h, 0, tag) for h in fabric.hosts}
    names |= {intf_name(name, n, tag) for name, s in fabric.switches.items() for n in s.ports}
    return sorted(names)


def remove_interfaces(fabric, tag: str = "") -> list[str]:
    """Delete this fabric's interfaces that exist in the root namespace (a run that died before
    ``net.stop()``, or one Mininet missed); returns the names deleted."""
    gone = []
    for name in fabric_interfaces(fabric, tag):
        if os.path.exists(f"/sys/class/net/{name}"):
            subprocess.run(["ip", "link", "del", name], check=False, capture_output=True)
            gone.append(name)
    return gone


def configure_host(node, fabric, h, tag: str = "") -> None:
    """Address, default route and static ARP entries of one GPU host."""
    ifname = intf_name(h.name, 0, tag)
    node.cmd(f"ip link set {ifname} up")
    node.cmd(f"ip addr replace {h.ip}/24 dev {ifname}")
    gw = gateway_ip(str(h.ip))
    node.cmd(f"ip route replace default via {gw} dev {ifname}")
    leaf_mac = fabric.switches[h.leaf].mac
    node.cmd(f"arp -s {gw} {leaf_mac}")
    # Stellar is a routed (L3-to-the-host) fabric that answers no ARP: neighbours in the same
    # /24 are reached through the leaf too, so their addresses resolve to the leaf's MAC.
    for other in fabric.hosts.values():
        if other is not h and gateway_ip(str(other.ip)) == gw:
            node.cmd(f"arp -s {other.ip} {leaf_mac}")
    node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")


class FabricNetwork:
    """A running Mininet fabric: ``net``, the switch plans, and the one way to stop it all."""

    def __init__(self, fabric, target: str, net, plans: dict[str, SwitchPlan], tag: str = "") -> None:
        self.fabric, self.target, self.net, self.plans, self.tag = fabric, target, net, plans, tag

    def stop(self) -> list[str]:
        """Stop every switch and host, delete every interface; returns the fabric's interfaces
        still present afterwards (none, unless deleting them failed)."""
        try:
            self.net.stop()
        finally:
            remove_interfaces(self.fabric, self.tag)
        return [n for n in fabric_interfaces(self.fabric, self.tag) if os.path.exists(f"/sys/class/net/{n}")]

    def thrift_ports(self) -> dict[str, int]:
        return {name: p.thrift_port for name, p in self.plans.items()}

    def __enter__(self) -> "FabricNetwork":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def build_network(fabric, target: str = "p4sim", log_dir: Optional[Path] = None,
                  thrift_base: Optional[int] = None, tag: str = "") -> FabricNetwork:
    """A started Mininet network of the fabric (switch processes up, no entries yet).  If any
    switch fails to start, everything started so far is stopped and removed before raising."""
    import_mininet()
    from mininet.link import Link
    from mininet.net import Mininet

    log_dir = Path(log_dir or ROOT / "build" / "mininet")
    log_dir.mkdir(parents=True, exist_ok=True)
    plans = plan_switches(fabric, target, log_dir, thrift_base, tag=tag)
    cls = make_switch_class()
    remove_interfaces(fabric, tag)
    net = Mininet(controller=None, switch=cls, link=Link, autoSetMacs=False, autoStaticArp=False, build=False)
    fnet = FabricNetwork(fabric, target, net, plans, tag)
    try:
        for name in sorted(fabric.switches):
            net.addSwitch(name, cls=cls, plan=plans[name])
        for h in fabric.hosts.values():
            net.addHost(h.name, ip=f"{h.ip}/24", mac=h.mac)
        done = set()
        for name, s in sorted(fabric.switches.items()):
            for number, port in sorted(s.ports.items()):
                if port.host is not None:
                    net.addLink(port.host, name, port1=0, port2=number,
                                intfName1=intf_name(port.host, 0, tag), intfName2=intf_name(name, number, tag))
                elif port.peer_switch is not None:
                    key = frozenset(((name, number), (port.peer_switch, port.peer_port)))
                    if key not in done:
                        done.add(key)
                        net.addLink(name, port.peer_switch, port1=number, port2=port.peer_port,
                                    intfName1=intf_name(name, number, tag),
                                    intfName2=intf_name(port.peer_switch, port.peer_port, tag))
        net.build()
        net.start()
        for h in fabric.hosts.values():
            configure_host(net.get(h.name), fabric, h, tag)
    except BaseException:
        fnet.stop()
        raise
    return fnet


def compile_for(target: str, out_dir: Path, source: Path = STELLAR_P4):
    """The fabric's program from the target's own compiler (p4build)."""
    from p4build import compile_program

    return compile_program(source, target, "v1model", out_dir, [ROOT / "p4src"], [f"CPU_PORT={CPU_PORT}"])


def stellarctl(*argv: str) -> tuple[int, str]:
    """Run a ``stellarctl`` command in-process (the very code of the CLI); (status, output)."""
    from control_plane.cli import main as ctl

    out, err = io.StringIO(), io.StringIO()
    rc = ctl(list(argv), out=out, err=err)
    return rc, out.getvalue() + err.getvalue()


def push(fabric_path: str, program, switches: tuple[str, ...] = ()) -> tuple[int, str]:
    """``stellarctl push FABRIC --program-json ... --p4info ... [--switch S]``, run in-process.

    The same on both targets: every piece of controller-owned state the program has (liveness
    included) is a table entry or a meter, which simple_switch_grpc's P4Runtime server writes
    and reads back, so no Thrift side channel is needed."""
    config, p4info = program.files()
    extra = [a for s in switches for a in ("--switch", s)]
    return stellarctl("push", fabric_path, "--program-json", str(config), "--p4info", str(p4info), *extra)


def diff(fabric_path: str) -> tuple[int, str]:
    """``stellarctl diff FABRIC``: 0 when every switch holds exactly the rendered state."""
    return stellarctl("diff", fabric_path)


@dataclass
class PingResult:
    src: str
    dst: str
    sent: int
    received: int
    ttls: list[int]
    output: str

    @property
    def hops(self) -> Optional[int]:
        """Routed hops on the way (each Stellar switch decrements the TTL once)."""
        return 64 - self.ttls[0] if self.ttls else None

    def line(self) -> str:
        return (f"ping {self.src} -> {self.dst}: {self.received}/{self.sent} received"
                + (f", ttl {self.ttls[0]} ({self.hops} hops)" if self.ttls else ""))


def ping(fnet: FabricNetwork, src: str, dst: str, count: int = 3) -> PingResult:
    ip = str(fnet.fabric.hosts[dst].ip)
    out = fnet.net.get(src).cmd(f"ping -c {count} -i 0.2 -W 2 {ip}")
    m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    sent, received = map(int, m.groups()) if m else (0, 0)
    return PingResult(src, dst, sent, received, [int(t) for t in re.findall(r"ttl=(\d+)", out)], out)


def ping_pairs(fabric) -> tuple[tuple[str, str], tuple[str, str]]:
    """(one-hop pair: two hosts on one leaf, three-hop pair: hosts on different leaves)."""
    first, *rest = sorted(fabric.hosts)
    leaf = fabric.hosts[first].leaf
    same = next(h for h in rest if fabric.hosts[h].leaf == leaf)
    other = next(h for h in rest if fabric.hosts[h].leaf != leaf)
    return (first, same), (first, other)


def link_down(fnet: FabricNetwork, a: str, b: str) -> list[str]:
    """Real link-down of the a-b link, on both Mininet interfaces.

    p4sim: ``ip link set dev X down``.  BMv2: the same stalls the whole switch -- with an
    attached interface administratively down, simple_switch_grpc 1.15.5 (libpcap 1.10) processes
    no packet on *any* port until that interface is up again or deleted (measured on the lab
    fabric: leaf1 held every ping from its host port until teardown).  So on BMv2 the link is cut
    below the switch instead: a zero-length root queue (``tc qdisc replace dev X root pfifo
    limit 0``) drops every frame either end sends, while both interfaces stay up."""
    from control_plane.ops import find_link

    link = find_link(fnet.fabric, a, b)
    names = [intf_name(link.leaf, link.leaf_port, fnet.tag), intf_name(link.spine, link.spine_port, fnet.tag)]
    from bmv2_env.target import cut_link

    for ifname in names:
        if fnet.target == "bmv2":
            cut_link(ifname, True)
        else:
            subprocess.run(["ip", "link", "set", "dev", ifname, "down"], check=True)
    return names


def fail_link(fnet: FabricNetwork, fabric_path: str, a: str, b: str, log: Callable[[str], None] = print) -> int:
    """Take the a-b link down for real (``link_down``), then ``stellarctl fail-link FABRIC A B``
    itself: both ends' ports marked down in the liveness tables (the data plane skips them at
    once), then the path sets re-pushed without the link.  Returns its exit status (0: every
    switch acknowledged)."""
    names = link_down(fnet, a, b)
    how = "tc qdisc root pfifo limit 0 (drops every frame)" if fnet.target == "bmv2" else "ip link set down"
    log(f"link cut ({how}): {', '.join(names)}")
    rc, out = stellarctl("fail-link", fabric_path, a, b)
    log(f"stellarctl fail-link {fabric_path} {a} {b}:\n{out.rstrip()}")
    return rc


def suite_program(suite: str) -> tuple[Path, list[Path]]:
    """(program, include dirs) of a PTF suite from its suite.env."""
    env = (ROOT / "ptf_tests" / suite / "suite.env")
    if not env.is_file():
        raise ValueError(f"no PTF suite {suite!r} (ptf_tests/{suite}/suite.env missing)")
    values = dict(re.findall(r"^(\w+)=\"?([^\"\n]*)\"?$", env.read_text(), re.M))
    return ROOT / values["PROG"], [ROOT / d for d in values.get("INCLUDES", "").split()]


def run_ptf(fnet: FabricNetwork, fabric_path: str, suite: str, leaf: str, out_dir: Path,
            ptf_args: tuple[str, ...] = (), log: Callable[[str], None] = print) -> int:
    """Run a PTF suite against ``leaf`` of the running fabric, then give the leaf back.

    PTF needs the far ends of the leaf's host ports: each of those host interfaces is moved
    from its host's namespace into the root one for the run, and back afterwards.  The suite
    pushes its own pipeline and entries (and removes its entries), so the fabric's entries are
    reconciled onto the leaf again with ``stellarctl push --switch LEAF`` at the end."""
    from p4build import compile_program

    fabric = fnet.fabric
    plan = fnet.plans[leaf]
    hosts = {n: p.host for n, p in fabric.switches[leaf].ports.items() if p.host is not None}
    source, includes = suite_program(suite)
    prog = compile_program(source, fnet.target, "v1model", out_dir / f"ptf-{suite}", includes,
                           [f"CPU_PORT={CPU_PORT}"])
    moved: dict[int, str] = {}
    rc = 1
    try:
        for port, host in sorted(hosts.items()):
            ifname = intf_name(host, 0, fnet.tag)
            fnet.net.get(host).cmd(f"ip link set {ifname} netns 1")
            subprocess.run(["ip", "link", "set", ifname, "up"], check=True)
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1"], capture_output=True)
            moved[port] = ifname
        params = [f"grpc_addr='{plan.grpc_addr}'", f"device_id={plan.device_id}", f"cpu_port={CPU_PORT}",
                  f"target='{fnet.target}'", f"p4info='{prog.p4info_path}'", f"config='{prog.device_config_path}'",
                  f"interfaces={dict(plan.interfaces)}", f"thrift_port={plan.thrift_port}",
                  # the leaf is borrowed from a running fabric: the suite checks what it forwards;
                  # the timing tests slow its queues and want it to themselves (make ptf TARGET=bmv2)
                  "timing='skip: a leaf borrowed from the Mininet fabric (timing tests: make ptf TARGET=bmv2)'"]
        if plan.control_addr:
            params.append(f"control_addr='{plan.control_addr}'")
        ptf = str(Path(sys.executable).parent / "ptf")
        cmd = [ptf, "--test-dir", str(ROOT / "ptf_tests" / suite), "--pypath", str(ROOT),
               *[a for p, i in sorted(moved.items()) for a in ("-i", f"{p}@{i}")],
               "--log-file", str(out_dir / f"ptf-{suite}.log"), "--test-params", ";".join(params), *ptf_args]
        log(f"== ptf {suite} against {leaf} ({fnet.target}, ports {sorted(moved)})")
        rc = subprocess.run(cmd, cwd=ROOT).returncode
    finally:
        for port, ifname in moved.items():
            host = fnet.net.get(hosts[port])
            subprocess.run(["ip", "link", "set", ifname, "netns", str(host.pid)], check=False)
            configure_host(host, fabric, fabric.hosts[hosts[port]], fnet.tag)
        prc, out = push(fabric_path, compile_for(fnet.target, out_dir), (leaf,))
        log(f"== {leaf} given back to the fabric (stellarctl push --switch {leaf}):\n{out.rstrip()}")
    return rc or prc


def _switch_alive(fnet: FabricNetwork, name: str) -> bool:
    proc = getattr(fnet.net.get(name), "proc", None) if name in fnet.net else None
    return proc is not None and proc.poll() is None


def main(argv: Optional[list[str]] = None) -> int:
    from control_plane.model import load_fabric

    ap = argparse.ArgumentParser(prog="python -m bmv2_env.mininet_fabric", description=__doc__.split("\n")[0])
    ap.add_argument("fabric")
    ap.add_argument("--target", choices=("p4sim", "bmv2"), default="p4sim")
    ap.add_argument("--log-dir", type=Path, default=ROOT / "build" / "mininet", help="switch logs and programs")
    ap.add_argument("--thrift-base", type=int, default=None,
                    help="Thrift port of the first switch (by name); the others count up (default: a free "
                         "port each, so the run never collides with a switch already holding 9090)")
    ap.add_argument("--fail-link", nargs=2, metavar=("A", "B"),
                    help="after the pings: cut the A-B link (p4sim: ip link set down; bmv2: tc pfifo limit 0) "
                         "+ stellarctl fail-link, ping again")
    ap.add_argument("--ptf", metavar="SUITE", help="run this PTF suite (ptf_tests/SUITE) against one leaf")
    ap.add_argument("--ptf-leaf", help="the leaf for --ptf (default: the first leaf by name)")
    ap.add_argument("--intf-prefix", default="", metavar="TAG",
                    help="prefix of every interface name (two fabrics on one machine; 15 characters at most in all)")
    ap.add_argument("--cli", action="store_true", help="open the Mininet CLI before tearing down")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("error: Mininet needs root", file=sys.stderr)
        return 2
    for tool in (("simple_switch_grpc", "p4c-bm2-ss") if args.target == "bmv2" else ()):
        if not shutil.which(tool):
            print(f"error: --target bmv2 needs {tool} on PATH", file=sys.stderr)
            return 2
    try:
        fabric = load_fabric(args.fabric)
    except Exception as err:  # noqa: BLE001 - a YAML error names file:line:key
        print(f"error: {err}", file=sys.stderr)
        return 2
    program = compile_for(args.target, args.log_dir)
    print(f"compiled {STELLAR_P4.relative_to(ROOT)} for {args.target}: {program.device_config_path}")
    fnet = build_network(fabric, args.target, args.log_dir, args.thrift_base, tag=args.intf_prefix)
    failed = 0
    try:
        for name, plan in sorted(fnet.plans.items()):
            print(f"{name:>7}: {args.target} device {plan.device_id}, gRPC {plan.grpc_addr}, "
                  f"thrift {plan.thrift_port}, log {plan.log}")
        rc, out = push(args.fabric, program)
        print(out.rstrip())
        if rc != 0:
            return 1
        one, three = ping_pairs(fabric)
        for src, dst in (one, three):
            r = ping(fnet, src, dst)
            print(r.line())
            failed += r.received != r.sent
        if args.ptf:
            leaf = args.ptf_leaf or sorted(n for n, s in fabric.switches.items() if s.role == "leaf")[0]
            failed += run_ptf(fnet, args.fabric, args.ptf, leaf, args.log_dir) != 0
            r = ping(fnet, *three)
            print(f"after ptf: {r.line()}")
            failed += r.received != r.sent
        if args.fail_link:
            failed += fail_link(fnet, args.fabric, *args.fail_link) != 0
            r = ping(fnet, *three)
            print(f"after fail-link: {r.line()}")
            failed += r.received != r.sent
        if args.cli:
            from mininet.cli import CLI

            CLI(fnet.net)
    finally:
        left = fnet.stop()
        alive = [p for p in fnet.plans.values() if _switch_alive(fnet, p.name)]
        from bmv2_env.fabric import remove_failed_links_record

        record = remove_failed_links_record(args.fabric)  # its links are all up again in the next run
        print(f"teardown: {len(fnet.plans) - len(alive)}/{len(fnet.plans)} switch processes stopped, "
              f"hosts gone, fabric interfaces left: {', '.join(left) if left else 'none'}"
              + (f"; removed failed-links record {record}" if record else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
