"""P4Runtime robustness campaign against p4sim's server (shared by the tests and
``bench/fuzz_p4runtime.py``).

``random_batches`` sends seeded random batches (the malformed-update generator of
tests/p4rt/test_server_robustness.py) under a random atomicity and checks each answer:

- every per-update code and every whole-RPC code is one the spec gives (never INTERNAL or a
  transport error), one ``p4.v1.Error`` per update;
- ROLLBACK_ON_ERROR / DATAPLANE_ATOMIC: a refused batch leaves the switch exactly as it was (a
  full wildcard read before and after), and the failing update carries its code while every
  other one is ABORTED;
- CONTINUE_ON_ERROR: a batch in which every update failed leaves the switch as it was;
- the server still answers Capabilities and a wildcard Read afterwards.

The scenario functions cover what random bytes do not reach: oversized values and batches,
duplicates, out-of-range and out-of-order requests, two roles writing concurrently, streams cut
mid-arbitration, and a pipeline swap under a stream of writes.
"""
from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field

import grpc
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.client import P4RuntimeClient, parse_write_error, update
from p4sim.p4rt.roles import role_config_any
from testkit.fake_switch import fake_p4info
from testkit.p4rt_harness import FAKE_CONFIG

WriteReq = p4runtime_pb2.WriteRequest
ATOMICITIES = (WriteReq.CONTINUE_ON_ERROR, WriteReq.ROLLBACK_ON_ERROR, WriteReq.DATAPLANE_ATOMIC)
WHOLE_RPC_ALLOWED = {"INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "FAILED_PRECONDITION",
                     "UNIMPLEMENTED", "OUT_OF_RANGE", "RESOURCE_EXHAUSTED"}
# Codes a P4Runtime server may answer a malformed request with (anything else, INTERNAL above
# all, is a server bug).
ALLOWED = {"OK", "INVALID_ARGUMENT", "OUT_OF_RANGE", "NOT_FOUND", "ALREADY_EXISTS",
           "PERMISSION_DENIED", "UNIMPLEMENTED", "FAILED_PRECONDITION"}


def random_bytes(rng: random.Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 9)))


def random_update(rng: random.Random, info) -> p4runtime_pb2.Update:
    upd = p4runtime_pb2.Update(type=rng.randrange(0, 5))
    kind = rng.choice(["table", "table", "table", "counter", "register", "meter", "pre", "digest", "empty"])
    pick = lambda objs: rng.choice([o.preamble.id for o in objs] + [rng.randrange(1 << 32)])  # noqa: E731
    if kind == "table":
        t = upd.entity.table_entry
        t.table_id = pick(info.tables)
        for _ in range(rng.randrange(0, 4)):
            fm = t.match.add(field_id=rng.randrange(0, 4))
            which = rng.choice(["exact", "lpm", "ternary", "range", "optional"])
            if which == "exact":
                fm.exact.value = random_bytes(rng)
            elif which == "lpm":
                fm.lpm.value, fm.lpm.prefix_len = random_bytes(rng), rng.randrange(-2, 70)
            elif which == "ternary":
                fm.ternary.value, fm.ternary.mask = random_bytes(rng), random_bytes(rng)
            elif which == "range":
                fm.range.low, fm.range.high = random_bytes(rng), random_bytes(rng)
            else:
                fm.optional.value = random_bytes(rng)
        if rng.random() < 0.8:
            t.action.action.action_id = pick(info.actions)
            for _ in range(rng.randrange(0, 3)):
                t.action.action.params.add(param_id=rng.randrange(0, 4), value=random_bytes(rng))
        t.priority = rng.choice([0, 0, 1, 5, -3])
        t.is_default_action = rng.random() < 0.2
    elif kind == "counter":
        c = upd.entity.counter_entry
        c.counter_id = pick(info.counters)
        if rng.random() < 0.7:
            c.index.index = rng.randrange(-2, 12)
    elif kind == "register":
        r = upd.entity.register_entry
        r.register_id = pick(info.registers)
        r.index.index = rng.randrange(-1, 20)
        if rng.random() < 0.8:
            r.data.bitstring = random_bytes(rng)
    elif kind == "meter":
        m = upd.entity.meter_entry
        m.meter_id = pick(info.meters)
        m.index.index = rng.randrange(0, 6)
        m.config.cir, m.config.pir = rng.randrange(0, 5), rng.randrange(0, 5)
    elif kind == "pre":
        g = upd.entity.packet_replication_engine_entry.multicast_group_entry
        g.multicast_group_id = rng.randrange(0, 4)
        for _ in range(rng.randrange(0, 3)):
            g.replicas.add(egress_port=rng.randrange(0, 3), instance=rng.randrange(0, 2))
    elif kind == "digest":
        d = upd.entity.digest_entry
        d.digest_id = pick(info.digests)
        if rng.random() < 0.7:
            d.config.max_list_size = 1
    return upd


