"""Our client and modules against a real API server, scheduler and kwok (see conftest)."""
import re

import pytest

import kube_objects
import manifest_drift
import node_resources
import pod_wait
from ansible.module_utils.kube.client import KubeError, condition


def configmap(namespace, name, value):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": {"any": value}}


# ------------------------------------------------------------------ client
def test_reads_and_not_found(kube, namespace):
    assert kube.get("/version")["major"] == "1"
    assert kube.get("/api/v1/namespaces/%s/configmaps/none" % namespace, missing_ok=True) is None
    with pytest.raises(KubeError) as err:
        kube.get("/api/v1/namespaces/%s/configmaps/none" % namespace)
    assert err.value.status == 404 and 'configmaps "none" not found' in str(err.value)


def test_lists_follow_continue_tokens(kube, namespace):
    for index in range(5):
        kube.create("/api/v1/namespaces/%s/configmaps" % namespace, configmap(namespace, "cm-%d" % index, "x"))
    names = [c["metadata"]["name"] for c in kube.items("/api/v1/namespaces/%s/configmaps" % namespace,
                                                        page_size=2)]
    assert sorted(n for n in names if n.startswith("cm-")) == ["cm-%d" % i for i in range(5)]


def test_discovery_builds_paths(kube, namespace):
    assert kube.path("v1", "ConfigMap", "x", namespace) == "/api/v1/namespaces/%s/configmaps/x" % namespace
    assert kube.path("node.k8s.io/v1", "RuntimeClass", "nvidia") == "/apis/node.k8s.io/v1/runtimeclasses/nvidia"
    assert kube.path("apps/v1", "DaemonSet", None, namespace).endswith("/namespaces/%s/daemonsets" % namespace)
    with pytest.raises(KubeError, match="no kind Gadget"):
        kube.path("v1", "Gadget", "x")
    with pytest.raises(KubeError, match="no API example.com/v9"):
        kube.path("example.com/v9", "Gadget", "x")


def test_patch_returns_the_stored_object(kube, namespace):
    path = "/api/v1/namespaces/%s/configmaps" % namespace
    kube.create(path, configmap(namespace, "p", "1"))
    stored = kube.patch(path + "/p", {"data": {"any": "2"}})
    assert stored["data"]["any"] == "2" and kube.get(path + "/p")["data"]["any"] == "2"


# ------------------------------------------------------------------ manifest_drift
def test_manifest_drift_missing_same_differs(module_runner, cluster, kube, namespace):
    wanted = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
              configmap(namespace, "time-slicing-config", "version: v1\n")]
    out = module_runner(manifest_drift.main, {"kubeconfig": cluster, "definitions": wanted})
    assert [o["state"] for o in out["objects"]] == ["same", "missing"]
    assert out["to_apply"] == [wanted[1]] and out["missing"] == [wanted[1]] and not out["changed"]
    kube.create("/api/v1/namespaces/%s/configmaps" % namespace, wanted[1])
    out = module_runner(manifest_drift.main, {"kubeconfig": cluster, "definitions": wanted})
    assert [o["state"] for o in out["objects"]] == ["same", "same"] and out["to_apply"] == []
    assert out["live"][1]["metadata"]["uid"]
    changed = configmap(namespace, "time-slicing-config", "version: v2\n")
    out = module_runner(manifest_drift.main, {"kubeconfig": cluster, "definitions": [changed]})
    assert out["objects"][0]["state"] == "differs" and out["objects"][0]["differences"] == ["data.any"]
    assert out["differing"] == [changed] and out["missing"] == []


