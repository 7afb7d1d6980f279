# gpu-incident-lab - the two commands:
#   make lab    set up everything and run the lab (ansible-playbook lab.yml)
#   make test   the whole test suite: lint, pytest (real containerd oracles), molecule, then pytest
#               against throw-away real control planes (tests/cluster); it may run beside a lab
#               (the lab under the default names is recorded first and compared last)
SHELL := /bin/bash
# the component versions, defined once (CONTAINERD_DEBIAN, CONTAINERD_2, CONTAINERD_24, ...)
include toolchain/versions.env
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
ORACLE := .cache/containerd/usr/bin/containerd
# what the lab builds is kept per machine, not per checkout (toolchain/build.sh writes it): the
# control plane's and NVIDIA's binaries in LAB_BIN, containerd 2.x in containerd-<version>/ - the
# real node runs the same binaries there (roles/real_node/vars/main.yml), the 2.x oracles below
LAB_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gpu-incident-lab
LAB_BIN ?= $(LAB_CACHE)/bin
ORACLE2 := $(LAB_CACHE)/containerd-$(CONTAINERD_2)/containerd
ORACLE24 := $(LAB_CACHE)/containerd-$(CONTAINERD_24)/containerd
export ANSIBLE_FORCE_COLOR ?= 0

.PHONY: host-lab host-test binaries lane-checks lane-molecule lane-cluster lane-docs lane-guide lane-real-node lane-gpu-node lane-dra collection-unlocked cluster-tests-docs cluster-tests-guide cluster-tests-real-node cluster-tests-gpu-node cluster-tests-dra cluster-tests-rest lab environment grade teardown test suite lint unit molecule cluster-tests bench venv oracle oracle2 oracle24 collection sanity clean lab-snapshot lab-unchanged

# What the two commands need on the host (Debian packages), from one list: toolchain/host-packages.
# Installed with apt-get when missing, a line each saying why; without root, both stop before doing
# anything and name the packages and the command that installs them.
host-lab:
	@PYTHON=$(PYTHON) toolchain/host-setup.sh lab

host-test:
	@PYTHON=$(PYTHON) toolchain/host-setup.sh test

lab: host-lab venv
	$(BIN)/ansible-playbook lab.yml

environment: venv
	$(BIN)/ansible-playbook lab.yml --tags environment

grade: venv
	$(BIN)/ansible-playbook playbooks/grade.yml

teardown: venv
	$(BIN)/ansible-playbook playbooks/teardown.yml

# The tests may run beside a lab: the lab under the default names (or its absence) is recorded
# first and compared last (tools/lab_snapshot.py); a test that touched it fails the run. The
# comparison runs whatever the suite did - a failing run still says whether the lab was touched.
LAB_SNAPSHOT := .cache/lab-before-tests.json
test: host-test lab-snapshot
	@status=0; $(MAKE) --no-print-directory suite || status=$$?; \
	  $(MAKE) --no-print-directory lab-unchanged || status=1; \
	  [ $$status -eq 0 ] || echo "make test: failed (the suite's status $$status; the lab's comparison above)" >&2; \
	  exit $$status

