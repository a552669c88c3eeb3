# Stellar: one Makefile for both targets.
#   TARGET=p4sim (default, embedded, always available) or TARGET=bmv2 (p4c + simple_switch_grpc on PATH)
SHELL := /bin/bash
PY      ?= python3
VENV    ?= .venv
VPY     := $(VENV)/bin/python
TARGET  ?= p4sim
#   ARCH=v1model (default) or ARCH=tna (demo and ptf; p4sim only for tna)
ARCH    ?= v1model
BUILD   ?= build
PROG    ?= p4src/v1model/stellar.p4
NAME    := $(basename $(notdir $(PROG)))

.PHONY: setup shell-venv shell test test-fast ptf demo eval compile tofino bench clean

# Create the virtualenv and install the pinned requirements (idempotent: re-runs only when
# requirements.txt changes).
setup: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	$(VPY) -m pip install -q --no-deps -e .
	touch $@

# p4runtime-shell in its own venv: it pins p4runtime 1.4.1 / protobuf < 3.21, which cannot share
# the project venv (protobuf 6, upb, finsy).
SHELL_VENV ?= .venv-shell
GRPC_ADDR  ?= 127.0.0.1:9559
DEVICE_ID  ?= 0
ELECTION_ID ?= 0,1
shell-venv: $(SHELL_VENV)/.stamp
$(SHELL_VENV)/.stamp: requirements-shell.txt
	$(PY) -m venv $(SHELL_VENV)
	$(SHELL_VENV)/bin/python -m pip install -q -r requirements-shell.txt
	touch $@

# Open p4runtime-shell on a running target, e.g. `p4sim run build/stellar.json` in another
# terminal, then `make shell` (GRPC_ADDR, DEVICE_ID and ELECTION_ID as the target was started:
# p4sim run and simple_switch_grpc default to device 0).  CONFIG=p4info.txtpb,device.json pushes
# a pipeline first; SHELL_ARGS passes anything else (--role-name, --ssl --cacert ...).
# -P: the repo's own `p4` package must not shadow the shell venv's p4runtime modules.
shell: shell-venv
	$(SHELL_VENV)/bin/python -P -m p4runtime_sh --grpc-addr $(GRPC_ADDR) --device-id $(DEVICE_ID) \
		--election-id $(ELECTION_ID) $(if $(CONFIG),--config $(CONFIG)) $(SHELL_ARGS)

# Every switch of a fabric YAML as a local process, links wired (TARGET=p4sim over nanomsg, no root;
# TARGET=bmv2 over veth pairs, root), on the YAML's P4Runtime addresses; then `stellarctl push
# $(FABRIC)`.  `make fabric-down` stops them.  docs/operating.md walks the rest.
FABRIC ?= fabrics/lab.yaml
.PHONY: fabric fabric-down
fabric: setup
	$(VPY) -m bmv2_env up $(FABRIC) --target $(TARGET) $(if $(filter bmv2,$(TARGET)),--transport veth)

fabric-down:
	$(VPY) -m bmv2_env down $(FABRIC)

# The README's test command: the PTF suites on the target for both architectures (v1model, then
# the TNA program on p4sim's TNA pipe), then the pytest suite (unit and in-process integration
# tests), whose summary line closes the output.
test: setup
	$(MAKE) --no-print-directory ptf ARCH=v1model
	$(if $(filter bmv2,$(TARGET)),@echo "ptf ARCH=tna: not run on TARGET=bmv2 (no Tofino model)",$(MAKE) --no-print-directory ptf ARCH=tna)
	$(VPY) -m pytest tests

test-fast: setup
	$(VPY) -m pytest tests -x

# Compile the P4 program for the chosen target (p4c-bm2-ss for bmv2, p4sim compile otherwise).
compile: setup
	@mkdir -p $(BUILD)
ifeq ($(TARGET),bmv2)
	p4c-bm2-ss --arch v1model -I p4src -o $(BUILD)/$(NAME).json --p4runtime-files $(BUILD)/$(NAME).p4info.txtpb $(PROG)
else
	$(VPY) -m p4sim compile -I p4src -o $(BUILD)/$(NAME).json --p4runtime-files $(BUILD)/$(NAME).p4info.txtpb $(PROG)
endif

# The Tofino back end's verdict on p4src/tna/stellar.p4: needs bf-p4c on PATH (p4c built with
# ENABLE_TOFINO=ON; not in the package registries).  Compiles each target with its profiles
# (tofino: no-dre; tofino2: full, no-dre) into $(BUILD)/tofino/ and prints stages, SRAM/TCAM/map
# RAM, PHV bits; exit 0 iff all fit.
# TOFINO_ARGS="--targets tofino2 --profiles no-dre" narrows it.
tofino: setup
	$(VPY) bench/tofino_resources.py --out $(BUILD)/tofino $(TOFINO_ARGS)

# ARCH=v1model (default) or tna (p4sim only: run.sh refuses TARGET=bmv2 ARCH=tna).
ptf: setup
	@if [ -x ptf_tests/run.sh ]; then TARGET=$(TARGET) ARCH=$(or $(ARCH),v1model) VPY=$(VPY) ptf_tests/run.sh; else echo "ptf: no PTF suite yet"; fi

# The main job: bring up the lab fabric on p4sim and compare ECMP with Stellar
# (DEMO_ARGS=--quick for a short run; ARCH=tna runs p4src/tna/stellar.p4; the report lands in
# build/demo/, build/demo/tna/ for ARCH=tna).  A thin entry into fabric_sim.
demo: setup
	$(VPY) -m fabric_sim --arch $(ARCH) $(DEMO_ARGS)

# The fabric study: a quick matrix by default (<= 10 min on 2 cores), EVAL_ARGS=--full for the rest,
# EVAL_ARGS="--ray ADDRESS" to run the same sweep on a Ray cluster.  Output: build/eval/.
eval: setup
	$(VPY) -m fabric_sim.eval $(EVAL_ARGS)

bench: setup
	$(VPY) bench/p4sim_pps.py

clean:
	rm -rf $(BUILD) .pytest_cache