@dataclass
class P4RTCampaign:
    batches: int = 0
    updates: int = 0
    codes: Counter = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.batches} batches / {self.updates} updates, codes {dict(self.codes.most_common())}, "
                f"{len(self.violations)} violations")


def snapshot(c: P4RuntimeClient) -> list[bytes]:
    """Everything the server holds that a Write can change, as sorted serialized entities."""
    ents = [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()),
            p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry()),
            p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry()),
            p4runtime_pb2.Entity(meter_entry=p4runtime_pb2.MeterEntry())]
    default = p4runtime_pb2.Entity()
    default.table_entry.is_default_action = True
    pre = p4runtime_pb2.Entity()
    pre.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
    out = []
    for e in (*ents, pre):
        try:
            out.extend(x.SerializeToString(deterministic=True) for x in c.read(e))
        except grpc.RpcError as err:
            out.append(f"read error {err.code().name}".encode())
    for t in (c.p4info.tables if c.p4info else ()):
        d = p4runtime_pb2.Entity()
        d.table_entry.table_id, d.table_entry.is_default_action = t.preamble.id, True
        try:
            out.extend(x.SerializeToString(deterministic=True) for x in c.read(d))
        except grpc.RpcError:
            pass
    return sorted(out)


def write_raw(c: P4RuntimeClient, updates, atomicity=WriteReq.CONTINUE_ON_ERROR,
              election=None) -> tuple[str, list[str]]:
    """(whole-RPC code name, per-update code names) of one Write."""
    req = WriteReq(device_id=c.device_id, atomicity=atomicity)
    if c.role:
        req.role = c.role
    req.election_id.high, req.election_id.low = election or c.election_id
    req.updates.extend(updates)
    try:
        c.stub.Write(req, timeout=30)
        return "OK", ["OK"] * len(updates)
    except grpc.RpcError as err:
        details = parse_write_error(err) if err.code() == grpc.StatusCode.UNKNOWN else []
        return err.code().name, [d.code for d in details]


def random_batches(c: P4RuntimeClient, info, count: int, seed: int, check_state: bool = True) -> P4RTCampaign:
    rng = random.Random(seed)
    res = P4RTCampaign()
    for i in range(count):
        updates = [random_update(rng, info) for _ in range(rng.randrange(1, 8))]
        atomicity = rng.choice(ATOMICITIES)
        before = snapshot(c) if check_state and (atomicity != ATOMICITIES[0] or i % 4 == 0) else None
        whole, codes = write_raw(c, updates, atomicity)
        res.batches += 1
        res.updates += len(updates)
        res.codes.update(codes if whole in ("OK", "UNKNOWN") else [f"rpc:{whole}"])
        tag = f"batch {i} (seed {seed}, {WriteReq.Atomicity.Name(atomicity)})"
        if whole not in ("OK", "UNKNOWN"):
            if whole not in WHOLE_RPC_ALLOWED:
                res.violations.append(f"{tag}: whole-RPC {whole}")
            continue
        if len(codes) != len(updates):
            res.violations.append(f"{tag}: {len(codes)} statuses for {len(updates)} updates")
            continue
        bad = set(codes) - ALLOWED - {"ABORTED"}
        if bad:
            res.violations.append(f"{tag}: codes {sorted(bad)}")
        failed = [k for k in codes if k != "OK"]
        if atomicity != ATOMICITIES[0] and failed:
            real = [k for k in codes if k not in ("OK", "ABORTED")]
            if len(real) != 1 or "OK" in codes:
                res.violations.append(f"{tag}: all-or-none batch answered {codes}")
            if before is not None and snapshot(c) != before:
                res.violations.append(f"{tag}: a refused all-or-none batch changed the switch")
        elif atomicity == ATOMICITIES[0] and len(failed) == len(codes) and before is not None:
            if snapshot(c) != before:
                res.violations.append(f"{tag}: a batch whose every update failed changed the switch")
    try:
        c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
        c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    except grpc.RpcError as err:
        res.violations.append(f"server stopped serving: {err.code()}")
    return res


