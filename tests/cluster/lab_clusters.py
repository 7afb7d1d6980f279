"""Throw-away real control planes for the tests in this folder (conftest.py's `cluster`, and
modules that need one of their own)."""
import contextlib
import fcntl
import os
import subprocess
import uuid

import pytest

BIN = os.path.expanduser(os.environ.get("LAB_BIN_DIR", "~/.cache/gpu-incident-lab/bin"))
# the lock roles/kwok_cluster/files/components.sh takes around kwokctl create: kwokctl probes for
# free ports and two creates at once pick the same ones (its own lab's or a test's)
CREATE_LOCK = os.environ.get("COMPONENTS_LOCK", "/tmp/gpu-incident-lab-kwokctl.lock")
COMPONENTS = ["kwokctl", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kwok"]


@contextlib.contextmanager
def kwok_cluster(tmp_path_factory, prefix):
    """A throw-away real control plane (loopback only) named prefix-<random>: yields its kubeconfig,
    deletes it afterwards. The session's `cluster` is one; a module that must not share it (its
    objects would reach other tests' diagnoses) makes its own."""
    missing = [c for c in COMPONENTS if not os.access(os.path.join(BIN, c), os.X_OK)]
    if missing:
        pytest.fail("no %s in %s: build the control plane first (`ansible-playbook lab.yml "
                    "--tags environment` or `make molecule`), or set LAB_BIN_DIR"
                    % ", ".join(missing), pytrace=False)
    name = "%s-%s" % (prefix, uuid.uuid4().hex[:6])
    workdir = str(tmp_path_factory.mktemp("kwok-" + prefix))
    env = dict(os.environ, KWOK_WORKDIR=workdir, PATH=BIN + ":" + os.environ["PATH"])
    config = os.path.join(workdir, "kwokctl.yaml")
    with open(config, "w") as handle:  # loopback only, as the lab's cluster
        handle.write("apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\n"
                     "options:\n  bindAddress: 127.0.0.1\n")
    create = [os.path.join(BIN, "kwokctl"), "--config", config, "create", "cluster", "--name", name,
              "--runtime", "binary", "--kubeconfig", "", "--wait", "120s"]
    for flag, component in (("--kube-apiserver-binary", "kube-apiserver"),
                            ("--kube-controller-manager-binary", "kube-controller-manager"),
                            ("--kube-scheduler-binary", "kube-scheduler"), ("--etcd-binary", "etcd"),
                            ("--kwok-controller-binary", "kwok")):
        create += [flag, os.path.join(BIN, component)]
    with open(CREATE_LOCK, "a") as lock:   # the turn, until --wait saw the API server ready
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = subprocess.run(create, env=env, capture_output=True, text=True, timeout=300)
    try:
        assert out.returncode == 0, "kwokctl create cluster failed:\n" + out.stdout + out.stderr
        yield os.path.join(workdir, "clusters", name, "kubeconfig.yaml")
    finally:
        subprocess.run([os.path.join(BIN, "kwokctl"), "delete", "cluster", "--name", name],
                       env=env, capture_output=True, text=True, timeout=120)
