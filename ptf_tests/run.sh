#!/usr/bin/env bash
# Run the PTF suites, each against a freshly started switch, then stop it.
#
# A suite is a directory ptf_tests/<suite>/ with PTF test modules and a suite.env naming its
# program per architecture (PROG=..., INCLUDES="dir ..." for v1model; PROG_TNA=... for tna, or
# NO_TNA="why" where the suite has no TNA program); each suite gets its own switch.
#
#   TARGET=p4sim|bmv2   which switch (default p4sim; bmv2 needs p4c-bm2-ss + simple_switch_grpc)
#   ARCH=v1model|tna    which program the suites run on (default v1model; tna: p4sim only)
#   TRANSPORT=nn|veth   packet ports: nanomsg socket (default, no root) or veth pairs (root)
#   NPORTS=8            switch ports (nanomsg ports or veth pairs ptf-p<i> <-> ptf-h<i>)
#   VPY=...             the Python with the project installed (default .venv/bin/python)
#   CLOCK=virtual|wall  p4sim's clock (default virtual: timing tests drive it; wall: they run in real-time mode, ptf_tests/README.md)
#   SUITES="a b"        which suites (default: every ptf_tests/*/suite.env)
#   PTF_ARGS=...        extra ptf arguments (e.g. a test name filter)
#   SWITCH_LOG=info     the switch's log level (trace: every primitive of every packet, for
#                       debugging; it costs BMv2 ~1 ms per pipeline pass of stellar.p4, a queue
#                       of its own that the timing tests would measure)
#   PTF_TIMEOUT=900     seconds one suite's ptf may run before it is stopped (a stalled target
#                       must not hang the run)
# Exits non-zero if a switch does not come up or any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${TARGET:-p4sim}
TRANSPORT=${TRANSPORT:-nn}
VPY=${VPY:-.venv/bin/python}
NPORTS=${NPORTS:-8}
CLOCK=${CLOCK:-virtual}
SWITCH_LOG=${SWITCH_LOG:-info}
ARCH=${ARCH:-v1model}
case "$ARCH" in
  v1model) CPU_PORT=255 ;;  # BMv2's conventional CPU port
  tna) CPU_PORT=64 ;;       # Tofino-1 pipe 0's CPU Ethernet port (68: pktgen/recirculation)
  *) echo "ARCH=$ARCH: v1model or tna" >&2; exit 2 ;;
esac
if [ "$ARCH" = tna ] && [ "$TARGET" = bmv2 ]; then
  echo "TARGET=bmv2 ARCH=tna is not possible: BMv2 runs v1model programs only and there is no" >&2
  echo "Tofino model here; run the TNA program with TARGET=p4sim (p4sim's TNA pipe)." >&2
  exit 2
