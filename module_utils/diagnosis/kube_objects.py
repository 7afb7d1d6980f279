# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Kubernetes objects say, as the scheduler and the device plugin read them.

Which nodes a Pod's nodeSelector and required node affinity admit (the scheduler's
NodeAffinity plugin), what the Pod requests of a resource (the larger of the containers' sum
and any init container), which taints a toleration covers, which of the device plugin's
labelled Pods are the plugin (not GPU feature discovery or the MPS daemon), and what the
scheduler's own message names. Pure functions of the objects given.
"""

import re

from ansible.module_utils.diagnosis.verdict import amount

SOCKET_DIR = "/var/lib/kubelet/device-plugins"

# The three ways the NVIDIA device plugin's Pods are labelled: the static manifest
# (deployments/static/nvidia-device-plugin.yml), the GPU Operator (its
# nvidia-device-plugin-daemonset), the Helm chart (deployments/helm/nvidia-device-plugin:
# app.kubernetes.io/name - on its GFD and MPS DaemonSets too).
PLUGIN_SELECTORS = ("name=nvidia-device-plugin-ds", "app=nvidia-device-plugin-daemonset",
                    "app.kubernetes.io/name=nvidia-device-plugin")
# NVIDIA's toolkit installer as the GPU Operator runs it (its DaemonSet nvidia-container-toolkit-
# daemonset, label app=<name>; assets/state-container-toolkit/0500_daemonset.yaml): it writes the
# runtime's config and restarts containerd by RUNTIME_RESTART_MODE - or says why it did not.
TOOLKIT_SELECTOR = "app=nvidia-container-toolkit-daemonset"
# its own words about the restart (cmd/nvidia-ctk-installer: container.go Restart,
# runtime/containerd/containerd_linux.go SignalContainerd, main.go's signal handling)
TOOLKIT_RESTART_LINE = (r"Skipping restart of \S+ due to --restart-mode=\S+|Sending SIGHUP signal to containerd|"
                        r"Successfully signaled containerd|Error signaling containerd|Max retries reached|"
                        r"unable to restart containerd|Signal received, exiting early|Restarting \S+ (on host )?using systemd|"
                        r"error restarting \S+ using systemd")
# of those, the ones that say containerd was not restarted (skipped, or the restart failed)
TOOLKIT_NO_RESTART = (r"Skipping restart|exiting early|unable to restart|Max retries reached|"
                      r"error restarting")
# Containers that make a Pod GPU feature discovery or the MPS control daemon, not the plugin
# (Helm chart templates daemonset-gfd.yml, daemonset-mps-control-daemon.yml: container names
# gpu-feature-discovery-ctr / mps-control-daemon-ctr, commands gpu-feature-discovery /
# mps-control-daemon).
OTHER_COMPONENTS = {"gpu-feature-discovery": "GPU feature discovery",
                    "mps-control-daemon": "MPS control daemon"}
DRIVER_LABELS = ("gpu-incident-lab/driver-version", "nvidia.com/cuda.driver-version.full",
                 "nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver.major")


def plugin_component(pod):
    """None for a device-plugin Pod, else what it is (GPU feature discovery, MPS daemon)."""
    spec = pod.get("spec") or {}
    for container in spec.get("containers") or []:
        words = [container.get("name") or ""] + [str(c) for c in container.get("command") or []]
        for word in words:
            base = word.rsplit("/", 1)[-1]
            for prefix, what in OTHER_COMPONENTS.items():
                if base.startswith(prefix):
                    return what
    labels = (pod.get("metadata") or {}).get("labels") or {}
    component = labels.get("app.kubernetes.io/component", "")
    for prefix, what in OTHER_COMPONENTS.items():
        if component.startswith(prefix) or prefix in labels.get("app", ""):
            return what
    return None


def _expr_matches(expr, labels, fields):
    key, op = expr.get("key"), expr.get("operator")
    values = expr.get("values") or []
    source = fields if fields is not None else labels
    have = source.get(key)
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return key in source
    if op == "DoesNotExist":
        return key not in source
    if op in ("Gt", "Lt"):
        try:
            left, right = int(have), int(values[0])
        except (TypeError, ValueError, IndexError):
            return False
        return left > right if op == "Gt" else left < right
    return False


def node_admits(pod, node, use_affinity=True):
    """Does the Pod's nodeSelector (and required node affinity) admit this node?"""
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    if not use_affinity:
        return True
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    fields = {"metadata.name": (node.get("metadata") or {}).get("name")}
    for term in terms:
        exprs = term.get("matchExpressions") or []
        field_exprs = term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue
        if all(_expr_matches(e, labels, None) for e in exprs) and \
                all(_expr_matches(e, labels, fields) for e in field_exprs):
            return True
    return False


def pod_request(pod, resource):
    """What the Pod asks of the resource: the larger of the sum over containers and any init
    container (limits count as requests for extended resources)."""
    spec = pod.get("spec") or {}

    def one(c):
        res = c.get("resources") or {}
        value = (res.get("limits") or {}).get(resource, (res.get("requests") or {}).get(resource))
        return amount(value) or 0
    total = sum(one(c) for c in spec.get("containers") or [])
    init = max([one(c) for c in spec.get("initContainers") or []] or [0])
    return max(total, init)


def tolerates(tol, taint):
    """Does the toleration cover the taint (key, value, effect; operator Exists)?"""
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    if tol.get("operator") == "Exists":
        return not tol.get("key") or tol.get("key") == taint.get("key")
    return tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", "")


def mounts_socket_dir(pod):
    """Does one of the Pod's containers mount a hostPath holding the kubelet's socket folder?"""
    spec = pod.get("spec") or {}
    volumes = {}
    for vol in spec.get("volumes") or []:
        path = ((vol.get("hostPath") or {}).get("path") or "").rstrip("/")
        if path and (SOCKET_DIR == path or SOCKET_DIR.startswith(path + "/")):
            volumes[vol.get("name")] = path
    for container in spec.get("containers") or []:
        for mount in container.get("volumeMounts") or []:
            if mount.get("name") in volumes:
                return True
    return False


def scheduler_findings(message, resource):
    """What the scheduler's own message names: taints, affinity, resources, RuntimeClass."""
    out = []
    for count, what in re.findall(r"(\d+) (Insufficient [\w./-]+)", message):
        out.append("%s node(s): %s" % (count, what))
    for count, taint in re.findall(r"(\d+) node\(s\) had untolerated taint(?:\(s\))?(?: ?\{([^}]*)\})?",
                                   message):
        out.append("%s node(s) have an untolerated taint%s" % (count, " {%s}" % taint if taint else ""))
    if "node affinity/selector" in message or "NodeAffinity" in message:
        out.append("the Pod's nodeSelector/required affinity excludes node(s)")
    if "were unschedulable" in message:
        out.append("node(s) are cordoned")
    if "RuntimeClass" in message or "runtimeclass" in message.lower():
        out.append("the RuntimeClass's scheduling rules exclude node(s)")
    return out
