"""Two Stellar leaves and two spines on lock-stepped virtual clocks (path-feedback tests).

    host 10.0.1.1 -- A:1   A:3 -- S1:1   S1:2 -- B:3   B:1 -- host 10.0.2.9
                           A:4 -- S2:1   S2:2 -- B:4

Leaf A is leaf id 1 (10.0.1.0/24), leaf B id 2 (10.0.2.0/24).  Every switch runs stellar.p4 with
the test leaf's base entries (testkit/leaf.py) plus what a rendered fabric adds: routes to
the other leaf, feedback.params, feedback.dest_leaf and feedback.port_kind.  ``step`` advances
every clock by 1 us and moves the frames that left a switch onto the wire they face (no wire
delay); a frame leaving a host port is delivered.  A wire can drop frames (``cut``, ``loss``).
"""
from __future__ import annotations

import random
from typing import Callable, Optional

from testkit.leaf import ING, Leaf

A_HOST, B_HOST = "10.0.1.1", "10.0.2.9"
A_NET, B_NET = ("10.0.1.0", 24), ("10.0.2.0", 24)
WIRES = {("A", 3): ("S1", 1), ("A", 4): ("S2", 1), ("B", 3): ("S1", 2), ("B", 4): ("S2", 2)}
WIRES.update({v: k for k, v in list(WIRES.items())})
FEEDBACK = {"enabled": 1, "max_age_us": 500, "suspect_silence_us": 300, "retx_threshold": 8,
            "retx_window_us": 1000, "suspect_hold_us": 2000}


def unshim(frame: bytes) -> bytes:
    """The frame without the path-feedback shim (Ethernet + 8 bytes, next EtherType first)."""
    if int.from_bytes(frame[12:14], "big") == 0x88B5:
        return frame[:12] + frame[14:16] + frame[22:]
    return frame


class Fabric2:
    def __init__(self, p4sim, program, *, feedback: bool = True, **fb_changes: int) -> None:
        self.sw = {n: Leaf(p4sim, program) for n in ("A", "B", "S1", "S2")}
        self.delivered: dict[str, list[bytes]] = {"A": [], "B": []}
        self.on_wire: list[tuple[str, int, bytes]] = []     # (switch, port, frame) that left on a fabric port
        self.drop: Callable[[str, int, bytes], bool] = lambda sw, port, frame: False
        a, b = self.sw["A"], self.sw["B"]
        # leaf B's host and its route to leaf A (the harness's remote subnet is A's view of B)
        b.sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (B_HOST, 32)},
                          f"{ING}.routing.set_path_set", {"path_set_id": 11})
        b.sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": A_NET},
                          f"{ING}.routing.set_path_set", {"path_set_id": 1})
        for host in ("10.0.1.1", "10.0.1.2"):   # the harness's host routes are leaf A's, not B's
            b.sw.modify_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (host, 32)},
                              f"{ING}.routing.set_path_set", {"path_set_id": 1})
        for name in ("S1", "S2"):
            s = self.sw[name]
            s.set_path_set(1, [2], modify=True)             # 10.0.2.0/24 -> port 2 (leaf B)
            # 10.0.1.1/32 -> path set 11 = port 1 (leaf A): the harness's host entry already says so
        params = dict(FEEDBACK, **fb_changes)
        params["enabled"] = int(feedback) if "enabled" not in fb_changes else fb_changes["enabled"]
        for name, leaf_id in (("A", 1), ("B", 2)):
            sw = self.sw[name].sw
            sw.set_default_action(f"{ING}.feedback_lookup.params", f"{ING}.feedback_lookup.set_feedback",
                                  dict(params, leaf_id=leaf_id))
            for net, ident in ((A_NET, 1), (B_NET, 2)):
                sw.insert_entry(f"{ING}.feedback_lookup.dest_leaf", {"hdr.ipv4.dst_addr": net},
                                f"{ING}.feedback_lookup.set_dest_leaf", {"leaf_id": ident})
        for (name, port) in WIRES:
            self.sw[name].sw.insert_entry(f"{ING}.feedback.port_kind", {"standard_metadata.egress_spec": port},
                                          f"{ING}.feedback.fabric_port", {})

    def send(self, name: str, frame: bytes) -> None:
        """A host frame into leaf ``name``'s host port 1."""
        self.sw[name].send(1, frame)

    def step(self, us: int = 1) -> None:
        for _ in range(us):
            for s in self.sw.values():
                s.advance(1)
            self._move()

    def _move(self) -> None:
        moved = True
        while moved:
            moved = False
            for name, s in self.sw.items():
                for port, frame in s.sw.take_output():
                    frame = bytes(frame)
                    if (name, port) in WIRES:
                        self.on_wire.append((name, port, frame))
                        if self.drop(name, port, frame):
                            continue
                        peer, peer_port = WIRES[(name, port)]
                        self.sw[peer].send(peer_port, frame)
                        moved = True
                    elif name in self.delivered:
                        self.delivered[name].append(frame)

    def cut(self, name: str, port: int) -> None:
        """Silently drop everything leaving (name, port) from now on."""
        self.drop = lambda sw, p, frame, _n=name, _p=port: (sw, p) == (_n, _p)

    def loss(self, name: str, port: int, rate: float, seed: int = 7) -> None:
        rng = random.Random(seed)
        self.drop = lambda sw, p, frame, _n=name, _p=port: (sw, p) == (_n, _p) and rng.random() < rate

    def first_hop(self, frame_filter: Optional[Callable[[bytes], bool]] = None) -> list[int]:
        """Leaf A's uplink of each frame A sent (in order)."""
        return [p for n, p, f in self.on_wire if n == "A" and (frame_filter is None or frame_filter(f))]
