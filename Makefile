# gpufabric.mlnx — build, test and demo on a Debian 12 machine as root.
# `make demo` and `make test` install everything they need themselves (apt + a pinned venv).

SHELL      := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON     ?= python3
VENV       := .venv
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed
COLL_ROOT  := $(CURDIR)/.collections
COLL_LINK  := $(COLL_ROOT)/ansible_collections/gpufabric/mlnx
export ANSIBLE_COLLECTIONS_PATH := $(COLL_ROOT)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)
LAB        ?= tests/lab/labs/demo.yml
# `$(call timed,NAME) command`: bash's time, printed when the command ends - its wall time and the CPU time of the
# processes it waited for (not of the lab's containers: podman's conmon is not its child). `make test` needs 40 min.
timed      = TIMEFORMAT="timed: $(1): %0R s wall, %0U s user, %0S s sys"; time

.PHONY: help venv host image collection tools unit sanity lint docs ee install-test molecule molecule-a molecule-b bench bench-smoke test test-unit \
        test-static test-molecule demo demo-down clean

help:
	@echo "make demo   - build the lab image if missing, start the demo lab (2 racks x 2 servers, 8 NVUE leaves), run"
	@echo "              site.yml end to end (leaves, driver, firmware, NV config, activation, rails, RoCE QoS, the"
	@echo "              validation gate), print where the hand-over report is, tear the lab down (KEEP=1 keeps it)"
	@echo "make test   - unit tests, sanity, lint, docs, ee, install-test and the molecule scenarios on the lab (three"
	@echo "              streams at once: unit | sanity, lint, docs, ee, install-test, molecule A | molecule B)"
	@echo "make ee           - ansible-builder introspect/create on the collection's EE metadata (no image built)"
	@echo "make install-test - build the tarball, install it with only its declared dependencies, run it outside the checkout"
	@echo "make unit | sanity | lint | docs | ee | install-test | molecule | bench | bench-smoke | demo-down | clean"

# requirements-dev.txt: the development stack; requirements.txt (the controller's needs, what an execution
# environment gets) is a subset of it.
$(STAMP): requirements-dev.txt requirements.txt constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt -c constraints.txt
	touch $@

# tests/accel: the tests' bytecode cache for the module payloads Ansible runs, loaded by a .pth file of the venv
# (the lab containers get it from tests/lab/lab.py). Each module run then finds its imports compiled.
ACCEL_PTH  := $(VENV)/.bytecode-cache
$(ACCEL_PTH): $(STAMP) tests/accel/gpufabric_bytecode_cache.py
	$(BIN)/python tests/accel/gpufabric_bytecode_cache.py >/dev/null
	touch $@

venv: $(STAMP) $(ACCEL_PTH)

# The checkout seen as ansible_collections/gpufabric/mlnx (ansible, molecule, ansible-doc).
$(COLL_LINK):
	mkdir -p $(dir $@)
	ln -sfn $(CURDIR) $@

collection: $(COLL_LINK)

host:
	bash tests/lab/setup-host.sh

image: host
	bash tests/lab/image.sh

# Debian's mstflint: the real mstconfig/mstflint, run by tests on this card-less machine. openssh-server: the sshd
# the nv-over-SSH tests start themselves on 127.0.0.1 (tests/unit/nvue/nvue_ssh.py); its service is not used.
# chromium: the headless browser that screenshots the hand-over report (tests/unit/plugins/plugin_utils/
# test_handover_report.py) to check that its plots render. openmpi-bin: the real mpirun that starts the simulated
# nccl-tests ranks in tests/unit/sim/test_perf_tools.py (the lab's image has its own).
tools:
	{ command -v mstconfig >/dev/null && test -x /usr/sbin/sshd && command -v chromium >/dev/null && \
	  command -v mpirun >/dev/null; } || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mstflint openssh-server chromium \
	    openmpi-bin; }

unit: venv collection tools
	$(call timed,unit) $(BIN)/pytest -q -n 2 --durations=30 tests/unit

sanity: venv
	$(call timed,sanity) bash tests/sanity.sh

lint: venv collection
	$(call timed,lint) $(BIN)/ansible-lint

docs: venv collection
	$(call timed,docs) bash tests/docs.sh

# The execution-environment metadata (meta/execution-environment.yml, docs/execution-environment.yml).
ee: venv
	$(call timed,ee) ANSIBLE_BUILDER=$(CURDIR)/$(BIN)/ansible-builder bash tests/install/ee-check.sh

# README's Install path: the built tarball in a venv of ansible-core + requirements.txt only.
install-test: venv tools
	$(call timed,install-test) bash tests/install/install-test.sh

# default: the modules on 8 rails; ofed: the pinned driver through the real apt; driver_firmware: site.yml end to end;
# fabric: site.yml on 8 emulated leaves and 4 servers in rack batches, leaves first, with the fabric's faults.
# Every scenario has a lab of its own (its containers, networks and mgmt subnet: tests/lab/labs/*.yml), so two
# scenarios can run at once; `make test` runs them in two streams (MOLECULE_A after the static checks, MOLECULE_B
# beside them), each list longest first.
MOLECULE_A := driver_firmware default rails
MOLECULE_B := fabric roce_qos ofed platform
scenarios   = for s in $(1); do $(call timed,molecule $$s) $(BIN)/molecule test -s $$s || exit 1; done

