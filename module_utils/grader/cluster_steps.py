# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Steps 5-8: the cluster side - the trainee's manifests and reports, and the live cluster.

The file checks run first and report without a cluster; the live checks then compare the
reports with what the cluster says (rollout.txt with the DaemonSet's status, node-gpu.txt with
the nodes), never with the spec's example numbers. Nothing in the cluster is changed.
"""

import os
import re

from ansible.module_utils.sharing import device_plugin as ts
from ansible.module_utils.kube import rollout as ro
from ansible.module_utils.grader.base import (
    MISTAKE_2, MISTAKE_3, GraderBase, Result, expect_fields, get, load_yaml_file, needs, read_kv, yaml)


class ClusterSteps(GraderBase):
    """The checks of steps 5-8 (mixed into Grader)."""

    def step5(self):
        """runtimeclass.yaml (RuntimeClass nvidia, handler nvidia, cluster-scoped) and
        gpu-pod.yaml (Pod gpu-lab/cuda-probe, runtimeClassName nvidia, a container limiting
        nvidia.com/gpu: 1), both applied; unscheduled.txt holds the Pod's PodScheduled reason
        (Unschedulable) and the scheduler's own message naming Insufficient nvidia.com/gpu.

        What the trainee must have understood: a RuntimeClass's name and its handler are
        different fields (the handler names containerd's runtime), and a Pending GPU Pod is
        explained by the scheduler's words - no node advertises the resource yet."""
        r = Result()
        rc = load_yaml_file(self.path("k8s/runtimeclass.yaml"), r, "runtimeclass.yaml")
        if rc is not None:
            expect_fields(r, "runtimeclass.yaml", rc, [
                (("kind",), "RuntimeClass"), (("metadata", "name"), "nvidia")])
            if rc.get("handler") != "nvidia":
                r.fail("runtimeclass.yaml: handler must be nvidia (found %r); name and handler "
                       "are different fields, the handler names the containerd runtime"
                       % rc.get("handler"))
            if get(rc, "metadata", "namespace"):
                r.fail("runtimeclass.yaml: RuntimeClass is cluster-scoped; remove metadata.namespace")
        pod = load_yaml_file(self.path("k8s/gpu-pod.yaml"), r, "gpu-pod.yaml")
        if pod is not None:
            self._check_pod_manifest(pod, r)
        if not self.need_cluster(r):
            return r
        if self.read("/api/v1/namespaces/gpu-lab") is None:
            r.fail("namespace gpu-lab does not exist in the cluster")
        live_rc = self.read("/apis/node.k8s.io/v1/runtimeclasses/nvidia")
        if live_rc is None:
            r.fail("RuntimeClass nvidia is not in the cluster: apply runtimeclass.yaml")
        elif live_rc.get("handler") != "nvidia":
            r.fail("the cluster's RuntimeClass nvidia has handler %r" % live_rc.get("handler"))
        live_pod = self.read("/api/v1/namespaces/gpu-lab/pods/cuda-probe")
        if live_pod is None:
            r.fail("Pod gpu-lab/cuda-probe is not in the cluster: apply gpu-pod.yaml")
        elif get(live_pod, "spec", "runtimeClassName") != "nvidia":
            r.fail("the cluster's Pod cuda-probe has runtimeClassName %r"
                   % get(live_pod, "spec", "runtimeClassName"))
        path = self.path("out/unscheduled.txt")
        if not os.path.isfile(path):
            r.fail("unscheduled.txt is missing (expected at %s)" % path)
            return r
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle.read().strip().splitlines()]
        if len(lines) != 2:
            r.fail("unscheduled.txt must have two lines, the PodScheduled reason and message "
                   "(found %d)" % len(lines))
            return r
        reason, message = lines
        if reason != "Unschedulable":
            r.fail("unscheduled.txt line 1 must be the condition's reason, Unschedulable (found %r)"
                   % reason)
        if not re.search(r"\d+/\d+ nodes are available", message):
            r.fail("unscheduled.txt line 2 is not the scheduler's message (`0/N nodes are "
                   "available: ...`): %r" % message[:120])
        elif "Insufficient nvidia.com/gpu" not in message:
            r.fail("unscheduled.txt: the message does not name the missing resource "
                   "(Insufficient nvidia.com/gpu): %r" % message[:160])
        return r

    def _check_pod_manifest(self, pod, r):
        """gpu-pod.yaml: the Pod the spec names, with the runtime class and one GPU."""
        expect_fields(r, "gpu-pod.yaml", pod, [
            (("kind",), "Pod"), (("metadata", "name"), "cuda-probe"),
            (("metadata", "namespace"), "gpu-lab"), (("spec", "runtimeClassName"), "nvidia")])
        containers = get(pod, "spec", "containers") or []
        limits = [str(get(c, "resources", "limits", "nvidia.com/gpu")) for c in containers
                  if isinstance(c, dict)]
        if "1" not in limits:
            r.fail("gpu-pod.yaml: a container needs resources.limits nvidia.com/gpu: 1 (found %s)"
                   % (", ".join(limits) or "no containers"))

    @needs("gpu_node", "gpu_amount", "nodes")
    def step6(self):
        """The node of setting gpu_node advertises setting gpu_amount nvidia.com/gpu in both
        status.capacity and status.allocatable, the Pod cuda-probe is Running, and
        node-gpu.txt is a two-column table of every lab node (setting nodes) with what it
        advertises.

        What the trainee must have understood: advertisement goes device plugin -> kubelet ->
        node status -> scheduler; playing the device plugin means patching status through the
        status subresource (a plain patch leaves status alone)."""
        r = Result()
        if not self.need_cluster(r):
            return r
        node_name, amount = self.settings["gpu_node"], str(self.settings["gpu_amount"])
        node = self.read("/api/v1/nodes/" + node_name)
        if node is None:
            r.fail("node %s does not exist" % node_name)
            return r
        for field in ("capacity", "allocatable"):
            have = (get(node, "status", field) or {}).get("nvidia.com/gpu")
            if have != amount:
                r.fail("node %s status.%s nvidia.com/gpu is %s, expected \"%s\"; patch it with "
                       "--subresource=status (a plain patch leaves status alone)"
                       % (node_name, field, have or "unset", amount))
        pod = self.read("/api/v1/namespaces/gpu-lab/pods/cuda-probe")
        if pod is None:
            r.fail("Pod gpu-lab/cuda-probe does not exist")
        elif get(pod, "status", "phase") != "Running":
            r.fail("Pod cuda-probe is %s, not Running" % get(pod, "status", "phase"))
        path = self.path("out/node-gpu.txt")
        if not os.path.isfile(path):
            r.fail("node-gpu.txt is missing (expected at %s)" % path)
            return r
        with open(path, encoding="utf-8", errors="replace") as handle:
            rows = [line.split() for line in handle.read().strip().splitlines() if line.strip()]
        if not rows or any(len(row) != 2 for row in rows):
            r.fail("node-gpu.txt must be a two-column table (node name, advertised amount), "
                   "one node a line")
            return r
        if not re.match(r"^[A-Z]", rows[0][0]):
            r.note("node-gpu.txt has no header line (e.g. NAME GPU)")
        else:
            rows = rows[1:]
        table = dict(rows)
        nodes = list(self.settings["nodes"])
        missing = [n for n in nodes if n not in table]
        if missing:
            r.fail("node-gpu.txt lacks node(s) %s" % ", ".join(missing))
        if table.get(node_name) != amount:
            r.fail("node-gpu.txt says %s advertises %s; the cluster says %s"
                   % (node_name, table.get(node_name), amount))
        for name, value in table.items():
            if value != "<none>" and not value.isdigit():
                r.fail("node-gpu.txt: amount of %s is %r; write a number or <none>" % (name, value))
        return r

    def _timeslicing_config(self, r):
        """time-slicing.yaml: (the ConfigMap, data.any as text) - mistake 2 named when data.any
        is a mapping; the sharing config inside with setting replicas."""
        path = self.path("k8s/time-slicing.yaml")
        cm = load_yaml_file(path, r, "time-slicing.yaml")
        if cm is None:
            return None, None
        expect_fields(r, "time-slicing.yaml", cm, [
            (("kind",), "ConfigMap"), (("metadata", "name"), "time-slicing-config"),
            (("metadata", "namespace"), "gpu-operator")])
        value = get(cm, "data", "any")
        if isinstance(value, (dict, list)):
            r.fail("time-slicing.yaml: data.any is a YAML mapping - " + MISTAKE_2)
            return cm, None
        if not isinstance(value, str):
            r.fail("time-slicing.yaml: data.any must be a string holding the sharing config")
            return cm, None
        try:
            config = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            r.fail("time-slicing.yaml: data.any is not valid YAML inside: %s" % exc)
            return cm, None
        sharing = get(config, "sharing", "timeSlicing")
        if not isinstance(sharing, dict):
            r.fail("time-slicing.yaml: data.any has no sharing.timeSlicing section")
            return cm, None
        if sharing.get("failRequestsGreaterThanOne") is not True:
            r.fail("time-slicing.yaml: sharing.timeSlicing.failRequestsGreaterThanOne must be true")
        resources = sharing.get("resources")
        first = resources[0] if isinstance(resources, list) and resources else {}
        if not isinstance(first, dict) or first.get("name") != "nvidia.com/gpu":
            r.fail("time-slicing.yaml: the first item of sharing.timeSlicing.resources must have "
                   "name: nvidia.com/gpu")
        elif first.get("replicas") != self.settings["replicas"]:
            r.fail("time-slicing.yaml: replicas must be %s (found %r)"
                   % (self.settings["replicas"], first.get("replicas")))
        return cm, value

    @needs("replicas", "physical_gpus", "vram_per_gpu_gib", "timeslicing_node")
    def step7(self):
        """time-slicing.yaml (ConfigMap gpu-operator/time-slicing-config, data.any a string
        holding sharing.timeSlicing with failRequestsGreaterThanOne and setting replicas),
        applied unchanged; slots.txt equal to the device plugin's own slot table for setting
        physical_gpus x vram_per_gpu_gib; the node of setting timeslicing_node advertising
        GPUs x replicas.

        What the trainee must have understood: ConfigMap data values are strings (mistake 2),
        and time-slicing multiplies slots, not memory - no memory is guaranteed per slot, all
        slots of a GPU share its whole memory."""
        r = Result()
        cm, config = self._timeslicing_config(r)
        values = read_kv(self.path("out/slots.txt"), ts.SLOT_KEYS, r, "slots.txt")
        table = None
        if config is not None:
            try:
                vram = self.settings["vram_per_gpu_gib"]
                if isinstance(vram, float) and vram.is_integer():
                    vram = int(vram)  # VRAM_PER_GPU_GIB=40, as the trainee writes it
                table = ts.slot_table(config, int(self.settings["physical_gpus"]), vram)
            except ts.SlotsError as exc:
                r.fail("time-slicing.yaml: %s" % exc.message)
        if table is not None and values is not None:
            for key in ts.SLOT_KEYS:
                want = str(table[key.lower()])
                if values[key] != want:
                    hint = ""
                    if key == "VRAM_GUARANTEED_PER_SLOT_GIB":
                        hint = (" - time-slicing rotates turns on the whole card; no memory is "
                                "reserved per slot")
                    elif key == "VRAM_SHARED_PER_GPU_GIB":
                        hint = " - all slots of a GPU share its whole memory"
                    r.fail("slots.txt %s=%s, expected %s%s" % (key, values[key], want, hint))
        if not self.need_cluster(r):
            return r
        live = self.read("/api/v1/namespaces/gpu-operator/configmaps/time-slicing-config")
        if live is None:
            r.fail("ConfigMap gpu-operator/time-slicing-config is not in the cluster: apply "
                   "time-slicing.yaml")
        elif config is not None and \
                yaml.safe_load((live.get("data") or {}).get("any", "") or "") != yaml.safe_load(config):
            r.fail("the cluster's time-slicing-config differs from time-slicing.yaml: apply it again")
        node_name = self.settings["timeslicing_node"]
        node = self.read("/api/v1/nodes/" + node_name)
        advertised = (get(node, "status", "allocatable") or {}).get("nvidia.com/gpu") if node else None
        if table is not None and str(advertised) != str(table["advertised"]):
            r.fail("node %s advertises nvidia.com/gpu=%s; with %s GPUs x %s replicas it must be "
                   "\"%s\" (capacity and allocatable, through the status subresource)"
                   % (node_name, advertised or "unset", table["physical_gpus"], table["replicas"],
                      table["advertised"]))
        if values is not None and advertised and values["ADVERTISED"] != str(advertised):
            r.fail("slots.txt ADVERTISED=%s but %s advertises %s"
                   % (values["ADVERTISED"], node_name, advertised))
        return r

    @needs("rollout")
    def step8(self):
        """toolkit-ds.yaml is the initial spec the lab deploys (setting rollout: the
        rollout_stall role's namespace, name, max_unavailable, initial_image and
        initial_memory); the live DaemonSet carries the update (update_image, update_memory)
        and its rollout has stalled; the old Pods were all Ready before the update was
        pushed (mistake 3); rollout.txt's six lines equal what the DaemonSet's status and the
        scheduler's message say.

        What the trainee must have understood: a DaemonSet rolls out node by node within
        maxUnavailable, so one unschedulable new Pod stalls it with old and new Pods side by
        side - and the numbers are read from status, never from expectations."""
        r = Result()
        want = self.settings["rollout"]
        namespace, name = want["namespace"], want["name"]
        ds_file = load_yaml_file(self.path("k8s/toolkit-ds.yaml"), r, "toolkit-ds.yaml")
        if ds_file is not None:
            if ds_file.get("kind") != "DaemonSet":
                r.fail("toolkit-ds.yaml: kind must be DaemonSet")
            if get(ds_file, "metadata", "name") != name or \
                    get(ds_file, "metadata", "namespace") != namespace:
                r.fail("toolkit-ds.yaml: must be %s/%s" % (namespace, name))
            if str(get(ds_file, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")) != \
                    str(want["max_unavailable"]):
                r.fail("toolkit-ds.yaml: spec.updateStrategy.rollingUpdate.maxUnavailable must be %s"
                       % want["max_unavailable"])
            containers = get(ds_file, "spec", "template", "spec", "containers")
            if not isinstance(containers, list) or not containers or not isinstance(containers[0], dict):
                r.fail("toolkit-ds.yaml: spec.template.spec.containers must be a list of containers "
                       "(- name: ..., image: ...)")
                containers = [{}]
            if containers[0].get("image") != want["initial_image"]:
                r.fail("toolkit-ds.yaml: the image must be %s (the initial spec; the update is "
                       "pushed later)" % want["initial_image"])
            if str(get(containers[0], "resources", "requests", "memory")) != str(want["initial_memory"]):
                r.fail("toolkit-ds.yaml: the memory request must be %s" % want["initial_memory"])
        if not self.need_cluster(r):
            return r
        api = self.api()
        try:
            snap = ro.snapshot(api, namespace, name)
        except Exception as exc:
            if getattr(exc, "status", None) == 404:
                r.fail("DaemonSet %s/%s is not in the cluster" % (namespace, name))
                return r
            raise
        verdict = ro.judge(snap)
        images = snap["template_images"]
        if images != [want["update_image"]]:
            r.fail("the DaemonSet's image is %s; update it to %s"
                   % (", ".join(images), want["update_image"]))
        memory = [str(get(c, "resources", "requests", "memory")) for c in snap["template_containers"]]
        if str(want["update_memory"]) not in memory:
            r.fail("the DaemonSet's memory request is %s; update it to %s"
                   % (", ".join(memory), want["update_memory"]))
        if not verdict["stalled"]:
            r.fail("the rollout has not stalled: no Pod of the new spec is unschedulable "
                   "(desired %s, updated %s, ready %s)"
                   % (verdict["desired"], verdict["updated"], verdict["ready"]))
        self._check_ready_before_update(api, namespace, snap, verdict, r)
        values = read_kv(self.path("out/rollout.txt"), ro.REPORT_KEYS, r, "rollout.txt")
        if values is None:
            return r
        for key in ro.REPORT_KEYS:
            want = str(verdict[key.lower()])
            if values[key] != want:
                r.fail("rollout.txt %s=%s, but the cluster shows %s (%s)" % (
                    key, values[key], want, {
                        "DESIRED": "status.desiredNumberScheduled",
                        "UPDATED": "status.updatedNumberScheduled",
                        "READY": "status.numberReady",
                        "OLD_IMAGE_PODS": "Pods still on the old image",
                        "MAX_UNAVAILABLE": "spec.updateStrategy.rollingUpdate.maxUnavailable",
                        "BLOCKER": "from the scheduler's message: %s" % verdict["blocker_message"],
                    }[key]))
        return r

    def _check_ready_before_update(self, api, namespace, snap, verdict, r):
        """Mistake 3: were the old Pods Ready before the new spec was pushed? Too few old
        Pods (desired - maxUnavailable), or old Pods Ready only after the new revision was
        created, mean the stall cannot be explained."""
        try:
            max_unavailable = int(str(snap["max_unavailable"]))
        except (TypeError, ValueError):
            return
        new_hashes = {p["revision"] for p in snap["pods"] if p["images"] == snap["template_images"]}
        revisions = api.items("/apis/apps/v1/namespaces/%s/controllerrevisions" % namespace,
                              labelSelector=snap["selector"])
        # RFC 3339 UTC timestamps as the API server writes them compare as strings
        pushed = [rev["metadata"]["creationTimestamp"] for rev in revisions
                  if (rev["metadata"].get("labels") or {}).get("controller-revision-hash") in new_hashes]
        old = [p for p in snap["pods"] if p["images"] != snap["template_images"]]
        expected_old = max(verdict["desired"] - max_unavailable, 0)
        late = []
        if pushed:
            when = min(pushed)
            late = [p["name"] for p in old if not p["ready_since"] or p["ready_since"] > when]
        if len(old) < expected_old or late:
            r.fail("%s: %d old Pod(s) remain where %d were expected%s" % (
                MISTAKE_3, len(old), expected_old,
                "; not Ready before the update: " + ", ".join(late) if late else ""))
