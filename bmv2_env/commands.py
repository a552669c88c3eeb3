"""The one builder of a switch's command line, for BMv2 and p4sim alike.

``simple_switch_grpc`` (and ``p4sim run``, which parses the same grammar) splits its argv at
``--``: general bm options before (ports, ``--device-id``, ``--thrift-port``, logging), target
options after (``--grpc-server-addr``, ``--cpu-port``, ``--priority-queues``, ``--drop-port``,
TLS).  Everything that starts a switch -- ``bmv2_env up``, the Mininet fabric, the PTF runner --
builds its argv here, so an option in the wrong place is fixed once, and
``tests/p4rt/test_command_lines.py`` checks every line against ``p4sim.run_grammar``.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence


@dataclass
class SwitchOptions:
    """What a switch is started with; None leaves the target's default."""

    grpc_addr: str
    device_id: int = 0
    thrift_port: Optional[int] = None       # BMv2 default 9090: give each switch its own
    interfaces: Mapping[int, str] = field(default_factory=dict)   # port -> Linux interface
    packet_in: Optional[str] = None          # ipc://PATH (nanomsg ports instead of interfaces)
    cpu_port: Optional[int] = None
    priority_queues: Optional[int] = None
    log_file: Optional[str] = None           # None: --log-console (the caller redirects it)
    quiet: bool = False                      # no log option at all (bench: per-packet logging slows BMv2)
    # None: the target's default (BMv2: trace, a log line per primitive -- with stellar.p4 about
    # 1 ms per pipeline pass on this machine, a queue of its own at 1 kpps; p4sim: info)
    log_level: Optional[str] = None
    # p4sim only (its own target options; never given to simple_switch_grpc)
    clock: Optional[str] = None
    control_addr: Optional[str] = None
    seed: Optional[int] = None


def switch_command(target: str, opts: SwitchOptions, config: Optional[str] = None,
                   python: str = sys.executable, binary: str = "simple_switch_grpc") -> list[str]:
    """argv of ``simple_switch_grpc`` (target bmv2) or ``python -m p4sim run`` (target p4sim)."""
    if target not in ("bmv2", "p4sim"):
        raise ValueError(f"unknown target {target!r} (p4sim or bmv2)")
    general: list[str] = [config] if config else ["--no-p4"]
    general += ["--device-id", str(opts.device_id)]
    for port, ifname in sorted(opts.interfaces.items()):
        general += ["-i", f"{port}@{ifname}"]
    if opts.packet_in:
        general += ["--packet-in", opts.packet_in]
    if opts.thrift_port is not None:
        general += ["--thrift-port", str(opts.thrift_port)]
    if not opts.quiet:
        general += ["--log-file", opts.log_file] if opts.log_file else ["--log-console"]
        if opts.log_level:
            general += ["--log-level", opts.log_level]
    target_opts: list[str] = ["--grpc-server-addr", opts.grpc_addr]
    if opts.cpu_port is not None:
        target_opts += ["--cpu-port", str(opts.cpu_port)]
    if opts.priority_queues is not None:
        target_opts += ["--priority-queues", str(opts.priority_queues)]
    if target == "bmv2":
        if opts.clock or opts.control_addr or opts.seed is not None:
            raise ValueError("--clock/--control-addr/--seed are p4sim's own; simple_switch_grpc has none")
        return [binary, *general, "--", *target_opts]
    if opts.clock:
        target_opts += ["--clock", opts.clock]
    if opts.control_addr:
        target_opts += ["--control-addr", opts.control_addr]
    if opts.seed is not None:
        target_opts += ["--seed", str(opts.seed)]
    return [python, "-m", "p4sim", "run", *general, "--", *target_opts]


def grammar_argv(argv: Sequence[str]) -> tuple[str, list[str]]:
    """(dialect, the switch's own arguments) of a built command line, for the grammar check."""
    argv = list(argv)
    if argv[1:4] == ["-m", "p4sim", "run"]:
        return "p4sim", argv[4:]
    return "simple_switch_grpc", argv[1:]
