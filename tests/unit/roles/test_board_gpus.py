"""The board's GPUs beyond node status (roles/lab_board/files/board_gpus.py, through board_server.py's
Board and the page's template):

- issue 48 item 7: a real DRA node's published devices and the claims allocated on it, read from
  the real objects of lab-node-2 (tests/diagnosis_corpus/dra-lab-node-2/: its ResourceSlice, the
  claim of dra-lab/gpu-by-claim, the DRA kubelet plugin's Pod); a DRA node that publishes nothing
  said plainly; nothing DRA-related on the default lab (the incident bundle's kwok lab-node-2, the
  empty lists a v1.36 API server answers);
- issue 49 item 4: NVIDIA's toolkit installer Pod with its restart mode and version - the Pod of
  the DaemonSet roles/gpu_toolkit applies (its template rendered by Ansible with the role's own
  variables), as the controller and the kubelet make it; step 8's own toolkit DaemonSet (the
  incident bundle's Pods, label app=nvidia-container-toolkit) is not the installer.

The API server is the only stand-in: it answers each GET with the recorded list of that path,
kept to the request's labelSelector as the API server keeps it (kube/label_selector.py), and 404
for a path it does not serve.
"""
import copy
import functools
import json
import subprocess
import sys

import pytest
import yaml

from lab_testing import ROOT  # tests/lab_testing.py

from ansible.module_utils.kube.client import KubeError
from ansible.module_utils.kube.label_selector import label_selector
from ansible.module_utils.report.render import board_body

sys.path.insert(0, str(ROOT / "roles" / "lab_board" / "files"))
from board_server import Board, Settings  # noqa: E402  (roles/lab_board/files/board_server.py)

DRA = ROOT / "tests" / "diagnosis_corpus" / "dra-lab-node-2"
INCIDENT = ROOT / "tests" / "bundle_corpus" / "lab-node-1-incident" / "cluster"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
CLAIM = "dra-lab/gpu-by-claim-gpu-x8cj7"
GPU_2 = "GPU-aae70f22-daf8-4763-a374-9f85e7662fa6"
PLUGIN = "nvidia-dra-driver-gpu/dra-driver-nvidia-gpu-kubelet-plugin-xzzf9"
INSTALLER = "nvidia-container-toolkit-daemonset-zlxff"   # the installer's Pod on the lab's real node


def recorded(path):
    return json.loads(path.read_text())


class ApiServer(object):
    """Recorded lists by path; a labelSelector kept as the API server keeps it; 404 elsewhere."""

    def __init__(self, lists):
        self.lists = lists
        self.asked = []

    def get(self, path, params=None):
        self.asked.append(path)
        if path not in self.lists:
            raise KubeError(404, "Not Found", "the server could not find the requested resource")
        answer = copy.deepcopy(self.lists[path])
        keep = label_selector((params or {}).get("labelSelector"))
        answer["items"] = [i for i in answer.get("items") or [] if keep(i["metadata"].get("labels") or {})]
        return answer


def board(tmp_path, lists):
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text("{}\n")
    board_ = Board(Settings(tmp_path, 1, kubeconfig=str(kubeconfig)))
    board_._kube = ApiServer(lists)   # pylint: disable=protected-access
    context = board_.context()
    return context, board_body(context)


def dra_lists(slices=None):
    return {"/api/v1/nodes": recorded(DRA / "nodes.json"), "/api/v1/pods": recorded(DRA / "pods.json"),
            SLICES: slices if slices is not None else recorded(DRA / "resourceslices.json"),
            CLAIMS: recorded(DRA / "resourceclaims.json")}


def part(html, marker, end):
    assert marker in html, html
    return html.split(marker, 1)[1].split(end, 1)[0]


