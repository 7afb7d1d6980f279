"""gpu_diagnose against a real API server, scheduler and kwok (the driver guard: test_driver_guard.py).

Each test builds a small GPU world of its own - a kwok node with GPUs in status and a driver
label, a device-plugin DaemonSet (kwok runs its Pod), a RuntimeClass, a GPU Pod - breaks one
thing the way it breaks on a real cluster, and asks gpu_diagnose where the path is cut.
"""
import pathlib
import uuid

import pytest

import gpu_diagnose
from ansible.module_utils.kube.client import KubeError, condition
from lab_testing import wait_for as wait  # tests/lab_testing.py: the one bounded wait

ROOT = pathlib.Path(__file__).resolve().parents[2]
DRIVER = "nvidia.com/cuda.driver.major"
FACTS_OK = {"driver_ok": True, "driver_version": "550.54.15", "runtimes_loaded": ["runc", "nvidia"],
            "device_plugin_socket": True}


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

    def refused_pod(self, name, because, **kwargs):
        """A Pod the scheduler refuses for the node change just made (`because` in its message).
        The scheduler judges from its informer's copy of the Node: a Pod created right after the
        Node was patched may meet the copy from before (seen under load: the Pod of the taint
        case scheduled onto the tainted node). Such a Pod is not the case under test: it is
        deleted and made again until the verdict is the new Node's - at most 5 times, then the
        last verdict is shown."""
        path = "/api/v1/namespaces/%s/pods/%s" % (self.ns, name)
        for _attempt in range(5):
            self.pod(name, **kwargs)
            verdict = condition(self.kube.get(path), "PodScheduled")
            if verdict.get("status") == "False" and because in (verdict.get("message") or ""):
                return name
            self.kube.request("DELETE", path, params={"gracePeriodSeconds": "0"})
            wait("Pod %s gone" % name, lambda: self.kube.get(path, missing_ok=True) is None)
        raise AssertionError("the scheduler never refused %s for %r: %s" % (name, because, verdict))

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
    # the scheduler judges by its informer's copy of the node: a Pod created right after the patch
    # may still be placed by the old label (seen under load). Until the scheduler refuses it, the
    # Pod is made again - the verdict asserted below is then the scheduler's on the patched node.
    tries = iter(range(1000))

    def refused():
        name = "after-reboot-%d" % next(tries)
        world.pod(name)
        got = condition(world.kube.get("/api/v1/namespaces/%s/pods/%s" % (world.ns, name)), "PodScheduled")
        return name if got.get("status") == "False" else None
    pod = wait("the scheduler to refuse a Pod on %s without the driver label" % world.node, refused, timeout=60)
    out = world.diagnose(module_runner, cluster, pod)
    # issue 21: a label is neither proof of a driver nor of its absence (GFD in file mode drops
    # it for a minute on each restart) - without nvidia-smi the driver layer is unknown, and
    # the cut the cluster itself shows is the scheduler's (the Pod's affinity needs the label)
    assert layer(out, "driver")["status"] == "unknown" and layer(out, "driver")["reason"]
    assert any("<missing>" in str(e["value"]) for e in layer(out, "driver")["evidence"])
    assert out["first_broken"] == "scheduling"
    out = world.diagnose(module_runner, cluster, pod, dict(FACTS_OK, driver_ok=False,
                                                          driver_error="NVIDIA-SMI has failed because it "
                                                          "couldn't communicate with the NVIDIA driver"))
    assert out["first_broken"] == "driver"
    assert "couldn't communicate" in str(layer(out, "driver")["evidence"])


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
    pod = world.refused_pod("tainted", "untolerated taint")
    out = world.diagnose(module_runner, cluster, pod, FACTS_OK)
    assert out["first_broken"] == "scheduling"
    assert "untolerated taint" in layer(out, "scheduling")["next"], layer(out, "scheduling")["evidence"]
    assert "does not tolerate: nvidia.com/gpu=present:NoSchedule" in layer(out, "scheduling")["next"]
    world.kube.patch("/api/v1/nodes/" + world.node, {"spec": {"taints": None, "unschedulable": True}})
    pod = world.refused_pod("cordoned", "unschedulable")
    out = world.diagnose(module_runner, cluster, pod, FACTS_OK)
    assert out["first_broken"] == "scheduling" and "cordoned" in layer(out, "scheduling")["next"]
    world.kube.patch("/api/v1/nodes/" + world.node, {"spec": {"unschedulable": None}})
    pod = world.refused_pod("greedy", "Insufficient nvidia.com/gpu", gpus=8)
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
    (tools / "nvidia-smi").write_text("#!/bin/sh\necho '0, NVIDIA H100 80GB HBM3, GPU-1, 550.54.15, 81559 MiB'\n")
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
        gpu_node_facts_crictl: {tmp}/no-crictl
        gpu_node_facts_kernel_log: {tmp}/no-kernel-log
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
    # no crictl on the "node": only the files were read, and they lack the handler
    assert ("node_facts[%s] runtimes_configured (containerd config dump: what the files make the "
            "next start load): ['runc']" % world.node) in report
    assert "broken at container-runtime on %s" % world.node in out.stdout, out.stdout[-1500:]


CORPUS = ROOT / "tests/diagnosis_corpus"


