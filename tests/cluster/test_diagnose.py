"""gpu_diagnose against a real API server, scheduler and kwok (the driver guard: test_driver_guard.py).

Each test builds a small GPU world of its own - a kwok node with GPUs in status and a driver
label, a device-plugin DaemonSet (kwok runs its Pod), a RuntimeClass, a GPU Pod - breaks one
thing the way it breaks on a real cluster, and asks gpu_diagnose where the path is cut.
"""
import pathlib
import time
import uuid

import pytest

import gpu_diagnose
from ansible.module_utils.lab_kube import KubeError, condition

ROOT = pathlib.Path(__file__).resolve().parents[2]
DRIVER = "nvidia.com/cuda.driver.major"
FACTS_OK = {"driver_ok": True, "driver_version": "550.54.15", "runtimes_loaded": ["runc", "nvidia"],
            "device_plugin_socket": True}


def wait(what, check, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail("waited %ss for %s" % (timeout, what))
        time.sleep(0.3)  # poll interval of the bounded wait above


class World:
    def __init__(self, kube, namespace):
        self.kube, self.ns = kube, namespace
        self.node = "dg-" + uuid.uuid4().hex[:6]
        self.rc = "nvidia-" + self.node
        kube.create("/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.node, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": self.node,
                                    DRIVER: "550", "nvidia.com/gpu.present": "true"}},
            "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
        self.set_gpus("4", "4")
        wait("node %s Ready" % self.node, lambda: condition(
            kube.get("/api/v1/nodes/" + self.node), "Ready").get("status") == "True")
        kube.create("/apis/node.k8s.io/v1/runtimeclasses", {
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": self.rc}, "handler": "nvidia"})
        self.plugin()

    def set_gpus(self, capacity, allocatable):
        status = {"capacity": {"nvidia.com/gpu": capacity}, "allocatable": {"nvidia.com/gpu": allocatable}}
        self.kube.patch("/api/v1/nodes/%s/status" % self.node, {"status": status}, kind="merge")

    def plugin(self, mount=True):
        path = "/apis/apps/v1/namespaces/%s/daemonsets" % self.ns
        spec = {"nodeSelector": {"kubernetes.io/hostname": self.node},
                "containers": [{"name": "plugin", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}]}
        if mount:
            spec["containers"][0]["volumeMounts"] = [{"name": "dp", "mountPath": "/var/lib/kubelet/device-plugins"}]
            spec["volumes"] = [{"name": "dp", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}]
        body = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "dp"},
                "spec": {"selector": {"matchLabels": {"name": "nvidia-device-plugin-ds"}},
                         "template": {"metadata": {"labels": {"name": "nvidia-device-plugin-ds"}},
                                      "spec": spec}}}
        if self.kube.get(path + "/dp", missing_ok=True) is not None:
            self.kube.request("DELETE", path + "/dp", params={"propagationPolicy": "Foreground"})
            wait("old plugin Pods gone", lambda: not self.plugin_pods(), 60)
            wait("DaemonSet dp gone", lambda: self.kube.get(path + "/dp", missing_ok=True) is None)
        self.kube.create(path, body)
        wait("plugin Pod Running and Ready on %s" % self.node, lambda: any(
            p["status"].get("phase") == "Running" and condition(p, "Ready").get("status") == "True"
            for p in self.plugin_pods()))

    def plugin_pods(self):
        return [p for p in self.kube.items("/api/v1/namespaces/%s/pods" % self.ns,
                                           labelSelector="name=nvidia-device-plugin-ds")
                if p["spec"].get("nodeName") == self.node]

    def pod(self, name, gpus=1, affinity=True, **extra):
        spec = {"nodeSelector": {"kubernetes.io/hostname": self.node}, "runtimeClassName": self.rc,
                "containers": [{"name": "cuda", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
                                "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
        if affinity:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": DRIVER, "operator": "Exists"}]}]}}}
        spec.update(extra)
        self.kube.create("/api/v1/namespaces/%s/pods" % self.ns,
                         {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
        wait("the scheduler's verdict on %s" % name, lambda: condition(
            self.kube.get("/api/v1/namespaces/%s/pods/%s" % (self.ns, name)), "PodScheduled"))
        return name

    def diagnose(self, runner, cluster, pod, facts=None, **args):
        base = {"kubeconfig": cluster, "namespace": self.ns, "pod": pod}
        if facts is not None:
            base["node_facts"] = {self.node: facts}
        base.update(args)
        out = runner(gpu_diagnose.main, {k: v for k, v in base.items() if v is not None})
        assert not out["failed"], out.get("msg")
        assert [l["layer"] for l in out["layers"]] == ["driver", "container-runtime", "device-plugin",
                                                       "node-advertisement", "scheduling", "workload"]
        return out


def layer(out, name):
    return next(l for l in out["layers"] if l["layer"] == name)


@pytest.fixture
def world(kube, namespace):
    w = World(kube, namespace)
    yield w
    for path in ("/api/v1/nodes/" + w.node, "/apis/node.k8s.io/v1/runtimeclasses/" + w.rc):
        try:
            kube.request("DELETE", path)
        except KubeError:
            pass


def test_healthy_path_and_runtime_skipped_without_node_side(module_runner, cluster, world):
    pod = world.pod("healthy")
    wait("healthy Running", lambda: world.kube.get("/api/v1/namespaces/%s/pods/healthy" % world.ns)
         ["status"].get("phase") == "Running")
    out = world.diagnose(module_runner, cluster, pod)
    assert out["first_broken"] is None and out["node"] == world.node
    runtime = layer(out, "container-runtime")
    assert runtime["status"] == "skipped" and runtime["reason"]
    out = world.diagnose(module_runner, cluster, pod, FACTS_OK)
    assert all(l["status"] == "ok" for l in out["layers"]), out["report"]
    out = world.diagnose(module_runner, cluster, None, FACTS_OK, node=world.node, namespace=None)
    assert out["first_broken"] is None and layer(out, "workload")["status"] == "skipped"


def test_driver_label_gone_after_kernel_update(module_runner, cluster, world):
    world.kube.patch("/api/v1/nodes/" + world.node, {"metadata": {"labels": {DRIVER: None}}})
    pod = world.pod("after-reboot")
    out = world.diagnose(module_runner, cluster, pod)
    assert out["first_broken"] == "driver"
    assert any("<missing>" in str(e["value"]) for e in layer(out, "driver")["evidence"])
    # what the scheduler said is evidence of its own layer
    assert layer(out, "scheduling")["status"] == "broken"
    out = world.diagnose(module_runner, cluster, pod, dict(FACTS_OK, driver_ok=False))
    assert out["first_broken"] == "driver"


def test_runtime_handler_not_loaded_and_runtimeclass_missing(module_runner, cluster, world):
    pod = world.pod("incident")
    out = world.diagnose(module_runner, cluster, pod, dict(FACTS_OK, runtimes_loaded=["runc"]))
    assert out["first_broken"] == "container-runtime"
    assert "nvidia" in layer(out, "container-runtime")["next"]
    world.kube.request("DELETE", "/apis/node.k8s.io/v1/runtimeclasses/" + world.rc)
    out = world.diagnose(module_runner, cluster, pod)
    assert out["first_broken"] == "container-runtime"
    assert "404" in str(layer(out, "container-runtime")["evidence"])


def test_device_plugin_gone_or_without_socket_mount(module_runner, cluster, world):
    world.kube.request("DELETE", "/apis/apps/v1/namespaces/%s/daemonsets/dp" % world.ns,
                       params={"propagationPolicy": "Foreground"})
    wait("plugin Pods gone", lambda: not world.plugin_pods())
    pod = world.pod("no-plugin")
    out = world.diagnose(module_runner, cluster, pod, FACTS_OK)
    assert out["first_broken"] == "device-plugin"
    # node_facts says the socket is there, the cluster has no plugin Pod: said, and judged by the cluster
    assert any(e["source"] == "note" and "stale socket" in e["value"]
               for e in layer(out, "device-plugin")["evidence"])
    world.plugin(mount=False)
    out = world.diagnose(module_runner, cluster, pod)
    assert out["first_broken"] == "device-plugin"
    assert "does not mount" in layer(out, "device-plugin")["next"]


def test_node_status_without_the_resource(module_runner, cluster, world):
    world.kube.patch("/api/v1/nodes/%s/status" % world.node, {"status": {
        "capacity": {"nvidia.com/gpu": None}, "allocatable": {"nvidia.com/gpu": None}}}, kind="merge")
    pod = world.pod("no-status")
    out = world.diagnose(module_runner, cluster, pod, FACTS_OK)
    assert out["first_broken"] == "node-advertisement"
    assert "Insufficient nvidia.com/gpu" in str(layer(out, "scheduling")["evidence"])
    world.set_gpus("4", "0")   # what the kubelet does when its plugin is gone
    out = world.diagnose(module_runner, cluster, pod, FACTS_OK)
    assert out["first_broken"] == "node-advertisement"


def test_taint_cordon_and_a_request_too_big_are_scheduling(module_runner, cluster, world):
    world.kube.patch("/api/v1/nodes/" + world.node, {"spec": {"taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}})
    pod = world.pod("tainted")
    out = world.diagnose(module_runner, cluster, pod, FACTS_OK)
    assert out["first_broken"] == "scheduling"
    assert "untolerated taint" in layer(out, "scheduling")["next"], layer(out, "scheduling")["evidence"]
    assert "does not tolerate: nvidia.com/gpu=present:NoSchedule" in layer(out, "scheduling")["next"]
    world.kube.patch("/api/v1/nodes/" + world.node, {"spec": {"taints": None, "unschedulable": True}})
    pod = world.pod("cordoned")
    out = world.diagnose(module_runner, cluster, pod, FACTS_OK)
    assert out["first_broken"] == "scheduling" and "cordoned" in layer(out, "scheduling")["next"]
    world.kube.patch("/api/v1/nodes/" + world.node, {"spec": {"unschedulable": None}})
    pod = world.pod("greedy", gpus=8)
    out = world.diagnose(module_runner, cluster, pod, FACTS_OK)
    assert out["first_broken"] == "scheduling"
    assert layer(out, "node-advertisement")["status"] == "ok"
    assert "requests 8 nvidia.com/gpu" in layer(out, "scheduling")["next"]


def test_refusals_are_plain(module_runner, cluster, world):
    out = module_runner(gpu_diagnose.main, {"kubeconfig": cluster, "namespace": world.ns, "pod": "nope"})
    assert out["failed"] and "does not exist" in out["msg"]
    out = module_runner(gpu_diagnose.main, {"kubeconfig": cluster, "node": "no-such-node"})
    assert out["failed"] and "node no-such-node does not exist" in out["msg"]
    out = module_runner(gpu_diagnose.main, {"kubeconfig": cluster, "node": world.node,
                                            "node_facts": {world.node: {"driver_ok": "yes"}}})
    assert out["failed"] and "boolean" in out["msg"]


def test_node_side_roles_feed_the_diagnosis(tmp_path, cluster, world):
    """gpu_node_facts on the node hosts, gpu_diagnosis on the controller - the SSH-inventory
    play of the README, with the node reached by a local connection and fake tools."""
    import os
    import subprocess
    import sys
    pod = world.pod("via-roles")
    wait("via-roles Running", lambda: world.kube.get(
        "/api/v1/namespaces/%s/pods/via-roles" % world.ns)["status"].get("phase") == "Running")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "nvidia-smi").write_text("#!/bin/sh\necho 550.54.15\n")
    (tools / "containerd").write_text(
        "#!/bin/sh\necho '[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]'\n")
    for tool in tools.iterdir():
        tool.chmod(0o755)
    (tmp_path / "inventory.yml").write_text(
        "all:\n  children:\n    gpu_nodes:\n      hosts:\n        %s:\n          ansible_connection: local\n"
        "          ansible_python_interpreter: %s\n" % (world.node, sys.executable))
    (tmp_path / "site.yml").write_text("""
- hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: gpu_node_facts
      vars:
        gpu_node_facts_nvidia_smi: {tools}/nvidia-smi
        gpu_node_facts_containerd: {tools}/containerd
        gpu_node_facts_socket_dir: {tmp}/no-such-dir
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: {python}
  roles:
    - role: gpu_diagnosis
      vars:
        gpu_diagnosis_kubeconfig: {kubeconfig}
        gpu_diagnosis_namespace: {ns}
        gpu_diagnosis_pod: {pod}
        gpu_diagnosis_node_hosts: "{{{{ groups['gpu_nodes'] }}}}"
        gpu_diagnosis_dest: {tmp}/report.md
        gpu_diagnosis_fail_on_broken: true
""".format(tools=tools, tmp=tmp_path, python=sys.executable, kubeconfig=cluster, ns=world.ns,
           pod=pod))
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0")
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                          "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "site.yml")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    # containerd on the "node" has only runc: the play fails at the runtime layer, with the report
    assert out.returncode != 0, out.stdout[-3000:]
    report = (tmp_path / "report.md").read_text()
    assert "First broken layer: **container-runtime**" in report
    assert "node_facts[%s].runtimes_loaded (containerd config dump): ['runc']" % world.node in report
    assert "broken at container-runtime on %s" % world.node in out.stdout, out.stdout[-1500:]