def test_a_real_dra_node_shows_its_published_devices_and_the_claim_allocated_on_it(tmp_path):
    context, html = board(tmp_path, dra_lists())
    node = context["dra"]["nodes"]
    assert [n["name"] for n in node] == ["lab-node-2"] and context["dra"]["problem"] is None
    devices = {d["name"]: d for d in node[0]["devices"]}
    assert sorted(devices) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert {(d["type"], d["model"], d["memory"], d["driver"]) for d in devices.values()} == {
        ("gpu", "NVIDIA A100-SXM4-40GB", "40Gi", "gpu.nvidia.com")}
    assert devices["gpu-2"]["uuid"] == GPU_2 and devices["gpu-2"]["claims"] == [CLAIM]
    assert devices["gpu-0"]["uuid"] == "GPU-e7c4bc4a-63b8-474d-03b6-ebb233b2019b" and devices["gpu-0"]["claims"] == []
    assert node[0]["claims"] == [{"ref": CLAIM, "pods": ["dra-lab/gpu-by-claim"], "devices": [
        {"device": "gpu-2", "driver": "gpu.nvidia.com", "pool": "lab-node-2", "uuid": GPU_2, "published": True}]}]
    assert node[0]["plugin"] == PLUGIN + " Running, Ready True" and node[0]["empty"] is None
    # the page: a section per DRA node, a row per device, a row per claim
    section = part(html, '<section id="dra">', "</section>")
    assert "<h2>GPUs by ResourceClaim (DRA)</h2>" in section
    assert '<div class="dra-node" data-dra-node="lab-node-2" data-devices="4" data-claims="1">' in section
    row = part(section, '<tr data-device="gpu-2" data-type="gpu" data-uuid="%s" data-claims="%s">' % (GPU_2, CLAIM), "</tr>")
    assert "NVIDIA A100-SXM4-40GB" in row and CLAIM in row
    claim = part(section, '<tr data-claim="%s" data-devices="gpu-2" data-pods="dra-lab/gpu-by-claim">' % CLAIM, "</tr>")
    assert "gpu-2 (%s)" % GPU_2 in claim and "not published now" not in claim
    assert "DRA kubelet plugin: %s Running, Ready True" % PLUGIN in section
    # the lab-node-2 row of the nodes table is as before: the device plugin's resource is not there
    assert 'data-node="lab-node-2"' in part(html, '<section id="nodes">', "</section>")
    # no installer runs on this lab: no toolkit section
    assert '<section id="toolkit">' not in html


def test_a_dra_node_that_publishes_nothing_is_said_plainly_and_its_claim_still_shown(tmp_path):
    """After lab-node-2's kubelet restarts, its slices are gone for 30-55 s while the plugin's Pod
    runs (docs/dra.md): the same recorded objects with the API server's empty list of slices."""
    empty = dict(recorded(DRA / "resourceslices.json"), items=[])
    context, html = board(tmp_path, dra_lists(slices=empty))
    node = context["dra"]["nodes"]
    assert [n["name"] for n in node] == ["lab-node-2"] and node[0]["devices"] == []
    assert node[0]["empty"].startswith("no ResourceSlices for lab-node-2 - NVIDIA's DRA kubelet plugin has published nothing")
    assert PLUGIN + " Running, Ready True" in node[0]["empty"]
    section = part(html, '<section id="dra">', "</section>")
    said = part(section, '<p class="problem" data-no-slices="lab-node-2">', "</p>")
    assert said.startswith("no ResourceSlices for lab-node-2 - NVIDIA&#39;s DRA kubelet plugin has published nothing")
    assert "<table class=\"dra-devices\">" not in section
    # the claim's allocation (from its node selector) names a device the node does not publish now
    claim = part(section, '<tr data-claim="%s" data-devices="gpu-2" data-pods="dra-lab/gpu-by-claim">' % CLAIM, "</tr>")
    assert "not published now" in claim


def test_a_dra_node_without_its_plugin_pod_says_that_too(tmp_path):
    """lab-node-2 still labelled a DRA node (roles/gpu_dra's label, the chart's nodeSelector), no
    plugin Pod and no slices: the node is shown with both said."""
    lists = dra_lists(slices=dict(recorded(DRA / "resourceslices.json"), items=[]))
    pods = recorded(DRA / "pods.json")
    lists["/api/v1/pods"] = dict(pods, items=[p for p in pods["items"] if p["metadata"]["namespace"] != "nvidia-dra-driver-gpu"])
    context, html = board(tmp_path, lists)
    node = context["dra"]["nodes"][0]
    assert node["empty"] == ("no ResourceSlices for lab-node-2 - NVIDIA's DRA kubelet plugin has published nothing "
                             "(no DRA kubelet plugin Pod runs on it)")
    assert node["plugin"] == "no Pod on lab-node-2 (label app.kubernetes.io/name=dra-driver-nvidia-gpu)"
    assert "DRA kubelet plugin: no Pod on lab-node-2" in html