def _daemonset(kube, ns, name, node, labels, container, mount=True):
    spec = {"nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [dict(container, image="nvcr.io/nvidia/k8s-device-plugin:v0.17.3")]}
    if mount:
        spec["containers"][0]["volumeMounts"] = [{"name": "dp", "mountPath": "/var/lib/kubelet/device-plugins"}]
        spec["volumes"] = [{"name": "dp", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}]
    kube.create("/apis/apps/v1/namespaces/%s/daemonsets" % ns, {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "labels": labels},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
                                                                  "spec": spec}}})


def _running(kube, ns, labels, node):
    selector = ",".join("%s=%s" % kv for kv in labels.items())
    return any(p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running"
               for p in kube.items("/api/v1/namespaces/%s/pods" % ns, labelSelector=selector))


def test_helm_and_operator_labelings_and_gfd_told_apart(module_runner, cluster, world):
    """The Helm chart labels its plugin, GFD and MPS Pods alike; the Operator its plugin
    app=nvidia-device-plugin-daemonset. The lab's own DaemonSet is deleted first."""
    kube = world.kube
    kube.request("DELETE", "/apis/apps/v1/namespaces/%s/daemonsets/dp" % world.ns,
                 params={"propagationPolicy": "Foreground"})
    wait("plugin Pods gone", lambda: not world.plugin_pods())
    helm = {"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/instance": "nvdp"}
    gfd = dict(helm, **{"app.kubernetes.io/component": "gfd"})
    _daemonset(kube, world.ns, "nvdp-gfd", world.node, gfd,
               {"name": "gpu-feature-discovery-ctr", "command": ["gpu-feature-discovery"]}, mount=False)
    wait("GFD Pod Running", lambda: _running(kube, world.ns, gfd, world.node))
    out = world.diagnose(module_runner, cluster, None, FACTS_OK, node=world.node, namespace=None)
    assert layer(out, "device-plugin")["status"] == "broken", out["report"]
    assert "GPU feature discovery, not the device plugin" in str(layer(out, "device-plugin")["evidence"])
    plugin = dict(helm, **{"app.kubernetes.io/component": "plugin"})
    _daemonset(kube, world.ns, "nvdp-plugin", world.node, plugin, {"name": "nvidia-device-plugin-ctr"})
    wait("Helm plugin Pod Running", lambda: _running(kube, world.ns, plugin, world.node))
    out = world.diagnose(module_runner, cluster, None, FACTS_OK, node=world.node, namespace=None)
    assert layer(out, "device-plugin")["status"] == "ok", out["report"]
    operator = {"app": "nvidia-device-plugin-daemonset"}
    kube.request("DELETE", "/apis/apps/v1/namespaces/%s/daemonsets/nvdp-plugin" % world.ns,
                 params={"propagationPolicy": "Foreground"})
    _daemonset(kube, world.ns, "nvidia-device-plugin-daemonset", world.node, operator,
               {"name": "nvidia-device-plugin"})
    wait("Operator plugin Pod Running", lambda: _running(kube, world.ns, operator, world.node)
         and not _running(kube, world.ns, plugin, world.node))
    out = world.diagnose(module_runner, cluster, None, FACTS_OK, node=world.node, namespace=None)
    assert layer(out, "device-plugin")["status"] == "ok", out["report"]


def _bundle_of(kube, world, dest, node_files):
    """A support bundle of the live world in the issue's layout (what gpu_support_bundle writes)."""
    import json
    for name, path in (("nodes.json", "/api/v1/nodes"), ("pods.json", "/api/v1/pods"),
                       ("runtimeclasses.json", "/apis/node.k8s.io/v1/runtimeclasses"),
                       ("events.json", "/api/v1/events"), ("daemonsets.json", "/apis/apps/v1/daemonsets")):
        (dest / "cluster").mkdir(parents=True, exist_ok=True)
        (dest / "cluster" / name).write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                         "items": kube.items(path)}))
    folder = dest / "nodes" / world.node
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in node_files.items():
        (folder / name).write_text(text)
    return str(dest)


def test_a_bundle_of_the_live_cluster_is_judged_as_live(module_runner, cluster, world, tmp_path):
    """One judgment, two sources: the same cluster read live and from its bundle."""
    from ansible.module_utils.node.artefacts import facts_from_artefacts
    node_files = {"nvidia-smi-query.csv": "0, NVIDIA H100 80GB HBM3, GPU-1, 550.54.15, 81559 MiB\n",
                  "crictl-info.json": (CORPUS / "containerd-1.6.20/crictl-info-dropin-not-restarted.json").read_text(),
                  "containerd-config-dump.toml": (CORPUS / "containerd-1.6.20/config-dump-after-dropin.toml").read_text(),
                  "device-plugins.txt": "kubelet.sock\nnvidia-gpu.sock\n"}
    facts = facts_from_artefacts(node_files)
    pods = [world.pod("same-1")]
    world.kube.patch("/api/v1/nodes/" + world.node, {"spec": {"taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}})
    pods.append(world.pod("same-2"))
    for number, pod in enumerate(pods):
        live = world.diagnose(module_runner, cluster, pod, facts)
        root = _bundle_of(world.kube, world, tmp_path / ("b%d" % number), node_files)
        out = module_runner(gpu_diagnose.main, {"bundle": root, "pod": "%s/%s" % (world.ns, pod)})
        assert not out["failed"], out.get("msg")
        assert [(l["layer"], l["status"]) for l in out["layers"]] == \
            [(l["layer"], l["status"]) for l in live["layers"]], (live["report"], out["report"])
        assert out["first_broken"] == live["first_broken"] and out["source"] == "bundle"
    assert live["first_broken"] == "container-runtime"      # the restart pending, read from crictl
