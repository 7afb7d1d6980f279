# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_bundle_collect's one call: its options checked, the cluster half collected, the node halves
added, every file redacted, then the folder (and the archive) written."""

import base64
import binascii
import os
import re

from ansible.module_utils.bundle import archive as bundle_archive
from ansible.module_utils.bundle.cluster_side import Redactions, collect_cluster, dumps, parse_selector
from ansible.module_utils.bundle.contents import BundleError, existing, now, redactor, write
from ansible.module_utils.bundle.layout import FORMAT, FORMAT_VERSION, INDEX, INDEX_FILES, node_file, node_folder
from ansible.module_utils.lab.refusals import LabError


_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,252}[A-Za-z0-9])?$")


def check_options(p):
    """BundleError naming the first of gpu_bundle_collect's options that cannot be used; the
    redaction engine with the user's rules when they all can."""
    engine = redactor(p)
    for ref in p["pods"]:
        ns, sep, name = ref.partition("/")
        if not sep or not _NAME.match(ns) or not _NAME.match(name):
            raise BundleError("pods: %r is not NAMESPACE/NAME (e.g. gpu-drill/cuda-drill)" % (ref,))
    for name, result in p["nodes"].items():
        if not _NAME.match(name):
            raise BundleError("nodes: %r is not a node name" % (name,))
        if not isinstance(result, dict) or not (("files" in result and "index" in result) or "msg" in result):
            raise BundleError("nodes[%s]: give what gpu_bundle_node returned there (files and index), "
                              "or msg when its collection failed" % name)
    for selector in p["stack_selectors"]:
        parse_selector(selector)
    return engine


def add_nodes(nodes, files, index, red=None):
    """The node sides (gpu_bundle_node's results by node name) into files and index; what the
    node's own redaction hid into red."""
    for node, result in sorted(nodes.items()):
        if "msg" in result and "files" not in result:
            index[node_folder(node)] = {"status": "failed", "reason": "the node side failed: %s" % result["msg"]}
            continue
        report = result.get("redactions") or {}
        if red is not None and isinstance(report, dict):
            for name, counts in (report.get("files") or {}).items():
                red.add(node_file(node, name), counts if isinstance(counts, dict) else {})
            red.add(INDEX, report.get("index") if isinstance(report.get("index"), dict) else {})
        for name, entry in (result.get("index") or {}).items():
            index[node_file(node, name)] = entry
        for name, data in (result.get("files") or {}).items():
            if "/" in name or name.startswith("."):
                raise BundleError("nodes[%s].files: %r is not a file name" % (node, name))
            try:
                files[node_file(node, name)] = base64.b64decode(data, validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise BundleError("nodes[%s].files[%s] is not base64 (give what gpu_bundle_node returned)"
                                  % (node, name))


def collect_bundle(p, check_mode):
    """gpu_bundle_collect's result for its options `p`: an earlier bundle kept (without
    force), or the cluster and node sides collected and written (unless check_mode)."""
    from ansible.module_utils.kube.client import client
    dest = p["dest"]
    engine = check_options(p)
    earlier = existing(dest)
    archive = archive_path(dest) if p.get("archive") else None
    if archive:
        bundle_archive.check_target(archive, replace=p["force"] or earlier is not None)
    if earlier is not None and not p["force"]:
        files = sorted(earlier.get(INDEX_FILES) or {})
        return dict(changed=False, kept=True, dest=dest, missing=[], archive=None,
                    files=[f for f in files if earlier[INDEX_FILES][f].get("status") == "collected"],
                    msg="%s already holds a support bundle (collected %s): kept as it is%s; give "
                    "another dest, or force (-e force=true) to replace it"
                    % (dest, earlier.get("collected_at", "at an unknown time"),
                       (" (and %s)" % archive if os.path.isfile(archive) else " (no archive of it written)")
                       if archive else ""))
    if p.get("validate_only"):
        return dict(changed=False, kept=False, dest=dest, files=[], missing=[], archive=None,
                    msg="options checked: %d redaction rules of yours besides the built-in ones; %s %s"
                    % (len(engine.rules), dest, "holds a bundle that force replaces" if earlier is not None
                       else "is free for the bundle"))
    kube = client(p["kubeconfig"], p["context"])
    files, index, red = {}, {}, Redactions()
    collect_cluster(kube, p, files, index, red)
    add_nodes(p["nodes"], files, index, red)
    doc = {"format": FORMAT, "version": FORMAT_VERSION, "collected_at": now(),
           "collector": "gpu_bundle_collect (gpu-incident-lab)", "server": kube.conf["server"],
           "context": p["context"], "nodes": sorted(p["nodes"]),
           INDEX_FILES: dict(sorted(index.items()))}
    doc = redact_bundle(engine, files, doc, red)
    files[INDEX] = dumps(doc)
    index = doc[INDEX_FILES]
    missing = [dict(file=rel, status=e.get("status"), reason=e.get("reason", ""))
               for rel, e in sorted(index.items()) if e.get("status") != "collected"]
    names = sorted(files)
    values, with_values = red.totals()
    summary = "%d values hidden in %d files (which rule hid how many, per file: %s, redactions)" % (
        values, with_values, os.path.join(dest, INDEX))
    diff = {"before": {"path": dest, "bundle": (earlier or {}).get("collected_at", "none")},
            "after": {"path": dest, "files": names}}
    if not check_mode:
        try:
            write(dest, files)
        except (OSError, BundleError) as exc:
            raise BundleError("cannot write the bundle to %s: %s" % (dest, getattr(exc, "strerror", None) or exc))
        if archive:
            try:
                bundle_archive.write(archive, files, os.path.basename(os.path.abspath(dest)), doc["collected_at"])
            except (OSError, LabError) as exc:
                raise BundleError("the bundle is in %s, but its archive %s could not be written: %s"
                                  % (dest, archive, getattr(exc, "strerror", None) or exc))
    return dict(changed=True, kept=False, dest=dest, files=names, missing=missing, index=doc, diff=diff,
                archive=archive, redacted=summary)


def archive_path(dest):
    """<dest>.tar.gz beside the folder."""
    return os.path.abspath(dest).rstrip(os.sep) + ".tar.gz"


def redact_bundle(engine, files, doc, red):
    """Every file through the engine (changed in files), bundle.json's own words too; returns
    the index document with its ``redactions`` report (per file, which rule hid how many)."""
    for rel in sorted(files):
        files[rel], counts, note = engine.file(rel, files[rel])
        red.add(rel, counts)
        if note:
            red.notes[rel] = note
    counts = {}

    def hit(rule, count=1):
        counts[rule] = counts.get(rule, 0) + count

    doc = engine.json_doc(doc, hit, INDEX)
    red.add(INDEX, counts)
    doc["redactions"] = red.as_dict(engine.describe())
    return doc
