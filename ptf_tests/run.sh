#!/usr/bin/env bash
# Run the PTF suites, each against a freshly started switch, then stop it.
#
# A suite is a directory ptf_tests/<suite>/ with PTF test modules and a suite.env naming its
# program (PROG=..., INCLUDES="dir ..."); each suite gets its own switch.
#
#   TARGET=p4sim|bmv2   which switch (default p4sim; bmv2 needs p4c-bm2-ss + simple_switch_grpc)
#   TRANSPORT=nn|veth   packet ports: nanomsg socket (default, no root) or veth pairs (root)
#   VPY=...             the Python with the project installed (default .venv/bin/python)
#   CLOCK=virtual|wall  p4sim's clock (default virtual: timing tests drive it; wall: they skip)
#   SUITES="a b"        which suites (default: every ptf_tests/*/suite.env)
#   PTF_ARGS=...        extra ptf arguments (e.g. a test name filter)
# Exits non-zero if a switch does not come up or any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${TARGET:-p4sim}
TRANSPORT=${TRANSPORT:-nn}
VPY=${VPY:-.venv/bin/python}
NPORTS=${NPORTS:-8}
CLOCK=${CLOCK:-virtual}
CPU_PORT=255
DEVICE_ID=1
PTF_BIN=$(dirname "$VPY")/ptf
if [ -z "${SUITES:-}" ]; then
  SUITES=$(for f in ptf_tests/*/suite.env; do basename "$(dirname "$f")"; done)
fi

free_port() { "$VPY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

SWITCH_PID=
VETHS=()
IPC_PATH=
stop_switch() {
  if [ -n "$SWITCH_PID" ] && kill -0 "$SWITCH_PID" 2>/dev/null; then
    kill "$SWITCH_PID" 2>/dev/null || true
    wait "$SWITCH_PID" 2>/dev/null || true
  fi
  SWITCH_PID=
  for v in "${VETHS[@]}"; do ip link del "$v" 2>/dev/null || true; done
  VETHS=()
  [ -n "$IPC_PATH" ] && rm -f "$IPC_PATH"
  IPC_PATH=
}
trap stop_switch EXIT

run_suite() {
  local suite=$1 PROG INCLUDES
  # shellcheck disable=SC1090
  source "ptf_tests/$suite/suite.env"
  local BUILD=$ROOT/build/ptf/$suite
  mkdir -p "$BUILD"
  local name; name=$(basename "$PROG" .p4)
  local JSON=$BUILD/$name.json P4INFO=$BUILD/$name.p4info.txtpb LOG=$BUILD/switch-$TARGET.log
  local GRPC_ADDR=127.0.0.1:$(free_port) CONTROL_PORT THRIFT_PORT
  CONTROL_PORT=$(free_port); THRIFT_PORT=$(free_port)
  local INC=() d
  for d in $INCLUDES; do INC+=("-I$d"); done

  echo "== [$suite] compile $PROG for $TARGET"
  if [ "$TARGET" = bmv2 ]; then
    p4c-bm2-ss --arch v1model "${INC[@]}" -DCPU_PORT=$CPU_PORT -o "$JSON" --p4runtime-files "$P4INFO" "$PROG"
  else
    "$VPY" -m p4sim compile "${INC[@]}" -DCPU_PORT=$CPU_PORT -o "$JSON" --p4runtime-files "$P4INFO" "$PROG"
  fi

  # Ports: one nanomsg socket, or NPORTS veth pairs (switch side vethS<i>, PTF side vethP<i>).
  local PORT_ARGS=() PTF_PORT_ARGS=() INTERFACES=None i v
  if [ "$TRANSPORT" = veth ]; then
    [ "$(id -u)" = 0 ] || { echo "TRANSPORT=veth needs root" >&2; return 2; }
    INTERFACES="{"
    for i in $(seq 0 $((NPORTS - 1))); do
      ip link add "vethS$i" type veth peer name "vethP$i"
      VETHS+=("vethS$i")
      for v in "vethS$i" "vethP$i"; do
        ip link set "$v" up
        sysctl -qw "net.ipv6.conf.$v.disable_ipv6=1" || true
      done
      PORT_ARGS+=(-i "$i@vethS$i")
      PTF_PORT_ARGS+=(-i "$i@vethP$i")
      INTERFACES="$INTERFACES$i:'vethS$i',"
    done
    INTERFACES="$INTERFACES}"
  else
    IPC_PATH=$BUILD/ptf-$$.ipc
    PORT_ARGS=(--packet-in "ipc://$IPC_PATH")
    PTF_PORT_ARGS=(--platform nn --device-socket "0-{0-$((NPORTS - 1))}@ipc://$IPC_PATH")
  fi

  echo "== [$suite] start $TARGET (gRPC $GRPC_ADDR, $TRANSPORT ports, log $LOG)"
  local TARGET_PARAMS
  if [ "$TARGET" = bmv2 ]; then
    simple_switch_grpc --no-p4 --device-id $DEVICE_ID "${PORT_ARGS[@]}" --thrift-port "$THRIFT_PORT" \
      --log-console -- --grpc-server-addr "$GRPC_ADDR" --cpu-port $CPU_PORT >"$LOG" 2>&1 &
    TARGET_PARAMS="thrift_port=$THRIFT_PORT"
  else
    "$VPY" -m p4sim run --no-p4 --device-id $DEVICE_ID "${PORT_ARGS[@]}" --log-console -- \
      --grpc-server-addr "$GRPC_ADDR" --cpu-port $CPU_PORT --clock "$CLOCK" \
      --control-addr "127.0.0.1:$CONTROL_PORT" >"$LOG" 2>&1 &
    TARGET_PARAMS="control_addr='127.0.0.1:$CONTROL_PORT'"
  fi
  SWITCH_PID=$!

  # Bounded wait for the gRPC port (the switch is up when it accepts connections).
  if ! "$VPY" - "$GRPC_ADDR" "$SWITCH_PID" <<'PY'
import os, sys, grpc
addr, pid = sys.argv[1], int(sys.argv[2])
ch = grpc.insecure_channel(addr)
for _ in range(60):
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(1)
    try:
        grpc.channel_ready_future(ch).result(timeout=0.5)
        sys.exit(0)
    except grpc.FutureTimeoutError:
        pass
sys.exit(1)
PY
  then
    echo "== [$suite] switch did not come up; log:" >&2
    cat "$LOG" >&2
    stop_switch
    return 1
  fi

  echo "== [$suite] ptf ($TRANSPORT)"
  local rc=0
  # shellcheck disable=SC2086
  "$PTF_BIN" --test-dir "ptf_tests/$suite" --pypath "$ROOT" "${PTF_PORT_ARGS[@]}" \
    --log-file "$BUILD/ptf.log" \
    --test-params "grpc_addr='$GRPC_ADDR';device_id=$DEVICE_ID;cpu_port=$CPU_PORT;target='$TARGET';p4info='$P4INFO';config='$JSON';interfaces=$INTERFACES;$TARGET_PARAMS" \
    ${PTF_ARGS:-} || rc=$?
  if [ $rc -ne 0 ]; then
    echo "== [$suite] PTF failed (rc=$rc); switch log: $LOG" >&2
    tail -n 40 "$LOG" >&2 || true
  fi
  stop_switch
  return $rc
}

FAILED=()
for suite in $SUITES; do
  [ -f "ptf_tests/$suite/suite.env" ] || { echo "no suite ptf_tests/$suite (suite.env missing)" >&2; exit 2; }
  run_suite "$suite" || FAILED+=("$suite")
done
if [ ${#FAILED[@]} -ne 0 ]; then
  echo "== PTF suites failed: ${FAILED[*]}" >&2
  exit 1
fi
echo "== PTF suites passed: $(echo $SUITES)"
