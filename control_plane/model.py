"""Fabric YAML -> validated, immutable model of a leaf-spine RoCEv2 fabric.

`load_fabric(path)` is the only way in: it parses the file with line marks, reads every section
with typed/range-checked getters, then runs cross-reference checks (duplicate addresses, dangling
or one-sided peers, hosts on spines, unreachable leaf pairs...).  All problems are collected and
raised together as one `FabricError` whose lines read ``file:line: key.path: reason``.

The schema is documented in fabrics/README.md.  The data-plane parameters' defaults and ranges
are their declarations' (params.py, docs/parameters.md); the model also keeps which data-plane
keys the file set, and where (``Fabric.dataplane_keys``), so a render for an architecture that
does not implement one can refuse it with file:line:key.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Iterable, Optional

from . import params
from .errors import FabricError, Problem
from .reader import MappingReader, parse_subnet
from .yaml_marks import KeyPath, MarkedDocument, format_path, load_marked

ROLES = ("leaf", "spine")
# Numbered as the data plane numbers them (p4src/CONTRACT.md section 1): background 0 .. control 3.
CLASSES = ("background", "elastic", "critical", "control")
# The design's classes and their DSCPs (control is the switches' own: CNPs, routing).  The weighted
# classes share a port by the scheduler weights (control_plane/scheduler.py); control is strict.
STRICT_CLASSES = ("control",)
WEIGHTED_CLASSES = ("critical", "elastic", "background")
CLASS_DEFAULTS = {  # name -> (DSCPs, mouse queue, elephant queue, base priority)
    "control": ((48,), 7, 7, 0.0),
    "critical": ((63,), 6, 5, 4.0),  # gradient sync, heartbeats
    "elastic": ((32,), 4, 3, 2.0),  # data loading, checkpoints
    "background": ((0,), 2, 1, 1.0),  # logs, monitoring
}
COLLECTIVES = ("AllReduce", "AlltoAll", "ParameterServer", "Broadcast")
PATH_MODES = params.param("dataplane.path_mode").choices
TNA_PROFILE_NAMES = params.param("dataplane.tna_profile").choices  # contract.TNA_PROFILES' names
MAX_PORT = 510  # egress_spec is 9 bits and 511 is BMv2's drop port
MAX_GBPS = 1600.0
MAX_US = params.MAX_US
U32_MAX = params.U32_MAX
MAX_PATH_MEMBERS = 8  # routing.path_set holds port0..port7
_PEER_RE = re.compile(r"^([A-Za-z0-9_.\-]+):(\d+)$")
_ADDR_RE = re.compile(r"^([A-Za-z0-9_.\-]+|\[[0-9a-fA-F:]+\]):(\d+)$")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")


# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Port:
    """A switch port. Fabric ports have a peer switch; host ports have a host."""

    number: int
    capacity_gbps: float
    delay_us: float
    peer_switch: Optional[str] = None
    peer_port: Optional[int] = None
    host: Optional[str] = None


@dataclass(frozen=True)
class Switch:
    name: str
    role: str
    device_id: int
    p4runtime: str
    mac: str
    subnet: Optional[ipaddress.IPv4Network]  # leaves only: the prefix their hosts live in
    ports: dict[int, Port] = field(default_factory=dict, hash=False)

    @property
    def uplinks(self) -> list[Port]:
        """Ports that lead to another switch, in port order."""
        return [p for _, p in sorted(self.ports.items()) if p.peer_switch is not None]

    @property
    def host_ports(self) -> list[Port]:
        return [p for _, p in sorted(self.ports.items()) if p.host is not None]


@dataclass(frozen=True)
class Link:
    """A leaf-spine link, stored once (leaf side first). Both directions have the same capacity."""

    leaf: str
    leaf_port: int
    spine: str
    spine_port: int
    capacity_gbps: float
    delay_us: float


@dataclass(frozen=True)
class Host:
    name: str
    ip: ipaddress.IPv4Address
    mac: str
    leaf: str
    port: int
    capacity_gbps: float
    tenant: Optional[str]
    delay_us: float = 0.5  # propagation delay of the NIC-leaf link


@dataclass(frozen=True)
class Tenant:
    name: str
    subnets: tuple[ipaddress.IPv4Network, ...]
    traffic_class: str
    guaranteed_share: float  # fraction of each link this tenant is promised (meter CIR)
    burst_kbytes: float
    alpha: float = 1.0  # scheduler: weight gained per unit of deadline urgency
    beta: float = 1.0  # scheduler: how hard historical usage divides the weight


@dataclass(frozen=True)
class Job:
    name: str
    collective: str
    hosts: tuple[str, ...]
    bandwidth_gbps: float  # per member: what each member injects while the collective runs
    start_s: float
    tenant: Optional[str]
    root: Optional[str]  # Broadcast source / ParameterServer server; None for the others
    traffic_class: str = "elastic"  # the class its traffic is marked with (DSCP)
    remaining_s: Optional[float] = None  # time left to the job's deadline; None = no deadline


@dataclass(frozen=True)
class TrafficClass:
    """A traffic class: the DSCPs that select it and its queue for mice and for elephants."""

    name: str
    dscp: tuple[int, ...]
    queue: int
    elephant_queue: int
    base_priority: float = 0.0  # scheduler weight before urgency and usage; 0 = strict (control)

    @property
    def weighted(self) -> bool:
        return self.name in WEIGHTED_CLASSES

    @property
    def queues(self) -> tuple[int, ...]:
        """Its queues, highest first (the mouse queue normally)."""
        return tuple(sorted({self.queue, self.elephant_queue}, reverse=True))


@dataclass(frozen=True)
class FlowletParams:
    timeout_us: int
    gap_moves: bool
    drain_detection: bool
    drain_margin_us: int
    hysteresis_us: int
    qdelay_max_age_us: int
    report_path_changes: bool


@dataclass(frozen=True)
class EcnParams:
    enabled: bool
    adaptive: bool
    window_us: int
    target_delay_us: int
    kmin_us: int
    kmax_us: int
    k_init_us: int
    pmax: float
    step_us: int
    idle_fraction: float  # a window that sent less than this share of line rate is "light load"

    def idle_bytes(self, capacity_gbps: float) -> int:
        """Bytes a port sends in one window at `idle_fraction` of its line rate."""
        return int(round(capacity_gbps * 125.0 * self.window_us * self.idle_fraction))


@dataclass(frozen=True)
class ElephantParams:
    threshold_bytes: int
    window_us: int
    idle_timeout_us: int


@dataclass(frozen=True)
class SchedulerParams:
    """Class weights: weight = (base_priority + alpha*urgency) / (1 + beta*usage) (scheduler.py)."""

    weights: bool  # false: no weights pushed, every queue strict priority (BMv2's default)
    priority_decay_factor: float  # usage <- d*usage + (1-d)*sample, per controller interval
    urgency_horizon_s: float  # urgency = 1 - remaining/horizon, clamped to [0, 1]
    alpha: float  # default of tenants without their own
    beta: float
    quantum_bytes: int  # DWRR bytes per round of the whole port, split by share
    rate_packet_bytes: int  # packet size that turns Gbps into BMv2 queue rates (pps)


@dataclass(frozen=True)
class DataplaneParams:
    path_mode: str
    priority_queues: int
    default_class: str
    malformed_l4: str  # "drop" | "forward" (as non-RoCE) for truncated UDP/TCP/BTH
    reservations: bool  # install the job placement (reservation + hint entries); off = plain routing
    flowlet: FlowletParams
    ecn: EcnParams
    elephant: ElephantParams
    classes: tuple[TrafficClass, ...]
    scheduler: SchedulerParams = field(default_factory=lambda: SchedulerParams(
        **declared_defaults("dataplane.scheduler", SchedulerParams)))
    # which profile of the TNA program the switches run (contract.TNA_PROFILES): "no-dre" is
    # the Tofino-1 one; the v1model program has one
    tna_profile: str = "full"

    def traffic_class(self, name: str) -> TrafficClass:
        return next(c for c in self.classes if c.name == name)


@dataclass(frozen=True)
class Fabric:
    name: str
    source: str
    switches: dict[str, Switch]
    links: tuple[Link, ...]
    hosts: dict[str, Host]
    tenants: dict[str, Tenant]
    jobs: dict[str, Job]
    dataplane: DataplaneParams
    # the data-plane keys the file set: (dotted key, line, value), for the render's refusals
    dataplane_keys: tuple[tuple[str, int, object], ...] = ()

    @property
    def leaves(self) -> list[Switch]:
        return [s for s in self.switches.values() if s.role == "leaf"]

    @property
    def spines(self) -> list[Switch]:
        return [s for s in self.switches.values() if s.role == "spine"]

    def hosts_on(self, leaf: str) -> list[Host]:
        return sorted((h for h in self.hosts.values() if h.leaf == leaf), key=lambda h: h.port)

    def without_links(self, pairs: Iterable[tuple[str, str]]) -> "Fabric":
        """This fabric after the given links failed (each a pair of switch names, either order).

        Both ports and the link disappear, so planning and rendering on the result give the
        entries the controller must converge to.  Reachability is not re-checked: a failure may
        partition leaves, and the plan then leaves the unreachable subnets unrouted.
        """
        dead: set[frozenset[str]] = set()
        for a, b in pairs:
            key = frozenset((a, b))
            if not any(frozenset((l.leaf, l.spine)) == key for l in self.links):
                raise ValueError(f"no link between {a} and {b} in fabric {self.name}")
            dead.add(key)
        links = tuple(l for l in self.links if frozenset((l.leaf, l.spine)) not in dead)
        switches: dict[str, Switch] = {}
        for name, switch in self.switches.items():
            ports = {n: p for n, p in switch.ports.items()
                     if p.peer_switch is None or frozenset((name, p.peer_switch)) not in dead}
            switches[name] = replace(switch, ports=ports)
        return replace(self, switches=switches, links=links)

    def link(self, leaf: str, spine: str) -> Optional[Link]:
        for candidate in self.links:
            if candidate.leaf == leaf and candidate.spine == spine:
                return candidate
        return None


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------
def load_fabric(path: str | Path) -> Fabric:
    """Read and validate a fabric file; raise FabricError listing every problem found."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FabricError([Problem(file, 1, "<document>", f"cannot read file: {exc}")]) from None
    return load_fabric_text(text, file)