fi
DEVICE_ID=1
PTF_BIN=$(dirname "$VPY")/ptf
if [ -z "${SUITES:-}" ]; then
  SUITES=$(for f in ptf_tests/*/suite.env; do basename "$(dirname "$f")"; done)
fi

# The switch is started by bmv2_env (one compile step per target through p4build, one command
# line builder for both targets, checked against simple_switch_grpc's grammar by the tests);
# this script only runs PTF against it.
SWITCH_UP=
STATE_DIR=
stop_switch() {
  if [ -n "$SWITCH_UP" ]; then
    "$VPY" -m bmv2_env down --name ptf --state-dir "$STATE_DIR" >/dev/null || true
  fi
  SWITCH_UP=
}
trap stop_switch EXIT

run_suite() {
  local suite=$1 PROG INCLUDES PROG_TNA="" INCLUDES_TNA="" NO_TNA=""
  # shellcheck disable=SC1090
  source "ptf_tests/$suite/suite.env"
  if [ "$ARCH" = tna ]; then
    if [ -z "$PROG_TNA" ]; then
      echo "== [$suite] not run on tna: ${NO_TNA:-the suite names no TNA program (PROG_TNA)}"
      NOT_RUN+=("$suite")
      return 0
    fi
    PROG=$PROG_TNA INCLUDES=$INCLUDES_TNA
  fi
  local BUILD=$ROOT/build/ptf/$ARCH/$suite
  mkdir -p "$BUILD"
  STATE_DIR=$BUILD/env
  rm -rf "$STATE_DIR"
  local INC=() d
  for d in $INCLUDES; do INC+=(-I "$d"); done
  if [ "$TRANSPORT" = veth ] && [ "$(id -u)" != 0 ]; then
    echo "TRANSPORT=veth needs root" >&2; return 2
  fi

  echo "== [$suite] compile $PROG for $TARGET ($ARCH), start it ($TRANSPORT ports)"
  if ! "$VPY" -m bmv2_env up --name ptf --state-dir "$STATE_DIR" --target "$TARGET" \
      --arch "$ARCH" --program "$PROG" "${INC[@]}" --ports "$NPORTS" --transport "$TRANSPORT" \
      --device-id $DEVICE_ID --cpu-port $CPU_PORT --clock "$CLOCK" --log-level "$SWITCH_LOG"; then
    echo "== [$suite] switch did not come up" >&2
    return 1
  fi
  SWITCH_UP=1
  local GRPC_ADDR P4INFO CONFIG LOG PTF_PARAMS PTF_PORTS
  eval "$("$VPY" -m bmv2_env status --name ptf --state-dir "$STATE_DIR" --shell)"

  # the target and its packet socket or interfaces are there, or this says which is missing
  local CHECK=(--grpc-addr "$GRPC_ADDR") a
  for a in "${PTF_PORTS[@]}"; do
    case "$a" in
      *@ipc://*) CHECK+=(--device-socket "ipc://${a#*@ipc://}") ;;
      [0-9]*@*) CHECK+=(--interface "${a#*@}") ;;
    esac
  done
  if ! "$VPY" -m ptf_tests.preflight "${CHECK[@]}"; then
    echo "== [$suite] target missing; log $LOG" >&2
    tail -n 20 "$LOG" >&2 || true
    stop_switch
    return 1
  fi

  echo "== [$suite] ptf ($TRANSPORT) against $TARGET ($ARCH) at $GRPC_ADDR, log $LOG"
  local rc=0
  # shellcheck disable=SC2086
  timeout --kill-after=10 "${PTF_TIMEOUT:-900}" "$PTF_BIN" --test-dir "ptf_tests/$suite" --pypath "$ROOT" "${PTF_PORTS[@]}" \
    --log-file "$BUILD/ptf.log" --test-params "$PTF_PARAMS" ${PTF_ARGS:-} || rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "== [$suite] PTF stopped after ${PTF_TIMEOUT:-900}s (PTF_TIMEOUT): the target stalled?" >&2
  fi
  if [ $rc -ne 0 ]; then
    echo "== [$suite] PTF failed (rc=$rc); switch log: $LOG" >&2
    tail -n 40 "$LOG" >&2 || true
  fi
  stop_switch
  return $rc
}

FAILED=()
NOT_RUN=()
for suite in $SUITES; do
  [ -f "ptf_tests/$suite/suite.env" ] || { echo "no suite ptf_tests/$suite (suite.env missing)" >&2; exit 2; }
  run_suite "$suite" || FAILED+=("$suite")
done
if [ ${#FAILED[@]} -ne 0 ]; then
  echo "== PTF suites failed ($ARCH): ${FAILED[*]}" >&2
  exit 1
fi
RAN=()
for suite in $SUITES; do
  [[ " ${NOT_RUN[*]} " == *" $suite "* ]] || RAN+=("$suite")
done
echo "== PTF suites passed ($ARCH): ${RAN[*]}${NOT_RUN[*]:+ (not run on $ARCH: ${NOT_RUN[*]})}"