def test_manifest_drift_names_an_unknown_kind(module_runner, cluster):
    out = module_runner(manifest_drift.main, {"kubeconfig": cluster, "definitions": [
        {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"}}]})
    assert out["failed"] and "cannot read ClusterPolicy p" in out["msg"] and "nvidia.com/v1" in out["msg"]


# ------------------------------------------------------------------ kube_objects
def test_kube_objects_returns_what_kubernetes_core_k8s_info_returns(module_runner, cluster, kube, namespace):
    """The oracle is kubernetes.core.k8s_info itself, run on the same cluster with the same
    arguments: RV(resources) and api_found equal, object for object."""
    from ansible_collections.kubernetes.core.plugins.modules import k8s_info
    path = "/api/v1/namespaces/%s/configmaps" % namespace
    for name, app in (("a-1", "a"), ("a-2", "a"), ("b-1", "b")):
        body = configmap(namespace, name, name)
        body["metadata"]["labels"] = {"app": app, "tier": "gpu" if name != "a-2" else "cpu"}
        kube.create(path, body)
    queries = [
        dict(kind="ConfigMap", namespace=namespace),
        dict(kind="ConfigMap", namespace=namespace, label_selectors=["app=a"]),
        dict(kind="ConfigMap", namespace=namespace, label_selectors=["app=a", "tier!=cpu"]),
        dict(kind="ConfigMap", namespace=namespace, label_selectors=["app in (a,b)", "tier"]),
        dict(kind="ConfigMap", label_selectors=["app=b"]),                     # every namespace
        dict(kind="ConfigMap", namespace=namespace, field_selectors=["metadata.name=b-1"]),
        dict(kind="ConfigMap", namespace=namespace, name="a-2"),
        dict(kind="ConfigMap", namespace=namespace, name="none"),             # not found: []
        dict(kind="Namespace", name=namespace),                               # not namespaced
        dict(kind="DaemonSet", api_version="apps/v1", namespace=namespace),   # another group, none
        dict(kind="Gadget", namespace=namespace),                             # a kind not served
    ]
    for query in queries:
        args = dict(query, kubeconfig=cluster)
        ours, theirs = module_runner(kube_objects.main, args), module_runner(k8s_info.main, args)
        assert not ours["failed"] and not theirs["failed"], (query, ours, theirs.get("msg"))
        assert ours["api_found"] == theirs["api_found"], (query, ours["api_found"])
        assert ours["resources"] == theirs["resources"], query
        assert not ours["changed"]
    assert [c["metadata"]["name"] for c in module_runner(kube_objects.main, dict(queries[2], kubeconfig=cluster))["resources"]] == ["a-1"]
    assert module_runner(kube_objects.main, dict(queries[-1], kubeconfig=cluster))["api_found"] is False


def test_kube_objects_refuses_what_the_api_server_cannot_mean(module_runner, cluster, namespace):
    out = module_runner(kube_objects.main, dict(kubeconfig=cluster, kind="ConfigMap", namespace=namespace,
                                                name="a", label_selectors=["app=a"]))
    assert out["failed"] and "give the name or the selectors, not both" in out["msg"]
    out = module_runner(kube_objects.main, dict(kubeconfig=cluster, kind="Node", namespace=namespace))
    assert out["failed"] and "Node (v1) is not namespaced: give no namespace" in out["msg"]
    out = module_runner(kube_objects.main, dict(kubeconfig=cluster, kind="ConfigMap", label_selectors=["app in (a"]))
    assert out["failed"] and out["msg"].startswith("kube_objects v1 ConfigMap: 400 Bad Request")


# ------------------------------------------------------------------ nodes
def kwok_node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def test_node_resources_reports_missing_sets_and_waits(module_runner, cluster, kube):
    kube.create("/api/v1/nodes", kwok_node("pt-node-0"))
    args = {"kubeconfig": cluster, "names": ["pt-node-0", "pt-node-1"],
            "resources": {"nvidia.com/gpu": "4"}, "missing": "report", "wait_ready": True}
    out = module_runner(node_resources.main, args)
    assert out["missing"] == ["pt-node-1"] and out["changed_nodes"] == ["pt-node-0"]
    kube.create("/api/v1/nodes", kwok_node("pt-node-1"))
    out = module_runner(node_resources.main, dict(args, missing="fail", wait_timeout=60))
    assert out["changed_nodes"] == ["pt-node-1"] and out["not_ready"] == []
    by_name = {n["name"]: n for n in out["cluster_nodes"]}
    assert by_name["pt-node-1"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert kube.get("/api/v1/nodes/pt-node-1")["status"]["capacity"]["nvidia.com/gpu"] == "4"
    again = module_runner(node_resources.main, dict(args, missing="fail"))
    assert not again["changed"]
    gone = module_runner(node_resources.main, dict(args, names=["pt-node-9"], missing="fail"))
    assert gone["failed"] and "node(s) pt-node-9 not found" in gone["msg"]


def test_node_resources_creates_a_fleet_on_several_connections(module_runner, cluster, kube):
    names = ["fleet-%d" % i for i in range(60)]
    small = kwok_node("fleet-7")  # one exists already, with less memory: shaped, not created
    small["status"]["capacity"]["memory"] = small["status"]["allocatable"]["memory"] = "16Gi"
    kube.create("/api/v1/nodes", small)
    args = {"kubeconfig": cluster, "names": names, "resources": {"cpu": "8", "memory": "32Gi"},
            "missing": "create", "workers": 6, "wait_ready": True, "wait_timeout": 60,
            "template": {"metadata": {"annotations": {"kwok.x-k8s.io/node": "fake"},
                                      "labels": {"type": "kwok", "fleet": "yes"}}}}
    planned = module_runner(node_resources.main, args, check_mode=True, diff=True)
    assert planned["changed"] and len(planned["created"]) == 59 and "fleet-7" not in planned["created"]
    assert "fleet-0: created" in planned["diff"]["after"]
    assert kube.get("/api/v1/nodes/fleet-0", missing_ok=True) is None  # check mode made nothing
    out = module_runner(node_resources.main, args)
    assert not out["failed"], out.get("msg")
    assert sorted(out["created"]) == sorted(n for n in names if n != "fleet-7")
    assert out["changed_nodes"] == ["fleet-7"] and out["not_ready"] == [] and out["missing"] == []
    stored = kube.get("/api/v1/nodes/fleet-42")
    assert stored["metadata"]["labels"]["kubernetes.io/hostname"] == "fleet-42"
    assert stored["metadata"]["labels"]["fleet"] == "yes"
    assert stored["status"]["allocatable"]["memory"] == "32Gi"  # kept on creation, no patch
    assert condition(stored, "Ready").get("status") == "True"
    assert kube.get("/api/v1/nodes/fleet-7")["status"]["capacity"]["memory"] == "32Gi"
    again = module_runner(node_resources.main, args)
    assert not again["changed"] and again["created"] == [] and again["changed_nodes"] == []
    bad = module_runner(node_resources.main, dict(args, names=["fleet-x"],
                                                  template={"metadata": {"labels": {"n": 1}}}))
    assert bad["failed"] and "quote numbers" in bad["msg"]
    assert kube.get("/api/v1/nodes/fleet-x", missing_ok=True) is None


# ------------------------------------------------------------------ pod_wait
def test_pod_wait_records_the_schedulers_words_once(module_runner, cluster, kube, namespace, tmp_path):
    kube.create("/api/v1/namespaces/%s/pods" % namespace, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
        "spec": {"nodeSelector": {"gpu": "none-has-this"},
                 "containers": [{"name": "c", "image": "busybox"}]}})
    record = tmp_path / "unscheduled.txt"
    args = {"kubeconfig": cluster, "namespace": namespace, "name": "probe", "wait_timeout": 60,
            "condition": {"type": "PodScheduled", "status": "False"}, "record": str(record)}
    out = module_runner(pod_wait.main, args)
    assert out["changed"] and out["condition"]["reason"] == "Unschedulable"
    reason, message = record.read_text().splitlines()
    # the scheduler's own words, as the Pod carried them when pod_wait read it; the scheduler may
    # re-judge the Pod since (nodes of the tests before turning Ready change its counts)
    assert reason == out["condition"]["reason"] == "Unschedulable" and message == out["condition"]["message"]
    live = condition(kube.get("/api/v1/namespaces/%s/pods/probe" % namespace), "PodScheduled")
    # the scheduler's two forms: a cluster with nodes (none fits), or none yet (this test alone)
    words = r"(0/\d+ nodes are available: |no nodes available to schedule pods)"
    assert live["reason"] == "Unschedulable" and re.match(words, live["message"])
    assert re.match(words, message)
    again = module_runner(pod_wait.main, args)
    assert not again["changed"] and again["kept_existing"] and again["waited"] == 0
    assert again["recorded"] == record.read_text()


def test_pod_wait_timeout_says_what_it_saw(module_runner, cluster, kube, namespace):
    kube.create("/api/v1/namespaces/%s/pods" % namespace, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stuck"},
        "spec": {"nodeSelector": {"gpu": "none-has-this"},
                 "containers": [{"name": "c", "image": "busybox"}]}})
    out = module_runner(pod_wait.main, {"kubeconfig": cluster, "namespace": namespace, "name": "stuck",
                                        "phase": "Running", "wait_timeout": 3})
    assert out["failed"] and "waited 3s for phase Running" in out["msg"]
    assert "last seen: phase Pending" in out["msg"]