def load_fabric_text(text: str, file: str = "<string>") -> Fabric:
    doc = load_marked(text, file)
    return _Builder(doc).build()


def default_switch_mac(device_id: int) -> str:
    """A locally administered router MAC derived from the device id (02:53:xx:xx:xx:xx)."""
    b = device_id.to_bytes(4, "big")
    return "02:53:" + ":".join(f"{x:02x}" for x in b)


def read(r: MappingReader, name: str) -> Any:
    """Read the declared parameter ``name`` (params.py) from its section's reader: its type, its
    range (with the declaration's reason when below the minimum) and its default."""
    p = params.param(name)
    key = p.key
    if p.kind == "bool":
        return r.get_bool(key, p.default)
    if p.kind == "choice":
        return r.get_str(key, default=p.default, choices=p.choices)
    value = r.get_int(key, default=p.default) if p.kind == "int" else r.get_number(key, default=p.default)
    issue = params.range_problem(p, value)
    if issue:
        r.error((key,), f"out of range: {issue} (default {p.default})")
        return p.default
    return value


def declared_defaults(section: str, model: type) -> dict[str, Any]:
    """The declared defaults of the dataclass ``model``'s fields, as ``<section>.<field>``."""
    return {f.name: params.default(f"{section}.{f.name}") for f in fields(model)}