# -- scenarios on the fake switch (testkit.p4rt_harness.Harness) -----------------------------
def lpm(c, value, plen=8, port=1):
    return c.table_entry("MyIngress.t_lpm", {"hdr.ipv4.dst": (value, plen)}, "MyIngress.set_mac",
                         {"mac": 0xAABBCCDDEEFF, "port": port})


def exact(c, mac, port=1):
    return c.table_entry("MyIngress.t_exact", {"hdr.eth.dst": mac, "meta.vrf": 1},
                         "MyIngress.set_port", {"port": port})


def concurrent_roles(harness, per_role: int = 100) -> list[str]:
    """Two roles, each owning one table, write concurrently (and try each other's table)."""
    problems: list[str] = []
    owner = harness.primary_with_pipeline()
    roles = {}
    for name, table_id in (("routing", 0x02000002), ("acl", 0x02000001)):
        c = P4RuntimeClient(harness.address, device_id=1, election_id=(0, 1), role=name,
                            role_config=role_config_any(exclusive=[table_id]))
        harness.clients.append(c)
        if c.connect().status.code != code_pb2.OK:
            problems.append(f"{name}: not primary")
        c.p4info = fake_p4info()
        roles[name] = c

    def run(name: str) -> None:
        c = roles[name]
        for k in range(per_role):
            if name == "routing":
                own, foreign = lpm(c, (10 << 24) | (k << 8), 24), exact(c, 0x020000000000 + k)
            else:
                own, foreign = exact(c, 0x030000000000 + k), lpm(c, (11 << 24) | (k << 8), 24)
            whole, codes = write_raw(c, [update("INSERT", table_entry=own),
                                         update("INSERT", table_entry=foreign)])
            if codes != ["OK", "PERMISSION_DENIED"]:
                problems.append(f"{name} #{k}: {whole} {codes}")

    threads = [threading.Thread(target=run, args=(n,)) for n in roles]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    sw = harness.switch
    if len(sw.table_entries("MyIngress.t_lpm")) != per_role or len(sw.table_entries("MyIngress.t_exact")) != per_role:
        problems.append(f"final state: {len(sw.table_entries('MyIngress.t_lpm'))} lpm, "
                        f"{len(sw.table_entries('MyIngress.t_exact'))} exact entries (want {per_role} each)")
    got = snapshot(owner)
    if len(got) < 2 * per_role:
        problems.append("the default role's read does not see both roles' entries")
    return problems


def streams_cut_mid_arbitration(harness, count: int = 20) -> list[str]:
    """Clients open a stream, send a MasterArbitrationUpdate and vanish (channel closed before or
    while the answer comes), some with a higher election id than the primary.  The primary must
    end up primary again and keep writing; nobody else becomes primary."""
    problems: list[str] = []
    primary = harness.primary_with_pipeline()
    for k in range(count):
        c = P4RuntimeClient(harness.address, device_id=1, election_id=(0, 100 + k))
        c.open_stream()
        c.send_arbitration((0, 100 + k))
        if k % 2:
            try:
                c.next_arbitration(timeout=5)
            except Exception:  # noqa: BLE001
                pass
        c.channel.close()  # abrupt: no half-close
    # The primary is told of every takeover and of every cut stream's departure; wait (bounded)
    # until the last word is "primary" and nothing more comes for a moment.
    import queue as _queue
    import time as _time

    start = _time.monotonic()
    last, deadline = None, start + 30
    while _time.monotonic() < deadline:
        try:
            msg = primary.arbitrations.get(timeout=0.5)
        except _queue.Empty:
            if last == code_pb2.OK or (last is None and _time.monotonic() - start > 3):
                break
            continue
        if msg is None:
            problems.append("the primary's stream was closed")
            break
        last = msg.arbitration.status.code
    if last not in (None, code_pb2.OK):
        problems.append(f"primary's last notification {last}, not OK")
    whole, codes = write_raw(primary, [update("INSERT", table_entry=lpm(primary, 0x0A000000))])
    if codes != ["OK"]:
        problems.append(f"primary cannot write after the cut streams: {whole} {codes}")
    return problems