# The suite in lanes, LANES at a time (default 3 on 2 cores: the lanes that drive labs mostly wait
# on control planes, kubelets and containerd): the real node's incident path
# (tests/cluster/test_real_node.py) and its GPU stack (test_real_node_gpu.py), each on a lab of its
# own; the other cluster tests; the guide as printed and the README as printed (test_docs.py);
# Molecule; the checks (lint, unit, collection, sanity). The cores are what they share most (with
# every module in Ansible's worker, three lanes keep them ~75 % busy - and four or five lanes made
# every lane slower and the run no shorter: bench/README.md, session 20), so the lanes that wait most start first and the
# checks, which only compute, last - the lanes end close together instead of one alone. They share nothing but what is built once before them (the lab's binaries, the containerd
# oracles, the venv), Debian's packages the real node unpacks (real-node.sh takes turns) and dist/
# (`make collection` takes turns: the docs run it too). Each lane's output goes to its log and is
# printed whole when the lane ends, so lanes never interleave; bench/README.md ("make test, by
# stage") has the before and after. `make suite LANES=1` runs the lanes one after another.
TEST_LOGS := .cache/test-logs
# each pytest run a temp folder of its own: pytest keeps the last three of /tmp/pytest-of-<user>/ and
# removes older ones as a session starts - a lane's session would delete a running lane's folders
PYTEST_TMP ?= $(or $(TMPDIR),/tmp)/gpu-incident-lab-pytest-$(shell id -u)
LANES ?= 3
SUITE_LANES := lane-gpu-node lane-real-node lane-guide lane-dra lane-docs lane-cluster lane-molecule lane-checks
suite: host-test venv binaries oracle oracle2 oracle24
	@mkdir -p $(TEST_LOGS); rm -f $(TEST_LOGS)/*.log
	@echo "make test: lanes $(patsubst lane-%,%,$(SUITE_LANES)), $(LANES) at a time;" \
	  "each prints whole when it ends - follow them live: tail -f $(TEST_LOGS)/<lane>.log"
	@$(MAKE) --no-print-directory -k -j$(LANES) $(SUITE_LANES)

# a lane's end line: its wall time, and the CPU its processes used (bash's `times`: the children
# it waited for; daemons that detach - control planes, sshd - are not counted)
LANE = start=$$(date +%s); echo "make test: lane $(1) started ($(2))"; \
  $(MAKE) --no-print-directory $(2) > $(TEST_LOGS)/$(1).log 2>&1; status=$$?; \
  times > $(TEST_LOGS)/$(1).times; cpu=$$(tail -1 $(TEST_LOGS)/$(1).times | awk '{n = 0; for (i = 1; i <= 2; i++) {split($$i, t, /[ms]/); n += t[1] * 60 + t[2]}; printf "%d", n}'); \
  { flock 9; cat $(TEST_LOGS)/$(1).log; \
    echo "make test: lane $(1) ($(2)) $$([ $$status -eq 0 ] && echo passed || echo FAILED) in $$(( $$(date +%s) - start )) s (CPU $$cpu s)"; \
  } 9>$(TEST_LOGS)/.print-lock; exit $$status

lane-checks:
	+@$(call LANE,checks,lint unit collection sanity)

lane-molecule:
	+@$(call LANE,molecule,molecule)

lane-real-node:
	+@$(call LANE,real-node,cluster-tests-real-node)

lane-gpu-node:
	+@$(call LANE,gpu-node,cluster-tests-gpu-node)

lane-dra:
	+@$(call LANE,dra,cluster-tests-dra)

lane-cluster:
	+@$(call LANE,cluster,cluster-tests-rest)

lane-guide:
	+@$(call LANE,guide,cluster-tests-guide)

lane-docs:
	+@$(call LANE,docs,cluster-tests-docs)

# The binaries the lab builds (control plane, the real node's, NVIDIA's), built once before the
# lanes so Molecule and the cluster tests never build them at the same time; nothing when a lab
# built them already (toolchain/build.sh, the one build script; gpu-stack includes
# nvidia-mig-parted, gpu-feature-discovery and nfd-master - MIG on lab-node-1; toolkit: NVIDIA's
# toolkit installers and the programs they install, for playbooks/toolkit.yml - issue 49; dra:
# NVIDIA's DRA kubelet plugin, for playbooks/dra.yml - issue 48).
binaries:
	@missing=$$(toolchain/build.sh status $(LAB_BIN) | awk '$$3 != "ok" {print $$1}'; \
	  toolchain/build.sh status $(LAB_BIN) gpu-stack | awk '$$3 != "ok" {print $$1}'; \
	  toolchain/build.sh status $(LAB_BIN) node-problem-detector | awk '$$3 != "ok" {print $$1}'; \
	  toolchain/build.sh status $(LAB_BIN) toolkit | awk '$$3 != "ok" {print $$1}'; \
	  toolchain/build.sh status $(LAB_BIN) dra | awk '$$3 != "ok" {print $$1}'); \
	  for c in $$missing; do echo "make test: building $$c (toolchain/build.sh)"; toolchain/build.sh $$c $(LAB_BIN) || exit 1; done

lab-snapshot:
	mkdir -p $(dir $(LAB_SNAPSHOT))
	$(PYTHON) tools/lab_snapshot.py save $(LAB_SNAPSHOT)

lab-unchanged:
	$(PYTHON) tools/lab_snapshot.py compare $(LAB_SNAPSHOT)

# every shell script the project ships or runs (as root too): found by its #! line, so a new one
# cannot be missed
SHELL_SCRIPTS = $(shell grep -rlE '^\#!(/usr/bin/env |/bin/)(ba)?sh' roles playbooks toolchain bench tools .ci nvml_mock node_runner | grep -v '\.j2$$' | sort)

lint: host-test venv
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --profile production
	shellcheck --version | head -2
	shellcheck -x $(SHELL_SCRIPTS)

unit: host-test venv oracle oracle2 oracle24
	CONTAINERD_ORACLE=$(CURDIR)/$(ORACLE) CONTAINERD2_ORACLE=$(ORACLE2) \
	  CONTAINERD24_ORACLE=$(ORACLE24) \
	  $(BIN)/pytest -q --durations=10 --basetemp=$(PYTEST_TMP)-unit tests/unit

# needs the control-plane binaries the lab builds (molecule's converge builds them)
cluster-tests: host-test venv
	$(BIN)/pytest -q --basetemp=$(PYTEST_TMP)-cluster tests/cluster

# the parts make test runs side by side (lanes above); each a temp folder of its own
CLUSTER_OWN_LANES := test_docs.py test_real_node.py test_real_node_gpu.py test_dra.py
cluster-tests-real-node: host-test venv
	$(BIN)/pytest -q --durations=25 --basetemp=$(PYTEST_TMP)-real-node tests/cluster/test_real_node.py

cluster-tests-dra: host-test venv
	$(BIN)/pytest -q --durations=10 --basetemp=$(PYTEST_TMP)-dra tests/cluster/test_dra.py

cluster-tests-gpu-node: host-test venv
	$(BIN)/pytest -q --durations=25 --basetemp=$(PYTEST_TMP)-gpu-node tests/cluster/test_real_node_gpu.py

# the guide (docs/steps.md, both languages) as printed, and everything else of test_docs.py
cluster-tests-guide: host-test venv
	$(BIN)/pytest -q --durations=15 --basetemp=$(PYTEST_TMP)-guide tests/cluster/test_docs.py -k guide

cluster-tests-docs: host-test venv
	$(BIN)/pytest -q --durations=15 --basetemp=$(PYTEST_TMP)-docs tests/cluster/test_docs.py -k "not guide"

cluster-tests-rest: host-test venv
	$(BIN)/pytest -q --durations=25 --basetemp=$(PYTEST_TMP)-cluster tests/cluster $(addprefix --ignore=tests/cluster/,$(CLUSTER_OWN_LANES))

molecule: host-test venv
	source $(BIN)/activate && molecule test --all

bench: venv
	source $(BIN)/activate && bench/lab-timings.sh

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/ansible-galaxy collection install -r requirements.yml
	touch $@

# Debian's containerd (CONTAINERD_DEBIAN), unpacked (not installed, no daemon): the oracle for
# what containerd loads. `containerd --config F config dump` needs no running daemon. Another
# Debian release's apt gives another containerd: refused, naming what it gave.
oracle: $(ORACLE)

$(ORACLE):
	mkdir -p .cache/deb
	cd .cache/deb && { apt-get download containerd || { apt-get update -qq && apt-get download containerd; }; }
	deb=$$(ls .cache/deb/containerd_*.deb | head -1); \
	  case "$$(basename "$$deb")" in containerd_$(CONTAINERD_DEBIAN)[~-]*) ;; \
	  *) echo "apt gave $$(basename "$$deb"); the 1.6 oracle must be containerd $(CONTAINERD_DEBIAN) (Debian 12's, toolchain/versions.env)" >&2; \
	     rm -f "$$deb"; exit 1 ;; esac; \
	  dpkg-deb -x "$$deb" .cache/containerd
	$(ORACLE) --version | grep -F " $(CONTAINERD_DEBIAN)"

# containerd CONTAINERD_2 built from its pinned Go module (toolchain/containerd2), the second oracle:
# how 2.x merges and migrates. No cgo; about 2-5 minutes the first time, once per machine (the
# real node's containerd 2.2.0 is the same binary); its --version is the check, not a file's age.
oracle2:
	@$(ORACLE2) --version 2>/dev/null | grep -qF " $(CONTAINERD_2)" || toolchain/build.sh containerd:$(CONTAINERD_2) $(dir $(ORACLE2))
	$(ORACLE2) --version | grep -F " $(CONTAINERD_2)"

# containerd CONTAINERD_24, the third oracle: 2.3+ migrates each file to the current config version
# before merging. Same flags as the second; a few minutes the first time.
oracle24:
	@$(ORACLE24) --version 2>/dev/null | grep -qF " $(CONTAINERD_24)" || toolchain/build.sh containerd:$(CONTAINERD_24) $(dir $(ORACLE24))
	$(ORACLE24) --version | grep -F " $(CONTAINERD_24)"

# The collection gpu_incident.lab, built from the same sources the lab runs: tools/build_collection.py
# stages what collection/ships.yml lists (and what that imports) under build/, ansible-galaxy packs
# it with its MANIFEST.json.
COLLECTION_STAGE := build/ansible_collections/gpu_incident/lab
# build/ and dist/ are one per checkout: a second `make collection` at the same time (the docs run it
# as printed beside the suite's own) waits for the first (COLLECTION_LOCK)
COLLECTION_LOCK := .cache/collection.lock
collection: venv
	@mkdir -p $(dir $(COLLECTION_LOCK))
	flock $(COLLECTION_LOCK) $(MAKE) --no-print-directory collection-unlocked

collection-unlocked:
	rm -rf $(COLLECTION_STAGE) dist
	$(BIN)/python tools/build_collection.py $(COLLECTION_STAGE)
	$(BIN)/ansible-galaxy collection build $(COLLECTION_STAGE) --output-path dist --force

# ansible-test sanity on what the tarball ships, unpacked outside the checkout (inside it,
# ansible-test would list files with this repository's git, which ignores build/); no ignore
# file. ansible-test fetches a pip bootstrap script from a site this machine cannot reach:
# tools/get_pip_standin.py stands in for it.
SANITY_DIR ?= $(or $(TMPDIR),/tmp)/gpu-incident-lab-sanity
SANITY_ROOT := $(SANITY_DIR)/ansible_collections/gpu_incident/lab
sanity: collection
	rm -rf $(SANITY_DIR) && mkdir -p $(SANITY_ROOT)
	flock $(COLLECTION_LOCK) sh -c 'tar -xzf dist/gpu_incident-lab-*.tar.gz -C $(SANITY_ROOT)'
	pip_version=$$(grep -oP "pip='\K[0-9.]+" $(VENV)/lib/python3*/site-packages/ansible_test/_internal/python_requirements.py | head -1); \
	  mkdir -p ~/.ansible/test/cache && cp tools/get_pip_standin.py ~/.ansible/test/cache/get_pip_$${pip_version//./_}.py
	cd $(SANITY_ROOT) && $(CURDIR)/$(BIN)/ansible-test sanity --venv --python 3.11

clean:
	rm -rf $(VENV) .cache