def test_mig_devices_show_their_profile_and_parent(tmp_path):
    """No MIG slice is recorded: this one is lab-node-2's gpu-0 as NVIDIA's kubelet plugin v0.4.1
    publishes its MIG device (cmd/gpu-kubelet-plugin: MigDeviceInfo.GetDevice - the name
    gpu-<minor>-mig-<profile>-<profile id>-<placement>, CommonAttributesMig's type mig, profile,
    parentUUID and the parent's productName, its own uuid) in place of the whole GPU."""
    slices = recorded(DRA / "resourceslices.json")
    devices = slices["items"][0]["spec"]["devices"]
    gpu0 = next(d for d in devices if d["name"] == "gpu-0")
    mig = {"name": "gpu-0-mig-2g10gb-14-4", "attributes": dict(
        gpu0["attributes"], type={"string": "mig"}, profile={"string": "2g.10gb"}, parentUUID=gpu0["attributes"]["uuid"],
        uuid={"string": "MIG-5c0bf1ea-8f2d-5c62-9d3e-0b6f3a9e4a11"})}
    devices[devices.index(gpu0)] = mig
    context, html = board(tmp_path, dra_lists(slices=slices))
    rows = {d["name"]: d for d in context["dra"]["nodes"][0]["devices"]}
    assert sorted(rows) == ["gpu-0-mig-2g10gb-14-4", "gpu-1", "gpu-2", "gpu-3"]
    assert rows["gpu-0-mig-2g10gb-14-4"]["type"] == "mig"
    assert rows["gpu-0-mig-2g10gb-14-4"]["model"] == "2g.10gb (of NVIDIA A100-SXM4-40GB)"
    assert rows["gpu-0-mig-2g10gb-14-4"]["parent"] == "GPU-e7c4bc4a-63b8-474d-03b6-ebb233b2019b"
    row = part(html, '<tr data-device="gpu-0-mig-2g10gb-14-4" data-type="mig"', "</tr>")
    assert "2g.10gb (of NVIDIA A100-SXM4-40GB)" in row and "on GPU-e7c4bc4a-63b8-474d-03b6-ebb233b2019b" in row


@pytest.mark.parametrize("dra_api", ["empty", "absent"])
def test_the_default_lab_shows_nothing_dra_related_nor_step_8_s_pods_as_the_installer(tmp_path, dra_api):
    """The incident bundle's cluster (lab-node-2 a kwok node, step 8's toolkit DaemonSet Pods) with
    the empty lists the lab's API server answers - or no resource.k8s.io/v1 at all."""
    lists = {"/api/v1/nodes": recorded(INCIDENT / "nodes.json"), "/api/v1/pods": recorded(INCIDENT / "pods.json")}
    if dra_api == "empty":
        lists.update({SLICES: {"items": [], "metadata": {}}, CLAIMS: {"items": [], "metadata": {}}})
    assert [p["metadata"]["labels"]["app"] for p in lists["/api/v1/pods"]["items"]
            if p["metadata"]["name"].startswith("nvidia-container-toolkit-")] == ["nvidia-container-toolkit"] * 3
    context, html = board(tmp_path, lists)
    assert context["dra"] == {"nodes": [], "note": None, "problem": None}
    assert context["toolkit"]["rows"] == [] and context["toolkit"]["problem"] is None
    assert '<section id="dra">' not in html and '<section id="toolkit">' not in html
    assert "ResourceSlice" not in html and "ResourceClaim" not in html and "DRA" not in html
    assert [r["name"] for r in context["nodes"]["rows"]] == ["lab-node-0", "lab-node-1", "lab-node-2"]


def trusted(value):
    from ansible.template import trust_as_template
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, list):
        return [trusted(item) for item in value]
    if isinstance(value, dict):
        return {key: trusted(item) for key, item in value.items()}
    return value


@functools.lru_cache(maxsize=None)
def plugins():
    """Ansible's filters (dict2items, to_json) for the Templar: its plugin loader, set up once."""
    from ansible.plugins.loader import init_plugin_loader
    init_plugin_loader()