def pipeline_swap_while_writing(harness, writes: int = 300, swaps: int = 10) -> list[str]:
    """One thread writes entries while another pushes the pipeline again and again: every Write
    gets a spec answer (OK, or per-update codes such as NOT_FOUND/ALREADY_EXISTS after a swap
    emptied the tables); none is INTERNAL; afterwards the pipeline is the last one pushed and
    writable."""
    problems: list[str] = []
    c = harness.primary_with_pipeline()
    stop = threading.Event()
    answers: Counter = Counter()
    progress = threading.Condition()
    done = [0]
    pushed = [0]

    def writer() -> None:
        for k in range(writes):
            whole, codes = write_raw(c, [update("INSERT", table_entry=lpm(c, (10 << 24) | ((k % 250) << 8), 24)),
                                         update("DELETE", table_entry=lpm(c, (10 << 24) | (((k + 125) % 250) << 8), 24))])
            answers.update(codes if whole in ("OK", "UNKNOWN") else [f"rpc:{whole}"])
            if whole not in ("OK", "UNKNOWN") and whole not in WHOLE_RPC_ALLOWED:
                problems.append(f"write {k}: {whole}")
            bad = set(codes) - {"OK", "ALREADY_EXISTS", "NOT_FOUND"}
            if bad:
                problems.append(f"write {k}: {codes}")
            with progress:
                done[0] = k + 1
                progress.notify_all()
        stop.set()
        with progress:
            progress.notify_all()

    def swapper() -> None:
        # Pushes spread over the writer's run: one after every writes/(swaps+1) writes, so each
        # lands between (or during) writes rather than all before the first one.
        for n in range(1, swaps + 1):
            with progress:
                progress.wait_for(lambda: stop.is_set() or done[0] >= n * writes // (swaps + 1), timeout=60)
            if stop.is_set():
                break
            try:
                c.set_pipeline(fake_p4info(), FAKE_CONFIG)
                pushed[0] += 1
            except grpc.RpcError as err:
                problems.append(f"pipeline push refused: {err.code()}")

    threads = [threading.Thread(target=writer), threading.Thread(target=swapper)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    c.set_pipeline(fake_p4info(), FAKE_CONFIG)
    if harness.switch.table_entries("MyIngress.t_lpm"):
        problems.append("a pushed pipeline kept entries of the old one")
    whole, codes = write_raw(c, [update("INSERT", table_entry=lpm(c, 0x0A000000))])
    if codes != ["OK"]:
        problems.append(f"not writable after the swaps: {whole} {codes}")
    if not answers or pushed[0] < swaps // 2:
        problems.append(f"{sum(answers.values())} writes answered, {pushed[0]} pipelines pushed meanwhile")
    return problems


def edge_requests(harness) -> list[str]:
    """Oversized, duplicate, out-of-range and out-of-order requests, each with its spec answer."""
    problems: list[str] = []

    def expect(what: str, got, want) -> None:
        if got != want:
            problems.append(f"{what}: got {got}, want {want}")

    early = harness.client()
    expect("write before a pipeline", write_raw(early, [update("INSERT", table_entry=lpm(early, 0x0A000000))])[0],
           "FAILED_PRECONDITION")
    early.close()
    harness.clients.remove(early)
    c = harness.primary_with_pipeline()
    e = lpm(c, 0x0A000000)
    expect("duplicate INSERT in one batch", write_raw(c, [update("INSERT", table_entry=e)] * 2)[1],
           ["OK", "ALREADY_EXISTS"])
    expect("duplicate in a ROLLBACK batch", write_raw(c, [update("INSERT", table_entry=lpm(c, 0x0B000000))] * 2,
                                                      WriteReq.ROLLBACK_ON_ERROR)[1], ["ABORTED", "ALREADY_EXISTS"])
    expect("...and nothing of it applied", len(harness.switch.table_entries("MyIngress.t_lpm")), 1)
    expect("MODIFY before INSERT", write_raw(c, [update("MODIFY", table_entry=lpm(c, 0x0C000000))])[1], ["NOT_FOUND"])
    expect("DELETE of a missing entry", write_raw(c, [update("DELETE", table_entry=lpm(c, 0x0C000000))])[1],
           ["NOT_FOUND"])
    big = lpm(c, 0x0D000000)
    big.action.action.params[0].value = b"\x01" * 65536
    expect("a 64 KiB action parameter", write_raw(c, [update("INSERT", table_entry=big)])[1], ["OUT_OF_RANGE"])
    wide = lpm(c, 0x0D000000)
    wide.match[0].lpm.value = b"\x01" + b"\x00" * 4
    expect("a match value wider than its field", write_raw(c, [update("INSERT", table_entry=wide)])[1],
           ["OUT_OF_RANGE"])
    ce = p4runtime_pb2.CounterEntry(counter_id=0x12000001)
    ce.index.index = 1 << 40
    expect("a counter index past the end", write_raw(c, [update("MODIFY", counter_entry=ce)])[1], ["OUT_OF_RANGE"])
    expect("a stale election id", write_raw(c, [update("INSERT", table_entry=lpm(c, 0x0E000000))],
                                            election=(0, 0))[0], "PERMISSION_DENIED")
    expect("another device id", write_raw(P4RuntimeClient(harness.address, device_id=77), [])[0], "NOT_FOUND")
    expect("unknown atomicity", write_raw(c, [update("INSERT", table_entry=lpm(c, 0x0E000000))], atomicity=9)[0],
           "INVALID_ARGUMENT")
    # Bytes that are no protobuf at all: gRPC's own layer refuses them before any handler
    # (INTERNAL "Exception deserializing request", the library's answer, not the server's);
    # what matters is that the server goes on serving.
    raw_call = c.channel.unary_unary("/p4.v1.P4Runtime/Write")
    try:
        raw_call(b"\xff\xff\xff\x07 not a protobuf", timeout=10)
        problems.append("undecodable Write bytes were accepted")
    except grpc.RpcError as err:
        expect("undecodable request bytes", err.code().name, "INTERNAL")
    # 3000 updates in one batch, every 100th bad: each answered, the good ones applied.
    batch = [update("INSERT", table_entry=lpm(c, (20 << 24) | (k << 8), 24)) for k in range(3000)]
    for k in range(0, 3000, 100):
        batch[k] = update("INSERT", table_entry=lpm(c, (20 << 24) | (k << 8) | 1, 24))
    whole, codes = write_raw(c, batch)
    expect("3000-update batch: statuses", (whole, len(codes), codes.count("INVALID_ARGUMENT")),
           ("UNKNOWN", 3000, 30))
    expect("3000-update batch: applied", len(harness.switch.table_entries("MyIngress.t_lpm")), 1 + 2970)
    return problems


def plausible_update(rng: random.Random, c: P4RuntimeClient, info) -> p4runtime_pb2.Update:
    """Mostly well-formed updates on a small key space (so INSERT/MODIFY/DELETE collide), with
    the malformed generator's output mixed in: batches where some updates apply and some not."""
    roll = rng.random()
    kind = rng.choice(["INSERT", "INSERT", "MODIFY", "DELETE"])
    if roll < 0.45:
        return update(kind, table_entry=lpm(c, (10 << 24) | (rng.randrange(6) << 16), 16, port=rng.randrange(1, 5)))
    if roll < 0.65:
        return update(kind, table_entry=exact(c, 0x020000000000 + rng.randrange(6), port=rng.randrange(1, 5)))
    if roll < 0.75:
        re = p4runtime_pb2.RegisterEntry(register_id=0x16000001)
        re.index.index = rng.randrange(-1, 18)
        re.data.bitstring = rng.randrange(1, 1 << 33).to_bytes(5, "big").lstrip(b"\0")
        return update("MODIFY", register_entry=re)
    if roll < 0.82:
        ce = p4runtime_pb2.CounterEntry(counter_id=0x12000001)
        ce.index.index = rng.randrange(0, 9)
        ce.data.packet_count, ce.data.byte_count = rng.randrange(100), rng.randrange(10000)
        return update("MODIFY", counter_entry=ce)
    return random_update(rng, info)


def twin_batches(a: P4RuntimeClient, b: P4RuntimeClient, info, count: int, seed: int) -> P4RTCampaign:
    """CONTINUE_ON_ERROR means each update on its own: switch A gets every batch whole, twin B
    the same updates one Write each.  Per-update codes and the final states must agree (a batch
    that applied part of an update, or let one update's failure touch another, would differ)."""
    rng = random.Random(seed)
    res = P4RTCampaign()
    for i in range(count):
        updates = [plausible_update(rng, a, info) for _ in range(rng.randrange(1, 10))]
        whole, codes = write_raw(a, updates)
        singles = []
        for u in updates:
            w, cs = write_raw(b, [u])
            singles.append(cs[0] if cs else f"rpc:{w}")
        res.batches += 1
        res.updates += len(updates)
        res.codes.update(codes)
        if codes != singles:
            res.violations.append(f"batch {i} (seed {seed}): batch codes {codes} vs one by one {singles}")
        if i % 10 == 9 and snapshot(a) != snapshot(b):
            res.violations.append(f"after batch {i} (seed {seed}): the batched and one-by-one switches differ")
            break
    if snapshot(a) != snapshot(b):
        res.violations.append("final state: batched and one-by-one switches differ")
    return res
