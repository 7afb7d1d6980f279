"""A real, throw-away Kubernetes control plane for the tests in this folder.

kwokctl starts kube-apiserver, etcd, controller-manager, scheduler and kwok from the
binaries the lab built (LAB_BIN_DIR, default ~/.cache/gpu-incident-lab/bin): the API
server answering here is the one the lab runs, not a stand-in. About 10 s to create.
"""
import os
import uuid

import pytest

from lab_clusters import kwok_cluster  # tests/cluster/lab_clusters.py
from lab_testing import wait_for  # tests/lab_testing.py: the one bounded wait

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
    with kwok_cluster(tmp_path_factory, "lab-pytest") as kubeconfig:
        yield kubeconfig


@pytest.fixture(scope="session")
def kube(cluster):
    from ansible.module_utils.kube.client import Kube
    return Kube(cluster)


@pytest.fixture
def namespace(kube):
    """A fresh namespace, once its default ServiceAccount exists (Pods need it)."""
    name = "t-%s" % uuid.uuid4().hex[:6]
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    wait_for("namespace %s: the controller-manager to create its default ServiceAccount" % name,
             lambda: kube.get("/api/v1/namespaces/%s/serviceaccounts/default" % name, missing_ok=True), 30,
             interval=0.2)
    return name
