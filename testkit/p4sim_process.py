"""Start ``python -m p4sim run`` as a user would, on free loopback ports, and stop it cleanly."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

from bmv2_env.target import stop_process

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compile_program(program: Path, out_dir: Path) -> tuple[Path, Path]:
    """``python -m p4sim compile``; returns (device config JSON, P4Info text)."""
    out_json = out_dir / (program.stem + ".json")
    out_info = out_dir / (program.stem + ".p4info.txtpb")
    subprocess.run([sys.executable, "-m", "p4sim", "compile", str(program), "-o", str(out_json),
                    "--p4runtime-files", str(out_info)], check=True, cwd=REPO, timeout=300)
    return out_json, out_info


@dataclass
class P4simProcess:
    proc: subprocess.Popen
    grpc_addr: str
    control_addr: str
    ipc_addr: str
    log_path: Path

    def stop(self) -> None:
        stop_process(self.proc)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def run_command(grpc_addr: str, control_addr: str, ipc_addr: str, thrift_port: int, device_id: int = 1,
                cpu_port: int = 255, clock: str = "virtual", config: Path | None = None,
                priority_queues: int | None = None) -> list[str]:
    """The ``p4sim run`` argv the tests start (built by bmv2_env.commands, like every switch)."""
    from bmv2_env.commands import SwitchOptions, switch_command

    opts = SwitchOptions(grpc_addr=grpc_addr, device_id=device_id, thrift_port=thrift_port,
                         packet_in=ipc_addr, cpu_port=cpu_port, priority_queues=priority_queues,
                         clock=clock, control_addr=control_addr)
    return switch_command("p4sim", opts, config=str(config) if config else None)


def start_p4sim(tmp: Path, *target_extra: str, device_id: int = 1, cpu_port: int = 255,
                clock: str = "virtual", config: Path | None = None, priority_queues: int | None = None,
                channel_credentials: grpc.ChannelCredentials | None = None) -> P4simProcess:
    """``target_extra``: more target options (after '--', e.g. TLS); ``channel_credentials``: how
    to reach a server started with TLS options."""
    grpc_addr = f"127.0.0.1:{free_port()}"
    control_addr = f"127.0.0.1:{free_port()}"
    ipc_addr = f"ipc://{tmp}/p4sim-{os.getpid()}-{free_port()}.ipc"
    log_path = tmp / "p4sim.log"
    cmd = run_command(grpc_addr, control_addr, ipc_addr, free_port(), device_id, cpu_port, clock, config,
                      priority_queues) + list(target_extra)
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    handle = P4simProcess(proc, grpc_addr, control_addr, ipc_addr, log_path)
    channel = (grpc.insecure_channel(grpc_addr) if channel_credentials is None
               else grpc.secure_channel(grpc_addr, channel_credentials))
    try:
        deadline = time.monotonic() + 60
        while True:  # bounded poll until the server accepts connections
            if proc.poll() is not None:
                raise RuntimeError(f"p4sim run exited {proc.returncode}:\n{handle.log()}")
            try:
                grpc.channel_ready_future(channel).result(timeout=0.5)
                break
            except grpc.FutureTimeoutError:
                if time.monotonic() > deadline:
                    handle.stop()
                    raise RuntimeError(f"p4sim run did not come up:\n{handle.log()}")
    finally:
        channel.close()
    return handle
