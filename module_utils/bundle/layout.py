# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A support bundle's layout: the one owner of its names (issue 38 item 4) - the folders, the
files, the index and its keys. contents.py and the two halves (cluster_side.py, node_side.py,
collect.py) write a bundle with them; diagnosis/bundle_source.py reads one back with them.
Names only: nothing here reads or writes.

The layout (issue 21; tests outside this repository build bundles in it, and gpu_diagnose
reads it with ``bundle: DIR``)::

    bundle.json                                the index: what was collected, what is missing and why
    cluster/nodes.json                         kubectl get nodes -o json
    cluster/pods.json                          kubectl get pods -A -o json        (env values redacted)
    cluster/runtimeclasses.json                kubectl get runtimeclasses -o json
    cluster/events.json                        kubectl get events -A -o json
    cluster/daemonsets.json                    kubectl get daemonsets -A -o json  (env values redacted)
    cluster/configmaps.json                    kubectl get configmaps -A -o json  (data outside the GPU stack redacted)
    cluster/resourceclaims.json                kubectl get resourceclaims -A -o json   (DRA: resource.k8s.io/v1)
    cluster/resourceslices.json                kubectl get resourceslices -o json
    cluster/deviceclasses.json                 kubectl get deviceclasses -o json
    logs/<namespace>/<pod>.log                 kubectl logs --all-containers
    nodes/<node>/nvidia-smi.txt                nvidia-smi (stdout and stderr as printed)
    nodes/<node>/nvidia-smi-query.csv          nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv,noheader
    nodes/<node>/crictl-info.json              crictl info
    nodes/<node>/containerd-config-dump.toml   containerd config dump
    nodes/<node>/containerd.log                the containerd log (a file, or journalctl -u containerd)
    nodes/<node>/kubelet.log                   the kubelet log (a file, or journalctl -u kubelet)
    nodes/<node>/device-plugins.txt            ls -1 /var/lib/kubelet/device-plugins
    nodes/<node>/dmesg.txt                     dmesg (or journalctl -k)
    nodes/<node>/fabric-manager.txt            systemctl status nvidia-fabricmanager
    nodes/<node>/mig-lgip.txt, mig-lgipp.txt   nvidia-smi mig -lgip / -lgipp

The node files' names are node/artefacts.py's NODE_FILES (the one list the node collector, a
bundle and the diagnosis use). bundle.json's ``files`` holds an entry per file above, keyed by
its path in the bundle; besides those, ``logs`` (no log collected: logs false) and
``nodes/<node>/`` (that node's side failed as a whole).
"""

from ansible.module_utils.node.artefacts import NODE_FILES as node_files

FORMAT = "gpu-incident-lab/support-bundle"
FORMAT_VERSION = 1
INDEX = "bundle.json"     # the index
INDEX_FILES = "files"     # its entries: {path in the bundle: entry}

CLUSTER = "cluster"
LOGS = "logs"
NODES = "nodes"

# kind -> its file: what `kubectl get <kind> -o json` prints
KIND_FILES = {kind: "%s/%s" % (CLUSTER, name) for kind, name in (
    ("Node", "nodes.json"), ("Pod", "pods.json"), ("RuntimeClass", "runtimeclasses.json"),
    ("Event", "events.json"), ("DaemonSet", "daemonsets.json"), ("ConfigMap", "configmaps.json"),
    ("ResourceClaim", "resourceclaims.json"), ("ResourceSlice", "resourceslices.json"),
    ("DeviceClass", "deviceclasses.json"))}
NODE_FILES = list(node_files)   # nodes/<node>/: the node's file names (node/artefacts.py, the one list)


def log_file(namespace, pod):
    """logs/<namespace>/<pod>.log: the Pod's log (every container's)."""
    return "%s/%s/%s.log" % (LOGS, namespace, pod)


def node_folder(node):
    """nodes/<node>/: the node's side (its index key when that side failed as a whole)."""
    return "%s/%s/" % (NODES, node)


def node_file(node, name):
    """nodes/<node>/<name>: one of NODE_FILES of the node."""
    return node_folder(node) + name
