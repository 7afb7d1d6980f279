# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A support bundle's node half (gpu_bundle_node): the node's artefacts as the one node collector
(node.collect) gathers them - gpu_node_facts reads the same -, redacted here on the node before
they travel."""

import base64

from ansible.module_utils.bundle.contents import redactor
from ansible.module_utils.bundle.layout import INDEX, node_file
from ansible.module_utils.node.collect import collect


def collect_node(options):
    """{'files': {name: bytes}, 'index': {name: entry}} of this node (names as in NODE_FILES):
    the one node collector's result (node.collect), which gpu_node_facts reads as facts."""
    found = collect(options)
    return {"files": found["files"], "index": found["index"]}


def node_result(options):
    """gpu_bundle_node's result: this node's index and files (base64, to travel as JSON), both
    redacted here on the node, and what was hidden (redactions: files {name: {rule: n}}, index). A
    failed command's output in the index is redacted as its file would be (TOML as TOML)."""
    engine = redactor(options)
    found = collect_node(options)
    node = options.get("node_name") or ""
    report = {"files": {}, "index": {}}
    files = {}

    def rel(name):
        return node_file(node, name) if node else name

    for name, data in sorted(found["files"].items()):
        files[name], counts, note = engine.file(rel(name), data)
        if counts:
            report["files"][name] = counts
        if note:
            found["index"][name]["redaction_note"] = note

    def hit(rule, count=1):
        report["index"][rule] = report["index"].get(rule, 0) + count

    for name, entry in found["index"].items():
        # a failed config dump's (crictl info's) output: its end, redacted as that file is
        if name.lower().endswith((".toml", ".json")) and isinstance(entry.get("output"), str):
            data, counts, _note = engine.file(rel(name), entry["output"].encode("utf-8", "surrogateescape"))
            entry["output"] = data.decode("utf-8", "surrogateescape")
            for rule, count in counts.items():
                hit(rule, count)
    index = engine.json_doc(found["index"], hit, INDEX)
    return {"changed": False, "index": index, "redactions": report,
            "files": {k: base64.b64encode(v).decode("ascii") for k, v in files.items()}}
