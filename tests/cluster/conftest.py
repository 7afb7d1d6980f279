"""A real, throw-away Kubernetes control plane for the tests in this folder.

kwokctl starts kube-apiserver, etcd, controller-manager, scheduler and kwok from the
binaries the lab built (LAB_BIN_DIR, default ~/.cache/gpu-incident-lab/bin): the API
server answering here is the one the lab runs, not a stand-in. About 10 s to create.
"""
import os
import subprocess
import time
import uuid

import pytest

BIN = os.path.expanduser(os.environ.get("LAB_BIN_DIR", "~/.cache/gpu-incident-lab/bin"))
COMPONENTS = ["kwokctl", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kwok"]
# The built binaries are shared (read-only) with the user's labs; everything else is the tests'.
CACHE = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")


@pytest.fixture(scope="session", autouse=True)
def home_of_the_tests(tmp_path_factory):
    """The tests never touch a lab they did not create: they run in a HOME of their own, so the
    default lab folder (~/gpuop), the clusters (~/.kwok), the labs' state folders
    (~/.local/state/gpu-incident-lab) and ~/.kube are the tests', never the user's; the built
    binaries (XDG_CACHE_HOME) stay shared. `make test` proves it (tools/lab_snapshot.py)."""
    home = tmp_path_factory.mktemp("home")
    saved = {k: os.environ.get(k) for k in ("HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "KUBECONFIG")}
    os.environ.update(HOME=str(home), XDG_CACHE_HOME=CACHE)
    os.environ.pop("XDG_STATE_HOME", None)
    os.environ.pop("KUBECONFIG", None)
    try:
        yield home
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    missing = [c for c in COMPONENTS if not os.access(os.path.join(BIN, c), os.X_OK)]
    if missing:
        pytest.fail("no %s in %s: build the control plane first (`ansible-playbook lab.yml "
                    "--tags environment` or `make molecule`), or set LAB_BIN_DIR"
                    % ", ".join(missing), pytrace=False)
    name = "lab-pytest-%s" % uuid.uuid4().hex[:6]
    workdir = str(tmp_path_factory.mktemp("kwok"))
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
    out = subprocess.run(create, env=env, capture_output=True, text=True, timeout=300)
    try:
        assert out.returncode == 0, "kwokctl create cluster failed:\n" + out.stdout + out.stderr
        yield os.path.join(workdir, "clusters", name, "kubeconfig.yaml")
    finally:
        subprocess.run([os.path.join(BIN, "kwokctl"), "delete", "cluster", "--name", name],
                       env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="session")
def kube(cluster):
    from ansible.module_utils.lab_kube import Kube
    return Kube(cluster)


@pytest.fixture
def namespace(kube):
    """A fresh namespace, once its default ServiceAccount exists (Pods need it)."""
    name = "t-%s" % uuid.uuid4().hex[:6]
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while kube.get("/api/v1/namespaces/%s/serviceaccounts/default" % name, missing_ok=True) is None:
        if time.monotonic() > deadline:
            pytest.fail("namespace %s: the controller-manager created no default ServiceAccount "
                        "within 30 s" % name)
        time.sleep(0.2)  # poll interval of the bounded wait above
    return name