def installer_pod(**role_vars):
    """(the toolkit installer's Pod on lab-node-1, the role's toolkit version): the DaemonSet of
    roles/gpu_toolkit/templates/toolkit-daemonset.yaml.j2 rendered by Ansible with the role's
    defaults, vars and the variables of its task (tasks/node.yml) - the environment its
    toolkit_copy.py --env prints - then made a Pod as the DaemonSet controller and the kubelet make
    one (its name, the node, Running and Ready, as tests/cluster/test_real_node.py sees it)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    plugins()
    role = ROOT / "roles" / "gpu_toolkit"
    variables = {"role_path": str(role)}
    for path in (role / "defaults/main.yml", role / "vars/main.yml"):
        variables.update(trusted(yaml.safe_load(path.read_text())))
    task = next(t for t in yaml.safe_load((role / "tasks/node.yml").read_text())
                if t.get("name") == "Toolkit | The image and the DaemonSet")
    env = subprocess.run([sys.executable, str(role / "files/toolkit_copy.py"), "--env"], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    variables.update(trusted(task["vars"]), _gpu_toolkit_env_out={"stdout": env}, **role_vars)
    templar = Templar(loader=DataLoader(), variables=variables)
    text = templar.template(trust_as_template((role / "templates/toolkit-daemonset.yaml.j2").read_text()))
    daemonset = next(d for d in yaml.safe_load_all(text) if d["kind"] == "DaemonSet")
    template = daemonset["spec"]["template"]
    container = template["spec"]["containers"][0]
    pod = {"metadata": dict(template["metadata"], name=INSTALLER, namespace=daemonset["metadata"]["namespace"]),
           "spec": dict(template["spec"], nodeName="lab-node-1"),
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                      "containerStatuses": [{"name": container["name"], "image": container["image"], "ready": True,
                                             "restartCount": 0, "state": {"running": {}}}]}}
    return pod, templar.template(trust_as_template("{{ gpu_toolkit_version }}"))


def incident_with(*pods):
    lists = {"/api/v1/nodes": recorded(INCIDENT / "nodes.json"), "/api/v1/pods": recorded(INCIDENT / "pods.json")}
    lists["/api/v1/pods"]["items"] += list(pods)
    return lists


def test_the_toolkit_installer_s_pod_mode_and_version_as_the_role_runs_it(tmp_path):
    pod, version = installer_pod()
    assert version.startswith("v") and pod["spec"]["containers"][0]["image"] == (
        "nvcr.io/nvidia/k8s/container-toolkit:%s-ubuntu20.04" % version)
    context, html = board(tmp_path, incident_with(pod))
    assert context["toolkit"]["rows"] == [{
        "node": "lab-node-1", "pod": "gpu-operator/" + INSTALLER, "phase": "Running", "ready": "True", "restarts": 0,
        "mode": "none", "mode_set": True,
        "meaning": "writes containerd's config and does not restart it: the running containerd keeps what it loaded",
        "version": version, "tag": version + "-ubuntu20.04",
        "image": "nvcr.io/nvidia/k8s/container-toolkit:%s-ubuntu20.04" % version}]
    section = part(html, '<section id="toolkit">', "</section>")
    row = part(section, '<tr data-toolkit-node="lab-node-1" data-pod="gpu-operator/%s" data-phase="Running" data-ready="True"\n'
               '      data-mode="none" data-version="%s">' % (INSTALLER, version), "</tr>")
    assert "image tag %s-ubuntu20.04" % version in row and "does not restart it" in row
    assert "RUNTIME_RESTART_MODE unset" not in row
    # step 8's toolkit Pods (app=nvidia-container-toolkit) are not the installer
    assert section.count("<tr data-toolkit-node=") == 1 and "nvidia-container-toolkit-7x4rr" not in section


def test_an_installer_without_runtime_restart_mode_runs_nvidia_s_default_signal(tmp_path):
    """The role sets RUNTIME_RESTART_MODE (toolkit_restart_mode); the GPU Operator's DaemonSet need
    not: unset, NVIDIA's installer signals containerd. And the role's signal mode, set."""
    pod, version = installer_pod(gpu_toolkit_restart_mode="signal")
    unset = copy.deepcopy(pod)
    unset["metadata"]["name"] = INSTALLER + "-unset"
    unset["spec"]["nodeName"] = "lab-node-2"
    for container in unset["spec"]["containers"]:
        container["env"] = [e for e in container["env"] if e["name"] != "RUNTIME_RESTART_MODE"]
    context, html = board(tmp_path, incident_with(unset, pod))
    rows = {r["node"]: r for r in context["toolkit"]["rows"]}
    assert [r["node"] for r in context["toolkit"]["rows"]] == ["lab-node-1", "lab-node-2"]
    assert (rows["lab-node-1"]["mode"], rows["lab-node-1"]["mode_set"]) == ("signal", True)
    assert (rows["lab-node-2"]["mode"], rows["lab-node-2"]["mode_set"]) == ("signal", False)
    assert rows["lab-node-2"]["version"] == version
    row = part(html, '<tr data-toolkit-node="lab-node-2"', "</tr>")
    assert 'data-mode="signal"' in row and "(RUNTIME_RESTART_MODE unset: the installer's default)" in row
    assert "sends containerd SIGHUP" in row


def test_a_list_the_api_server_refuses_is_said_and_the_rest_still_shown(tmp_path):
    class Refusing(ApiServer):
        def get(self, path, params=None):
            if path == CLAIMS:
                raise KubeError(403, "Forbidden", 'resourceclaims.resource.k8s.io is forbidden: User "trainee" cannot list')
            return ApiServer.get(self, path, params)

    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text("{}\n")
    board_ = Board(Settings(tmp_path, 1, kubeconfig=str(kubeconfig)))
    board_._kube = Refusing(dra_lists())   # pylint: disable=protected-access
    context = board_.context()
    assert context["dra"]["problem"] == (
        "the ResourceClaims cannot be read: GET %s: 403 Forbidden: resourceclaims.resource.k8s.io is forbidden: "
        'User "trainee" cannot list' % CLAIMS)
    assert [d["name"] for d in context["dra"]["nodes"][0]["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    html = board_body(context)
    assert '<p class="problem" data-problem="dra">the ResourceClaims cannot be read' in html
    assert 'data-claims-none="lab-node-2"' in html
