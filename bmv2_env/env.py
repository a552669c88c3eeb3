"""Bring one switch up (compile, start, push the pipeline) and down again, for either target.

The state file written by ``up`` is the contract with everything that attaches later (PTF,
p4runtime-shell by hand, ``down``): which process, which addresses, which ports on which
interfaces or socket, which files.  ``down`` removes exactly what ``up`` created.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class EnvError(Exception):
    """Something ``up``/``down`` cannot do; the message says what and why."""


@dataclass
class SwitchState:
    name: str
    target: str
    pid: int
    grpc_addr: str
    device_id: int
    cpu_port: int
    transport: str
    ports: int
    program: str
    config: str
    p4info: str
    log: str
    arch: str = "v1model"
    control_addr: str | None = None
    thrift_port: int | None = None
    ipc: str | None = None
    # port -> [switch-side interface, host-side interface] (veth transport)
    interfaces: dict[str, list[str]] = field(default_factory=dict)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> "SwitchState":
        try:
            return cls(**json.loads(path.read_text()))
        except FileNotFoundError:
            raise EnvError(f"no state file {path}: is the switch up?") from None
        except (TypeError, json.JSONDecodeError) as err:
            raise EnvError(f"{path}: not a bmv2_env state file ({err})") from None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compile_program(target: str, program: Path, out_dir: Path, include: list[str],
                    defines: list[str], python: str = sys.executable,
                    arch: str = "v1model") -> tuple[Path, Path]:
    """(device config, P4Info) from the target's own compiler (``p4build``); ``arch`` is the
    architecture the program instantiates (p4build refuses a pair no compiler builds, e.g.
    tna on bmv2)."""
    from p4build import BuildError
    from p4build import compile_program as build

    try:
        prog = build(program if program.is_absolute() else REPO / program, target, arch, out_dir,
                     [d if Path(d).is_absolute() else str(REPO / d) for d in include], defines, python)
    except BuildError as err:
        raise EnvError(str(err)) from None
    return prog.device_config_path, prog.p4info_path


def _veth_names(name: str, port: int) -> tuple[str, str]:
    """Interface names (Linux allows 15 characters): switch side and host side."""
    sw, host = f"{name}-p{port}", f"{name}-h{port}"
    if len(sw) > 15 or len(host) > 15:
        raise EnvError(f"switch name {name!r} too long for interface names")
    return sw, host


def _ip(*args: str) -> None:
    res = subprocess.run(["ip", *args], capture_output=True, text=True)
    if res.returncode != 0:
        raise EnvError(f"ip {' '.join(args)}: {res.stderr.strip()}")


def create_veths(name: str, ports: int) -> dict[str, list[str]]:
    if os.geteuid() != 0:
        raise EnvError("the veth transport needs root (use --transport nn otherwise)")
    made: dict[str, list[str]] = {}
    try:
        for p in range(ports):
            sw, host = _veth_names(name, p)
            _ip("link", "add", sw, "type", "veth", "peer", "name", host)
            made[str(p)] = [sw, host]
            for ifname in (sw, host):
                _ip("link", "set", ifname, "up")
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1"],
                               capture_output=True)
    except EnvError:
        delete_veths(made)
        raise
    return made


def delete_veths(interfaces: dict[str, list[str]]) -> None:
    for sw, _host in interfaces.values():
        subprocess.run(["ip", "link", "del", sw], capture_output=True)


def wait_for_grpc(addr: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    import grpc

    channel = grpc.insecure_channel(addr)
    deadline = time.monotonic() + timeout
    try:
        while True:  # bounded poll until the switch accepts connections
            if proc.poll() is not None:
                raise EnvError(f"switch exited with {proc.returncode}; log {log}:\n{log.read_text()[-2000:]}")
            try:
                grpc.channel_ready_future(channel).result(timeout=0.5)
                return
            except grpc.FutureTimeoutError:
                if time.monotonic() > deadline:
                    raise EnvError(f"switch not serving on {addr} after {timeout}s; log {log}")
    finally:
        channel.close()


def push_pipeline(grpc_addr: str, device_id: int, p4info_path: Path, config_path: Path) -> None:
    from p4sim.p4rt.client import P4RuntimeClient, load_p4info

    client = P4RuntimeClient(grpc_addr, device_id=device_id, election_id=(0, 1))
    try:
        client.connect()
        client.set_pipeline(load_p4info(str(p4info_path)), config_path.read_bytes())
    finally:
        client.close()


def check_target(target: str, transport: str) -> None:
    """EnvError unless ``target`` over ``transport`` can start here."""
    if target not in ("p4sim", "bmv2"):
        raise EnvError(f"unknown target {target!r} (p4sim or bmv2)")
    if transport not in ("nn", "veth"):
        raise EnvError(f"unknown transport {transport!r} (nn or veth)")
    if target == "bmv2" and shutil.which("simple_switch_grpc") is None:
        raise EnvError("TARGET bmv2 needs simple_switch_grpc on PATH")


def up(name: str, target: str, program: Path, ports: int, transport: str, state_dir: Path,
       grpc_addr: str | None = None, device_id: int = 1, cpu_port: int = 255, clock: str = "wall",
       include: list[str] | None = None, defines: list[str] | None = None,
       python: str = sys.executable, arch: str = "v1model",
       log_level: str | None = None) -> SwitchState:
    state_dir.mkdir(parents=True, exist_ok=True)
    state_file = state_dir / f"{name}.json"
    if state_file.exists():
        raise EnvError(f"{state_file} exists: run 'python -m bmv2_env down --name {name}' first")
    check_target(target, transport)
    config, p4info = compile_program(target, program, state_dir / name, include or [],
                                     [f"CPU_PORT={cpu_port}", *(defines or [])], python, arch)
    grpc_addr = grpc_addr or f"127.0.0.1:{free_port()}"
    log = state_dir / f"{name}.log"
    interfaces: dict[str, list[str]] = {}
    ipc = None
    if transport == "veth":
        interfaces = create_veths(name, ports)
    elif transport == "nn":
        ipc = f"ipc://{(state_dir / f'{name}.ipc').resolve()}"
    else:
        raise EnvError(f"unknown transport {transport!r} (nn or veth)")
    from bmv2_env.commands import SwitchOptions, switch_command

    thrift_port = free_port()  # each switch its own: BMv2 (and p4sim) hold 9090 by default
    control_addr = f"127.0.0.1:{free_port()}" if target == "p4sim" else None
    opts = SwitchOptions(grpc_addr=grpc_addr, device_id=device_id, thrift_port=thrift_port,
                         interfaces={int(p): sw for p, (sw, _h) in interfaces.items()},
                         packet_in=ipc, cpu_port=cpu_port, log_level=log_level,
                         clock=clock if target == "p4sim" else None, control_addr=control_addr)
    cmd = switch_command(target, opts, python=python)
    with open(log, "w") as logf:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=logf, stderr=subprocess.STDOUT,
                                start_new_session=True)
    state = SwitchState(name=name, target=target, pid=proc.pid, grpc_addr=grpc_addr,
                        device_id=device_id, cpu_port=cpu_port, transport=transport, ports=ports,
                        program=str(program), config=str(config), p4info=str(p4info), log=str(log),
                        arch=arch, control_addr=control_addr, thrift_port=thrift_port, ipc=ipc,
                        interfaces=interfaces)
    state.save(state_file)  # saved before waiting so 'down' can clean up a half-started switch
    try:
        wait_for_grpc(grpc_addr, proc, log)
        push_pipeline(grpc_addr, device_id, p4info, config)
    except Exception:
        down(name, state_dir)
        raise
    return state


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def down(name: str, state_dir: Path) -> SwitchState:
    state_file = state_dir / f"{name}.json"
    state = SwitchState.load(state_file)
    if _alive(state.pid):
        os.kill(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _alive(state.pid) and time.monotonic() < deadline:
            try:  # reap it if it is our child (in-process use); otherwise just poll
                if os.waitpid(state.pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                pass
            time.sleep(0.05)  # bounded wait for the process to exit
        if _alive(state.pid):
            os.kill(state.pid, signal.SIGKILL)
    delete_veths(state.interfaces)
    if state.ipc and state.ipc.startswith("ipc://"):
        Path(state.ipc[len("ipc://"):]).unlink(missing_ok=True)
    state_file.unlink(missing_ok=True)
    return state


def ptf_params(state: SwitchState) -> str:
    """The ``ptf --test-params`` string ``ptf_tests/base.py`` reads, for this switch."""
    params = [f"grpc_addr='{state.grpc_addr}'", f"device_id={state.device_id}", f"cpu_port={state.cpu_port}",
              f"target='{state.target}'", f"arch='{state.arch}'", f"p4info='{state.p4info}'", f"config='{state.config}'"]
    ifaces = {int(p): sw for p, (sw, _h) in state.interfaces.items()}
    params.append(f"interfaces={ifaces if ifaces else None}")
    if state.control_addr:
        params.append(f"control_addr='{state.control_addr}'")
    if state.thrift_port:
        params.append(f"thrift_port={state.thrift_port}")
    return ";".join(params)


def ptf_port_args(state: SwitchState) -> list[str]:
    """PTF's port arguments: the host side of each veth, or the nanomsg socket."""
    if state.ipc:
        return ["--platform", "nn", "--device-socket", f"0-{{0-{state.ports - 1}}}@{state.ipc}"]
    return [a for p, (_sw, host) in sorted(state.interfaces.items(), key=lambda kv: int(kv[0]))
            for a in ("-i", f"{p}@{host}")]


def describe(state: SwitchState) -> str:
    """What a person needs to attach by hand."""
    lines = [
        f"switch {state.name}: {state.target} ({state.arch}), pid {state.pid}, device id {state.device_id}",
        f"  P4Runtime   {state.grpc_addr}  (cpu port {state.cpu_port})",
        f"  program     {state.program}",
        f"  P4Info      {state.p4info}",
        f"  config      {state.config}",
        f"  log         {state.log}",
    ]
    if state.control_addr:
        lines.append(f"  control     {state.control_addr}  (p4sim side channel: bmv2_env.target)")
    if state.thrift_port:
        lines.append(f"  thrift      {state.thrift_port}  (simple_switch_CLI --thrift-port {state.thrift_port})")
    if state.ipc:
        lines.append(f"  ports 0-{state.ports - 1} on {state.ipc}  "
                     f"(ptf --platform nn --device-socket 0-{{0-{state.ports - 1}}}@{state.ipc})")
    for port, (sw, host) in state.interfaces.items():
        lines.append(f"  port {port}: switch {sw} <-> host {host}")
    lines.append(f"  attach: python -m p4runtime_sh --grpc-addr {state.grpc_addr} "
                 f"--device-id {state.device_id} --election-id 0,1")
    return "\n".join(lines)
