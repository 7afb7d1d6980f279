# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU support bundle: what it holds (the layout, the index), its folder read and written, and
the redaction engine set up with the user's rules - Ansible-free. cluster_side.py collects the
cluster's half, node_side.py a node's, collect.py is gpu_bundle_collect's one call.

The layout - its folders, files and index - is layout.py's (the one owner of those names;
diagnosis/bundle_source.py reads a bundle back with them).

Any file may be absent; bundle.json says why for each (``missing``: the tool or object is not
there; ``failed``: it ran and failed - its exit code and output are kept in bundle.json;
``skipped``: not asked for). A file is written only from a command that succeeded, except
nvidia-smi.txt and fabric-manager.txt, which are the command's words either way.

Secrets never go in: no Secret objects are read; every Pod's (and Pod template's) env
``value`` is replaced by REDACTED (names and ``valueFrom`` references kept); ConfigMap
``data``/``binaryData`` values outside the GPU stack are replaced by REDACTED (keys kept);
``kubectl.kubernetes.io/last-applied-configuration`` annotations (a full copy of the object)
are replaced by REDACTED; managedFields are dropped (as kubectl hides them). Then every file
the bundle writes - bundle.json, the cluster files, the logs, the node files - passes the
redaction engine (module_utils/bundle/redact.py: built-in rules and the user's), the node
files already on the node, so no secret travels; bundle.json's ``redactions`` says per file
which rule hid how many values (never a value). With ``archive`` the same files also go into
``<dest>.tar.gz`` (module_utils/bundle/archive.py).
"""


import datetime
import json
import os
import shutil
import tempfile

from ansible.module_utils.bundle.layout import FORMAT, INDEX, KIND_FILES
from ansible.module_utils.bundle.redact import Redactor
from ansible.module_utils.bundle.redact_rules import MARKER, RedactError
from ansible.module_utils.lab.refusals import LabError

REDACTED = MARKER
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

# (file, API path, apiVersion and kind of each item, the kubectl command the file equals), in the
# order they are collected; the file is the kind's in layout.py
CLUSTER_FILES = [(KIND_FILES[kind], path, api_version, kind, command) for path, api_version, kind, command in (
    ("/api/v1/nodes", "v1", "Node", "kubectl get nodes -o json"),
    ("/api/v1/pods", "v1", "Pod", "kubectl get pods -A -o json"),
    ("/apis/node.k8s.io/v1/runtimeclasses", "node.k8s.io/v1", "RuntimeClass", "kubectl get runtimeclasses -o json"),
    ("/api/v1/events", "v1", "Event", "kubectl get events -A -o json"),
    ("/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet", "kubectl get daemonsets -A -o json"),
    ("/api/v1/configmaps", "v1", "ConfigMap", "kubectl get configmaps -A -o json"),
    # GPUs by ResourceClaim (DRA, issue 48); a cluster without resource.k8s.io/v1 answers 404: missing
    ("/apis/resource.k8s.io/v1/resourceclaims", "resource.k8s.io/v1", "ResourceClaim", "kubectl get resourceclaims -A -o json"),
    ("/apis/resource.k8s.io/v1/resourceslices", "resource.k8s.io/v1", "ResourceSlice", "kubectl get resourceslices -o json"),
    ("/apis/resource.k8s.io/v1/deviceclasses", "resource.k8s.io/v1", "DeviceClass", "kubectl get deviceclasses -o json"),
)]

# The GPU stack: the namespaces the GPU Operator and the device plugin's Helm chart install into,
# and the labels of their Pods (static manifest, Operator operands, Helm chart - gpu-field notes);
# NVIDIA's DRA driver's chart (its documented namespace, its Pods' name label: docs/dra.md).
STACK_NAMESPACES = ["gpu-operator", "nvidia-gpu-operator", "nvidia-device-plugin", "nvidia", "nvidia-dra-driver-gpu"]
STACK_SELECTORS = ["name=nvidia-device-plugin-ds", "app=nvidia-device-plugin-daemonset",
                   "app.kubernetes.io/name=nvidia-device-plugin", "app=gpu-feature-discovery",
                   "app.kubernetes.io/name=gpu-feature-discovery", "app=nvidia-container-toolkit-daemonset",
                   "app=nvidia-driver-daemonset", "app=nvidia-operator-validator", "app=nvidia-mig-manager",
                   "app=nvidia-dcgm-exporter", "app.kubernetes.io/part-of=gpu-operator",
                   "app.kubernetes.io/name=dra-driver-nvidia-gpu"]


# gpu_bundle_collect's and gpu_bundle_node's `redact` suboptions: the secret parts never shown
# in Ansible's output (no_log masks them wherever they would appear in a result)
REDACT_RULE_OPTIONS = dict(name=dict(type="str"), literal=dict(type="str", no_log=True),
                           regex=dict(type="str", no_log=True), files=dict(type="list", elements="str"))


class BundleError(LabError):
    """Bad input or a destination that cannot take the bundle; the text says what to do."""


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def existing(dest):
    """None (free: absent or empty), or the earlier bundle's index; BundleError otherwise."""
    if not os.path.lexists(dest):
        return None
    if not os.path.isdir(dest):
        raise BundleError("dest %s exists and is not a folder: give a folder for the bundle" % dest)
    names = os.listdir(dest)
    if not names:
        return None
    if INDEX not in names:
        raise BundleError("dest %s is a non-empty folder without %s (not a support bundle): nothing "
                          "of it is touched; give an empty or new folder" % (dest, INDEX))
    try:
        with open(os.path.join(dest, INDEX), "r", encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError) as exc:
        raise BundleError("dest %s holds a %s that cannot be read (%s): not a support bundle of "
                          "this tool; give an empty or new folder" % (dest, INDEX, exc))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BundleError("dest %s holds a %s of another format: give an empty or new folder" % (dest, INDEX))
    return doc


def write(dest, files):
    """Write {relpath: bytes} as the folder dest, atomically: built next to it, then renamed in.
    An earlier bundle in dest is replaced as a whole (the caller decided that it may be)."""
    dest = os.path.abspath(dest)
    parent = os.path.dirname(dest)
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".%s.partial-" % os.path.basename(dest), dir=parent)
    old = None
    try:
        for rel in sorted(files):
            path = os.path.join(stage, rel)
            if os.path.commonpath([stage, os.path.abspath(path)]) != stage:
                raise BundleError("refusing a bundle file outside the folder: %r" % rel)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(files[rel])
        if os.path.isdir(dest):
            if os.listdir(dest):
                old = tempfile.mkdtemp(prefix=".%s.old-" % os.path.basename(dest), dir=parent)
                os.rename(dest, os.path.join(old, "bundle"))
            else:
                os.rmdir(dest)
        try:
            os.rename(stage, dest)
        except OSError:
            if old:   # put the earlier bundle back
                os.rename(os.path.join(old, "bundle"), dest)
            raise
        stage = None
    finally:
        if stage:
            shutil.rmtree(stage, ignore_errors=True)
        if old:
            shutil.rmtree(old, ignore_errors=True)


def redactor(options):
    """The redaction engine with the user's rules (option ``redact``), or BundleError naming the
    bad rule and the fix - called before anything is collected."""
    try:
        return Redactor(options.get("redact"), "redact")
    except RedactError as exc:
        raise BundleError("%s (the role's gpu_support_bundle_redact); nothing was collected" % exc.message)
