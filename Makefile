# Stellar: one Makefile for both targets.
#   TARGET=p4sim (default, embedded, always available) or TARGET=bmv2 (p4c + simple_switch_grpc on PATH)
SHELL := /bin/bash
PY      ?= python3
VENV    ?= .venv
VPY     := $(VENV)/bin/python
TARGET  ?= p4sim
BUILD   ?= build
PROG    ?= p4src/v1model/stellar.p4
NAME    := $(basename $(notdir $(PROG)))

.PHONY: setup test test-fast ptf demo compile bench clean

# Create the virtualenv and install the pinned requirements (idempotent: re-runs only when
# requirements.txt changes).
setup: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	$(VPY) -m pip install -q --no-deps -e .
	touch $@

# The README's test command: the PTF suites on the target, then the pytest suite (unit and
# in-process integration tests), whose summary line closes the output.
test: setup
	$(MAKE) --no-print-directory ptf
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

ptf: setup
	@if [ -x ptf_tests/run.sh ]; then TARGET=$(TARGET) VPY=$(VPY) ptf_tests/run.sh; else echo "ptf: no PTF suite yet"; fi

# The main job: bring up the lab fabric on p4sim and compare ECMP with Stellar
# (DEMO_ARGS=--quick for a short run; the report lands in build/demo/).
demo: setup
	$(VPY) -m control_plane.demo $(DEMO_ARGS)

bench: setup
	$(VPY) bench/p4sim_pps.py

clean:
	rm -rf $(BUILD) .pytest_cache
