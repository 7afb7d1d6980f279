# gpu-incident-lab - the two commands:
#   make lab    set up everything and run the lab (ansible-playbook lab.yml)
#   make test   the whole test suite: lint, pytest (real containerd 1.6.20 and 2.2.0), molecule,
#               then pytest against a throw-away real control plane (tests/cluster)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
ORACLE := .cache/containerd/usr/bin/containerd
ORACLE2 := .cache/containerd2/containerd
ORACLE24 := .cache/containerd24/containerd
export ANSIBLE_FORCE_COLOR ?= 0

.PHONY: lab environment grade teardown test lint unit molecule cluster-tests bench venv oracle oracle2 oracle24 clean

lab: venv
	$(BIN)/ansible-playbook lab.yml

environment: venv
	$(BIN)/ansible-playbook lab.yml --tags environment

grade: venv
	$(BIN)/ansible-playbook playbooks/grade.yml

teardown: venv
	$(BIN)/ansible-playbook playbooks/teardown.yml

test: lint unit molecule cluster-tests

lint: venv
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --profile production
	@for f in toolchain/build.sh roles/*/files/*.sh bench/*.sh .ci/run; do bash -n "$$f" || exit 1; done

unit: venv oracle oracle2 oracle24
	CONTAINERD_ORACLE=$(CURDIR)/$(ORACLE) CONTAINERD2_ORACLE=$(CURDIR)/$(ORACLE2) \
	  CONTAINERD24_ORACLE=$(CURDIR)/$(ORACLE24) \
	  $(BIN)/pytest -q tests --ignore=tests/cluster

# needs the control-plane binaries the lab builds (molecule's converge builds them)
cluster-tests: venv
	$(BIN)/pytest -q tests/cluster

molecule: venv
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

# Debian's containerd 1.6.20, unpacked (not installed, no daemon): the oracle for what
# containerd loads. `containerd --config F config dump` needs no running daemon.
oracle: $(ORACLE)

$(ORACLE):
	mkdir -p .cache/deb
	cd .cache/deb && { apt-get download containerd || { apt-get update -qq && apt-get download containerd; }; }
	dpkg-deb -x .cache/deb/containerd_*.deb .cache/containerd
	$(ORACLE) --version

# containerd 2.2.0 built from its pinned Go module (toolchain/containerd2), the second oracle:
# how 2.x merges and migrates. No cgo; about 2-5 minutes the first time.
oracle2: $(ORACLE2)

$(ORACLE2): toolchain/containerd2/go.mod toolchain/containerd2/go.sum
	mkdir -p $(dir $@)
	cd toolchain/containerd2 && CGO_ENABLED=0 go build -trimpath -tags no_btrfs,no_devmapper,no_zfs \
	  -o $(CURDIR)/$@.tmp github.com/containerd/containerd/v2/cmd/containerd
	mv -f $@.tmp $@
	$@ --version

# containerd 2.4.2, the third oracle: 2.3+ migrates each file to the current config version
# before merging. Same flags as 2.2.0; a few minutes the first time.
oracle24: $(ORACLE24)

$(ORACLE24): toolchain/containerd24/go.mod toolchain/containerd24/go.sum
	mkdir -p $(dir $@)
	cd toolchain/containerd24 && CGO_ENABLED=0 go build -trimpath -tags no_btrfs,no_devmapper,no_zfs \
	  -o $(CURDIR)/$@.tmp github.com/containerd/containerd/v2/cmd/containerd
	mv -f $@.tmp $@
	$@ --version

clean:
	rm -rf $(VENV) .cache