molecule: venv collection image
	$(call scenarios,$(MOLECULE_A) $(MOLECULE_B))

molecule-a: venv collection image
	$(call scenarios,$(MOLECULE_A))

molecule-b: venv collection image
	$(call scenarios,$(MOLECULE_B))

# The benchmarks (tests/bench/<name>.py): `make bench` runs each at its full size, each figure printed with its target
# and met / not met; `make bench-smoke` (part of `make test`) runs each at its smallest size, once (BENCH_SMOKE=1), so a
# benchmark that breaks is seen - tests/bench/smoke.py.
BENCHES := run rollout rail_plan planning gate_pairs check_inventory leaves twin site_forks
bench: venv collection image
	for b in $(BENCHES); do $(BIN)/python tests/bench/$$b.py || exit 1; done

bench-smoke: venv collection image
	$(call timed,bench-smoke) $(BIN)/python tests/bench/smoke.py $(BENCHES)

# `make test`: what every target needs once (venv, collection, tools, the lab image), then three streams at once,
# each in its own order: the unit suite (2 workers, its heavy tests first), the static checks (sanity, lint, docs,
# ee, install-test) then the scenarios MOLECULE_A, and the scenarios MOLECULE_B then the benchmarks' smoke run.
# One after another they left a third of the two cores idle (the static checks use one core, molecule ~1.4 of two
# while podman and the network wait); with all seven scenarios in one stream that stream alone took 56 min
# (2026-12-07: fabric 24, driver_firmware 17), the others 40 and 19. Each stream's output is printed whole when the
# stream ends (--output-sync); a failing stream fails `make test` after the others end.
# Each stream's output is also kept in tests/output/streams/<stream>.log; when one fails, tests/stream_summary.sh
# prints its failure lines last (CI shows the tail of a run: the molecule stream ends last and hid a unit failure).
STREAMS    := $(CURDIR)/tests/output/streams
stream     = mkdir -p $(STREAMS); { ( $(1) ) 2>&1 && echo "stream rc=0" || echo "stream rc=$$?"; } | tee $(STREAMS)/$(2).log; \
             test "$$(tail -n 1 $(STREAMS)/$(2).log)" = "stream rc=0"
test: venv collection tools image
	rm -rf $(STREAMS)
	$(call timed,the three streams) $(MAKE) --no-print-directory -j3 --output-sync=recurse --keep-going test-unit \
	  test-static test-molecule || { bash tests/stream_summary.sh $(STREAMS); exit 1; }
	bash tests/stream_summary.sh $(STREAMS)

test-unit:
	$(call stream,$(MAKE) --no-print-directory unit,unit)

test-static:
	$(call stream,$(MAKE) --no-print-directory sanity && $(MAKE) --no-print-directory lint && \
	  $(MAKE) --no-print-directory docs && $(MAKE) --no-print-directory ee && \
	  $(MAKE) --no-print-directory install-test && $(MAKE) --no-print-directory molecule-a,static)

test-molecule:
	$(call stream,$(MAKE) --no-print-directory molecule-b && $(MAKE) --no-print-directory bench-smoke,molecule)

# The demo (tests/lab/demo/prepare.yml, then site.yml): the controller runs the simulator's flint for the firmware
# images, with a simulator state of its own; the reports go to reports/demo/ (emptied first: a demo tests everything).
DEMO_DIR   := $(CURDIR)/tests/output/demo
demo: venv collection tools image
	status=0; rm -rf $(DEMO_DIR) reports/demo; mkdir -p $(DEMO_DIR)/controller; \
	export GPUFABRIC_DEMO_DIR=$(DEMO_DIR) MLXSIM_STATE=$(DEMO_DIR)/controller/state.json \
	  MLXSIM_LOG=$(DEMO_DIR)/controller/calls.jsonl PATH=$(CURDIR)/tests/sim/bin:$$PATH; \
	$(BIN)/python tests/lab/lab.py up --lab $(LAB) && \
	$(BIN)/ansible-playbook -i inventory/lab tests/lab/demo/prepare.yml && \
	$(BIN)/ansible-playbook -i inventory/lab playbooks/site.yml -e gpufabric_report_dir=$(CURDIR)/reports/demo \
	  || status=$$?; \
	if [ -z "$${KEEP:-}" ]; then $(BIN)/python tests/lab/lab.py down --lab $(LAB); fi; \
	if [ -f reports/demo/handover.html ]; then echo "make demo: the hand-over report is reports/demo/handover.html" \
	  "(and .md, .csv, .json, handover-junit.xml; the gate's results: reports/demo/gate.json)"; fi; \
	exit $$status

demo-down: venv
	$(BIN)/python tests/lab/lab.py down --lab $(LAB)

clean:
	rm -rf .collections tests/output .pytest_cache reports