def read_section(r: MappingReader, section: str, model: type) -> dict[str, Any]:
    """Every field of the dataclass ``model`` read as the declared ``<section>.<field>``."""
    return {f.name: read(r, f"{section}.{f.name}") for f in fields(model)}


class _Builder:
    """Reads the document section by section, then cross-checks; owns the problem list."""

    def __init__(self, doc: MarkedDocument):
        self.doc = doc
        self.problems: list[Problem] = []
        self.switch_paths: dict[str, KeyPath] = {}
        self.host_paths: dict[str, KeyPath] = {}
        self.port_paths: dict[tuple[str, int], KeyPath] = {}

    def problem(self, path: KeyPath, reason: str) -> None:
        self.problems.append(self.doc.problem(path, reason))

    def build(self) -> Fabric:
        top = MappingReader(self.doc, (), self.doc.data, self.problems)
        if self.doc.data is None:
            self.problem((), "the fabric file is empty")
            raise FabricError(self.problems)
        if not top.ok:
            raise FabricError(self.problems)
        name = top.get_str("name", required=True, default="fabric") or "fabric"
        top.get_str("description")
        defaults = top.sub("defaults")
        link_defaults = self._link_defaults(defaults.sub("link"), 100.0, 1.0)
        host_defaults = self._link_defaults(defaults.sub("host_link"), 100.0, 0.5)
        defaults.finish()
        dataplane = self._dataplane(top.sub("dataplane"))
        switches = self._switches(top, link_defaults)
        tenants = self._tenants(top)
        hosts = self._hosts(top, switches, tenants, host_defaults)
        switches = self._attach_hosts(switches, hosts)
        links = self._links(switches)
        jobs = self._jobs(top, hosts, tenants)
        top.finish()
        self._check_reachability(switches)
        self._check_ecn_idle_bytes(switches, dataplane)
        if self.problems:
            raise FabricError(self.problems)
        return Fabric(name=name, source=self.doc.file, switches=switches, links=tuple(links), hosts=hosts,
                      tenants=tenants, jobs=jobs, dataplane=dataplane, dataplane_keys=self._dataplane_keys())

    def _dataplane_keys(self) -> tuple[tuple[str, int, object], ...]:
        """Every scalar the file set under ``dataplane`` as (dotted key, line, value); the items of
        a list (a class's DSCPs) count as the list's key."""
        found: dict[str, tuple[str, int, object]] = {}
        for path in self.doc.raw:
            if len(path) < 2 or path[0] != "dataplane":
                continue
            keys = tuple(p for p in path if isinstance(p, str))
            if keys[:len(path)] != path[:len(keys)]:
                continue   # a key inside a list of mappings: the data plane has none
            value: object = self.doc.data
            for part in keys:
                value = value[part]
            dotted = format_path(keys)
            found.setdefault(dotted, (dotted, self.doc.line_of(keys), value))
        return tuple(sorted(found.values(), key=lambda k: k[1]))

    # -- defaults and data plane ---------------------------------------------------------------
    def _link_defaults(self, r: MappingReader, capacity: float, delay: float) -> tuple[float, float]:
        cap = r.get_number("capacity_gbps", default=capacity, minimum=0.0, maximum=MAX_GBPS, exclusive_minimum=True)
        dly = r.get_number("delay_us", default=delay, minimum=0.0, maximum=MAX_US)
        r.finish()
        return float(cap), float(dly)

    def _dataplane(self, r: MappingReader) -> DataplaneParams:
        path_mode = read(r, "dataplane.path_mode")
        tna_profile = read(r, "dataplane.tna_profile")
        queues = read(r, "dataplane.priority_queues")
        default_class = read(r, "dataplane.default_class")
        self.default_class = default_class
        malformed_l4 = read(r, "dataplane.malformed_l4")
        reservations = read(r, "dataplane.reservations")

        f = r.sub("flowlet")
        flowlet = FlowletParams(**read_section(f, "dataplane.flowlet", FlowletParams))
        f.finish()

        e = r.sub("ecn")
        ecn = EcnParams(**read_section(e, "dataplane.ecn", EcnParams))
        if ecn.kmin_us >= ecn.kmax_us:
            e.error(("kmin_us",), f"kmin_us ({ecn.kmin_us}) must be below kmax_us ({ecn.kmax_us})")
        else:
            if not ecn.kmin_us <= ecn.k_init_us <= ecn.kmax_us:
                e.error(("k_init_us",), f"k_init_us ({ecn.k_init_us}) must lie in [kmin_us, kmax_us] = "
                                        f"[{ecn.kmin_us}, {ecn.kmax_us}]")
            if ecn.step_us > ecn.kmax_us - ecn.kmin_us:
                e.error(("step_us",), f"step_us ({ecn.step_us}) is larger than kmax_us - kmin_us "
                                      f"({ecn.kmax_us - ecn.kmin_us}), so adaptation could only jump between the ends")
        e.finish()
        self.ecn_path = e.path

        el = r.sub("elephant")
        elephant = ElephantParams(**read_section(el, "dataplane.elephant", ElephantParams))
        el.finish()

        sc = r.sub("scheduler")
        scheduler = SchedulerParams(**read_section(sc, "dataplane.scheduler", SchedulerParams))
        sc.finish()
        self.scheduler = scheduler

        classes = self._classes(r.sub("classes"), queues, scheduler.weights)
        r.finish()
        return DataplaneParams(path_mode=path_mode, priority_queues=queues, default_class=default_class,
                               malformed_l4=malformed_l4, reservations=reservations, flowlet=flowlet, ecn=ecn,
                               elephant=elephant, classes=classes, scheduler=scheduler, tna_profile=tna_profile)

    def _classes(self, r: MappingReader, queues: int, weights: bool) -> tuple[TrafficClass, ...]:
        """DSCP -> class -> queues (+ the weighted classes' base priority); the defaults are the
        design's classes (CLASS_DEFAULTS) on the data-plane contract's recommended queues."""
        result: list[TrafficClass] = []
        seen_dscp: dict[int, str] = {}
        problems_before = len(self.problems)
        queue_paths: dict[str, KeyPath] = {}
        explicit: set[tuple[str, str]] = set()  # (class, key) the YAML sets: what an error should blame
        for name in CLASSES:
            c = r.sub(name)
            queue_paths[name] = c.path
            explicit.update((name, key) for key in ("queue", "elephant_queue") if c.has(key))
            dscp_default, queue_default, elephant_default, base_default = CLASS_DEFAULTS[name]
            base = 0.0
            if name in WEIGHTED_CLASSES:
                base = c.get_number("base_priority", default=base_default, minimum=0.0, maximum=1000.0,
                                    exclusive_minimum=True) or base_default
            elif c.has("base_priority"):
                c.error(("base_priority",), f"class {name} is served in strict priority above the weighted "
                                            f"classes; it has no weight")
            queue = c.get_int("queue", default=queue_default, minimum=0, maximum=7)
            elephant_queue = c.get_int("elephant_queue", default=elephant_default, minimum=0, maximum=7)
            for key, value in (("queue", queue), ("elephant_queue", elephant_queue)):
                if value is not None and value >= queues:
                    c.error((key,), f"queue {value} does not exist with priority_queues {queues} "
                                    f"(queues 0..{queues - 1})")
            dscps: list[int] = []
            if c.has("dscp"):
                for sub_path, value in c.items("dscp"):
                    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 63:
                        self.problem(sub_path, f"DSCP must be an integer 0..63, got {value!r}")
                        continue
                    if value in seen_dscp:
                        self.problem(sub_path, f"DSCP {value} already belongs to class {seen_dscp[value]}")
                        continue
                    seen_dscp[value] = name
                    dscps.append(value)
            else:
                dscps = [d for d in dscp_default if d not in seen_dscp]
                seen_dscp.update({d: name for d in dscps})
            c.finish()
            result.append(TrafficClass(name=name, dscp=tuple(dscps), queue=min(queue, queues - 1),
                                       elephant_queue=min(elephant_queue, queues - 1), base_priority=base))
        r.finish()
        if weights and queues > 1 and len(self.problems) == problems_before:  # queues that exist, else noise
            self._check_weighted_queues(result, queue_paths, explicit)
        return tuple(result)

    def _check_weighted_queues(self, classes: list[TrafficClass], paths: dict[str, KeyPath],
                               explicit: set[tuple[str, str]]) -> None:
        """With scheduler weights each weighted class needs queues of its own (a queue has one
        weight), and strict classes must sit above the weighted level, or they would wait
        behind it (p4sim.tm: the weighted queues are one level, at their highest queue)."""
        owner: dict[int, tuple[str, str]] = {}
        for c in classes:
            for key, q in (("queue", c.queue), ("elephant_queue", c.elephant_queue)):
                other, other_key = owner.setdefault(q, (c.name, key))
                if other != c.name and (c.weighted or classes[CLASSES.index(other)].weighted):
                    # blame the setting the YAML wrote, not a default it collided with
                    name, where, them = ((other, other_key, c.name) if (other, other_key) in explicit
                                         and (c.name, key) not in explicit else (c.name, key, other))
                    self.problem(paths[name] + (where,), f"queue {q} is also class {them}'s; with scheduler "
                                                         f"weights each weighted class needs its own queues")
        top = max((q for c in classes if c.weighted for q in c.queues), default=-1)
        for c in classes:
            if not c.weighted and min(c.queues) < top:
                self.problem(paths[c.name] + ("queue",),
                             f"class {c.name} is strict priority, so its queues must be above every weighted "
                             f"class's (highest weighted queue: {top}); it has queue {min(c.queues)}")

    # -- switches --------------------------------------------------------------------------------
    def _switches(self, top: MappingReader, link_defaults: tuple[float, float]) -> dict[str, Switch]:
        switches: dict[str, Switch] = {}
        seen_ids: dict[int, str] = {}
        seen_addr: dict[str, str] = {}
        seen_macs: dict[str, str] = {}
        seen_subnets: list[tuple[ipaddress.IPv4Network, str]] = []
        entries = top.items("switches", required=True)
        if top.has("switches") and not entries:
            top.error(("switches",), "a fabric needs at least one switch")
        for path, item in entries:
            r = MappingReader(self.doc, path, item, self.problems)
            if not r.ok:
                continue
            name = self._name(r)
            role = r.get_str("role", required=True, choices=ROLES)
            device_id = r.get_int("device_id", required=True, minimum=0, maximum=2**64 - 1)
            address = r.get_text("p4runtime", required=True)
            if address is not None and not self._valid_address(address):
                r.error(("p4runtime",), f"expected host:port with port 1..65535, got '{address}'")
                address = None
            mac = r.get_mac("mac")
            subnet = None
            if r.has("subnet"):
                subnet = parse_subnet(r, ("subnet",), r.raw("subnet"))
                if role == "spine":
                    r.error(("subnet",), "only leaves have a host subnet")
            elif role == "leaf":
                r.error((), "missing required key 'subnet' (the prefix this leaf's hosts live in)")
            ports = self._ports(r, name, link_defaults)
            r.finish()
            if name is None:
                continue
            if name in switches:
                first = self.doc.line_of(self.switch_paths[name])
                r.error(("name",), f"duplicate switch name '{name}' (first on line {first})")
                continue
            if device_id is not None:
                if device_id in seen_ids:
                    r.error(("device_id",), f"duplicate device_id {device_id} (also switch '{seen_ids[device_id]}')")
                seen_ids.setdefault(device_id, name)
            if address is not None:
                if address in seen_addr:
                    r.error(("p4runtime",), f"duplicate P4Runtime address {address} (also switch '{seen_addr[address]}')")
                seen_addr.setdefault(address, name)
            explicit_mac = mac is not None
            if mac is None and device_id is not None:
                if device_id >= 1 << 32:  # the derived MAC holds 32 bits of it
                    r.error(("device_id",), f"device_id {device_id} is above 2^32-1: give the switch an explicit mac")
                else:
                    mac = default_switch_mac(device_id)
            if mac is not None:
                if mac in seen_macs and explicit_mac:  # a derived MAC repeats only with a reported duplicate id
                    r.error(("mac",), f"duplicate MAC {mac} (also switch '{seen_macs[mac]}')")
                seen_macs.setdefault(mac, name)
            if subnet is not None and role == "leaf":
                for other, owner in seen_subnets:
                    if subnet.overlaps(other):
                        r.error(("subnet",), f"subnet {subnet} overlaps {other} of leaf '{owner}'")
                seen_subnets.append((subnet, name))
            self.switch_paths[name] = path
            if role is None or device_id is None or address is None:
                continue  # already reported; keep checking the rest
            switches[name] = Switch(name=name, role=role, device_id=device_id, p4runtime=address, mac=mac or "",
                                    subnet=subnet if role == "leaf" else None, ports=ports)
        self.switch_macs = seen_macs
        return switches

    @staticmethod
    def _valid_address(address: str) -> bool:
        match = _ADDR_RE.match(address)
        return bool(match) and 1 <= int(match.group(2)) <= 65535

    def _name(self, r: MappingReader) -> Optional[str]:
        name = r.get_str("name", required=True)
        if name is not None and not _NAME_RE.match(name):
            r.error(("name",), f"names start with a letter and use letters, digits, '_', '-', '.'; got '{name}'")
            return None
        return name

    def _ports(self, r: MappingReader, switch: Optional[str], link_defaults: tuple[float, float]) -> dict[int, Port]:
        ports: dict[int, Port] = {}
        pr = r.sub("ports")
        for key, value in pr.data.items():
            pr.known.add(key)
            path = pr.child_path(key)
            if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key <= MAX_PORT:
                self.problem(path, f"port numbers are integers 0..{MAX_PORT} (511 is the drop port); got {key!r}")
                continue
            p = MappingReader(self.doc, path, value, self.problems)
            if not p.ok:
                continue
            peer = p.get_str("peer", required=True)
            capacity = p.get_number("capacity_gbps", default=link_defaults[0], minimum=0.0, maximum=MAX_GBPS,
                                    exclusive_minimum=True)
            delay = p.get_number("delay_us", default=link_defaults[1], minimum=0.0, maximum=MAX_US)
            p.finish()
            if peer is None:
                continue
            match = _PEER_RE.match(peer)
            if not match:
                p.error(("peer",), f"expected 'switch:port', got '{peer}'")
                continue
            ports[key] = Port(number=key, capacity_gbps=capacity, delay_us=delay,
                              peer_switch=match.group(1), peer_port=int(match.group(2)))
            if switch is not None:
                self.port_paths[(switch, key)] = path
        return ports

    # -- links -----------------------------------------------------------------------------------
    def _links(self, switches: dict[str, Switch]) -> list[Link]:
        """Check every peer reference both ways; return each leaf-spine link once."""
        links: list[Link] = []
        pairs: dict[tuple[str, str], int] = {}
        for name, switch in switches.items():
            for number, port in sorted(switch.ports.items()):
                if port.peer_switch is None:
                    continue
                path = self.port_paths[(name, number)] + ("peer",)
                peer = switches.get(port.peer_switch)
                if peer is None:
                    known = port.peer_switch in self.switch_paths
                    self.problem(path, f"peer switch '{port.peer_switch}' " + ("is invalid (see its errors)" if known else "does not exist"))
                    continue
                if peer.name == name:
                    self.problem(path, "a port cannot peer with its own switch")
                    continue
                back = peer.ports.get(port.peer_port)
                if back is None or back.host is not None:
                    what = f"has host '{back.host}'" if back is not None and back.host else "is not declared"
                    self.problem(path, f"asymmetric link: {peer.name} port {port.peer_port} {what}; "
                                       f"it must say peer: {name}:{number}")
                    continue
                if (back.peer_switch, back.peer_port) != (name, number):
                    self.problem(path, f"asymmetric link: {peer.name} port {port.peer_port} points to "
                                       f"{back.peer_switch}:{back.peer_port}, not back to {name}:{number}")
                    continue
                if switch.role == peer.role:
                    if name < peer.name:
                        self.problem(path, f"{switch.role}-to-{peer.role} link {name}-{peer.name}: "
                                           "only leaf-spine links are supported")
                    continue
                if switch.role != "leaf":
                    continue  # the leaf side reports and records the link
                for attr, unit in (("capacity_gbps", "Gbps"), ("delay_us", "us")):
                    mine, theirs = getattr(port, attr), getattr(back, attr)
                    if mine != theirs:
                        self.problem(self.port_paths[(name, number)] + (attr,),
                                     f"asymmetric link: {attr} is {mine:g} {unit} here but {theirs:g} {unit} "
                                     f"on {peer.name} port {port.peer_port}")
                key = (name, peer.name)
                if key in pairs:
                    self.problem(path, f"parallel link: {name} already reaches {peer.name} through port "
                                       f"{pairs[key]}; one link per leaf-spine pair is supported")
                    continue
                pairs[key] = number
                links.append(Link(leaf=name, leaf_port=number, spine=peer.name, spine_port=port.peer_port,
                                  capacity_gbps=port.capacity_gbps, delay_us=port.delay_us))
        return links

    def _check_reachability(self, switches: dict[str, Switch]) -> None:
        """Every leaf pair needs a common spine, or traffic between them has no path."""
        leaves = [s for s in switches.values() if s.role == "leaf"]
        for leaf in leaves:
            if len(leaf.uplinks) > MAX_PATH_MEMBERS:
                self.problem(self.switch_paths[leaf.name] + ("ports",),
                             f"leaf {leaf.name} has {len(leaf.uplinks)} uplinks but a path set holds at most "
                             f"{MAX_PATH_MEMBERS} members (p4src/CONTRACT.md routing.path_set)")
        spines_of = {
            leaf.name: {p.peer_switch for p in leaf.uplinks
                        if p.peer_switch in switches and switches[p.peer_switch].role == "spine"}
            for leaf in leaves
        }
        for i, a in enumerate(leaves):
            for b in leaves[i + 1:]:
                if not spines_of[a.name] & spines_of[b.name]:
                    self.problem(self.switch_paths[b.name] + ("ports",),
                                 f"leaf {b.name} shares no spine with leaf {a.name}, so they cannot reach each other")

    def _check_ecn_idle_bytes(self, switches: dict[str, Switch], dataplane: DataplaneParams) -> None:
        """The per-port light-load byte count is a 32-bit data-plane parameter; it must fit."""
        fastest = max((p.capacity_gbps for s in switches.values() for p in s.ports.values()), default=0.0)
        if dataplane.ecn.idle_bytes(fastest) > U32_MAX:
            self.problem(getattr(self, "ecn_path", ("dataplane", "ecn")) + ("window_us",),
                         f"window_us {dataplane.ecn.window_us} is too long: a {fastest:g} Gbps port sends "
                         f"{dataplane.ecn.idle_bytes(fastest)} bytes per window at idle_fraction, more than the "
                         f"32-bit idle_bytes parameter holds")

    # -- tenants, hosts, jobs --------------------------------------------------------------------
    def _tenants(self, top: MappingReader) -> dict[str, Tenant]:
        tenants: dict[str, Tenant] = {}
        paths: dict[str, KeyPath] = {}
        all_subnets: list[tuple[ipaddress.IPv4Network, str]] = []
        total_share = 0.0
        share_path: Optional[KeyPath] = None
        for path, item in top.items("tenants"):
            r = MappingReader(self.doc, path, item, self.problems)
            if not r.ok:
                continue
            name = self._name(r)
            traffic_class = r.get_str("class", default="elastic", choices=CLASSES)
            share = r.get_number("guaranteed_share", required=True, minimum=0.0, maximum=1.0, exclusive_minimum=True)
            burst = r.get_number("burst_kbytes", default=64.0, minimum=1.0, maximum=1_000_000.0)
            sched = getattr(self, "scheduler", None)
            alpha = r.get_number("alpha", default=sched.alpha if sched else 1.0, minimum=0.0, maximum=1000.0)
            beta = r.get_number("beta", default=sched.beta if sched else 1.0, minimum=0.0, maximum=1000.0)
            subnets: list[ipaddress.IPv4Network] = []
            subnet_items = r.items("subnets", required=True)
            if r.has("subnets") and not subnet_items and isinstance(r.data.get("subnets"), list):
                r.error(("subnets",), "a tenant needs at least one subnet")
            for sub_path, text in subnet_items:
                net = parse_subnet(r, sub_path[len(path):], text)
                if net is None:
                    continue
                clash = next(((o, owner) for o, owner in all_subnets if o.overlaps(net)), None)
                if clash is not None:
                    self.problem(sub_path, f"subnet {net} overlaps {clash[0]} of tenant '{clash[1]}'")
                    continue
                all_subnets.append((net, name or "?"))
                subnets.append(net)
            r.finish()
            if name is None:
                continue
            if name in tenants or name in paths:
                r.error(("name",), f"duplicate tenant name '{name}' (first on line {self.doc.line_of(paths[name])})")
                continue
            paths[name] = path
            if share is not None:
                total_share += share
                if total_share > 1.0 + 1e-9:
                    share_path = path + ("guaranteed_share",)
                tenants[name] = Tenant(name=name, subnets=tuple(subnets), traffic_class=traffic_class or "elastic",
                                       guaranteed_share=share, burst_kbytes=burst,
                                       alpha=1.0 if alpha is None else alpha, beta=1.0 if beta is None else beta)
        if share_path is not None:
            self.problem(share_path, f"guaranteed shares of all tenants add up to {total_share:g}, more than 1")
        self.tenant_paths = paths
        return tenants

    def _hosts(self, top: MappingReader, switches: dict[str, Switch], tenants: dict[str, Tenant],
               host_defaults: tuple[float, float]) -> dict[str, Host]:
        hosts: dict[str, Host] = {}
        seen_ip: dict[ipaddress.IPv4Address, str] = {}
        seen_mac: dict[str, str] = dict(getattr(self, "switch_macs", {}))
        seen_port: dict[tuple[str, int], str] = {}
        for path, item in top.items("hosts"):
            r = MappingReader(self.doc, path, item, self.problems)
            if not r.ok:
                continue
            name = self._name(r)
            ip = r.get_ipv4("ip", required=True)
            mac = r.get_mac("mac", required=True)
            leaf = r.get_str("leaf", required=True)
            port = r.get_int("port", required=True, minimum=0, maximum=MAX_PORT)
            capacity = r.get_number("capacity_gbps", default=host_defaults[0], minimum=0.0, maximum=MAX_GBPS,
                                    exclusive_minimum=True)
            delay = r.get_number("delay_us", default=host_defaults[1], minimum=0.0, maximum=MAX_US)
            r.finish()
            if name is None:
                continue
            if name in self.host_paths:
                r.error(("name",), f"duplicate host name '{name}' (first on line {self.doc.line_of(self.host_paths[name])})")
                continue
            if name in self.switch_paths:
                r.error(("name",), f"host name '{name}' is already a switch name")
                continue
            self.host_paths[name] = path
            valid = True
            if ip is not None:
                if ip in seen_ip:
                    r.error(("ip",), f"duplicate IP {ip} (also host '{seen_ip[ip]}')")
                    valid = False
                seen_ip.setdefault(ip, name)
            if mac is not None:
                if mac in seen_mac:
                    r.error(("mac",), f"duplicate MAC {mac} (also '{seen_mac[mac]}')")
                    valid = False
                seen_mac.setdefault(mac, name)
            if leaf is not None:
                switch = switches.get(leaf)
                if switch is None:
                    r.error(("leaf",), f"leaf '{leaf}' " + ("is invalid (see its errors)" if leaf in self.switch_paths
                                                             else "does not exist"))
                    valid = False
                elif switch.role != "leaf":
                    r.error(("leaf",), f"'{leaf}' is a spine; hosts attach to leaves only")
                    valid = False
                else:
                    if ip is not None and switch.subnet is not None and ip not in switch.subnet:
                        r.error(("ip",), f"{ip} is outside leaf {leaf}'s subnet {switch.subnet}")
                        valid = False
                    if port is not None:
                        if port in switch.ports:
                            r.error(("port",), f"{leaf} port {port} is a fabric port (peer "
                                               f"{switch.ports[port].peer_switch}:{switch.ports[port].peer_port})")
                            valid = False
                        elif (leaf, port) in seen_port:
                            r.error(("port",), f"{leaf} port {port} already has host '{seen_port[(leaf, port)]}'")
                            valid = False
                        seen_port.setdefault((leaf, port), name)
            if not valid or None in (ip, mac, leaf, port):
                continue
            tenant = next((t.name for t in tenants.values() if any(ip in net for net in t.subnets)), None)
            hosts[name] = Host(name=name, ip=ip, mac=mac, leaf=leaf, port=port, capacity_gbps=capacity, tenant=tenant,
                               delay_us=delay)
        return hosts

    def _attach_hosts(self, switches: dict[str, Switch], hosts: dict[str, Host]) -> dict[str, Switch]:
        result: dict[str, Switch] = {}
        for name, switch in switches.items():
            ports = dict(switch.ports)
            for host in hosts.values():
                if host.leaf == name:
                    ports[host.port] = Port(number=host.port, capacity_gbps=host.capacity_gbps,
                                            delay_us=host.delay_us, host=host.name)
            result[name] = Switch(name=switch.name, role=switch.role, device_id=switch.device_id,
                                  p4runtime=switch.p4runtime, mac=switch.mac, subnet=switch.subnet,
                                  ports=dict(sorted(ports.items())))
        return result

    def _jobs(self, top: MappingReader, hosts: dict[str, Host], tenants: dict[str, Tenant]) -> dict[str, Job]:
        jobs: dict[str, Job] = {}
        paths: dict[str, KeyPath] = {}
        for path, item in top.items("jobs"):
            r = MappingReader(self.doc, path, item, self.problems)
            if not r.ok:
                continue
            name = self._name(r)
            collective = r.get_str("collective", required=True, choices=COLLECTIVES)
            bandwidth = r.get_number("bandwidth_gbps", required=True, minimum=0.0, maximum=MAX_GBPS,
                                     exclusive_minimum=True)
            start = r.get_number("start_s", default=0.0, minimum=0.0, maximum=1e9)
            tenant = r.get_str("tenant")
            root = r.get_str("root")
            job_class = r.get_str("class", choices=CLASSES)
            remaining = r.get_number("remaining_s", minimum=0.0, maximum=1e9)
            members: list[str] = []
            valid = True
            for sub_path, host in r.items("hosts", required=True):
                if not isinstance(host, str):
                    self.problem(sub_path, f"expected a host name, got {host!r}")
                    valid = False
                elif host not in hosts:
                    known = host in self.host_paths
                    self.problem(sub_path, f"host '{host}' " + ("is invalid (see its errors)" if known else "does not exist"))
                    valid = False
                elif host in members:
                    self.problem(sub_path, f"host '{host}' is listed twice")
                    valid = False
                else:
                    members.append(host)
                    if bandwidth is not None and bandwidth > hosts[host].capacity_gbps:
                        self.problem(sub_path, f"job bandwidth {bandwidth:g} Gbps exceeds host {host}'s link "
                                               f"({hosts[host].capacity_gbps:g} Gbps)")
                        valid = False
            r.finish()
            if r.has("hosts") and isinstance(r.data.get("hosts"), list) and len(r.data["hosts"]) < 2:
                r.error(("hosts",), "a collective needs at least 2 member hosts")
                valid = False
            if tenant is not None:
                if tenant not in tenants:
                    r.error(("tenant",), f"tenant '{tenant}' does not exist")
                    valid = False
                else:
                    for host in members:
                        if hosts[host].tenant != tenant:
                            r.error(("hosts",), f"host '{host}' ({hosts[host].ip}) is not in tenant {tenant}'s subnets")
                            valid = False
            if root is not None:
                if collective not in ("Broadcast", "ParameterServer"):
                    r.error(("root",), f"only Broadcast and ParameterServer jobs have a root, not {collective}")
                    valid = False
                elif root not in members:
                    r.error(("root",), f"root '{root}' is not one of the job's hosts")
                    valid = False
            elif collective in ("Broadcast", "ParameterServer") and members:
                root = members[0]
            if name is None:
                continue
            if name in paths:
                r.error(("name",), f"duplicate job name '{name}' (first on line {self.doc.line_of(paths[name])})")
                continue
            paths[name] = path
            if not valid or collective is None or bandwidth is None:
                continue
            if job_class is None:  # the tenant's class, else the fabric's default class
                job_class = tenants[tenant].traffic_class if tenant in tenants else self.default_class
            jobs[name] = Job(name=name, collective=collective, hosts=tuple(members), bandwidth_gbps=bandwidth,
                             start_s=start, tenant=tenant, root=root, traffic_class=job_class, remaining_s=remaining)
        return jobs
