#!/usr/bin/env python3
"""Stage the collection gpu_incident.lab from the project's own sources.

One source of truth: modules come from library/, module_utils/ and doc_fragments/ with their
imports rewritten to the collection's names, roles from roles/, the collection's own files
from collection/. Nothing here is kept in git twice. Usage: build_collection.py STAGE_DIR
"""
import pathlib
import re
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FQ = "gpu_incident.lab"
PKG = "ansible_collections.gpu_incident.lab.plugins.module_utils"
ROLES = ["runtime_check", "containerd_config", "containerd_merge_report", "driver_guard",
         "gpu_diagnosis", "gpu_node_facts", "gpu_preflight", "gpu_support_bundle"]


def rewrite(text, utils, modules):
    for name in utils:
        text = re.sub(r"\bansible\.module_utils\.%s\b" % name, "%s.%s" % (PKG, name), text)
        text = re.sub(r"from ansible\.module_utils import %s\b" % name,
                      "from %s import %s" % (PKG, name), text)
    text = re.sub(r"extends_documentation_fragment: \[lab_kube\]",
                  "extends_documentation_fragment: [%s.lab_kube]" % FQ, text)
    for name in modules:
        text = re.sub(r"M\(%s\)" % name, "M(%s.%s)" % (FQ, name), text)
        text = re.sub(r"(- module: )%s\b" % name, r"\g<1>%s.%s" % (FQ, name), text)
        text = re.sub(r"^(\s*(?:- )?)%s:$" % name, r"\g<1>%s.%s:" % (FQ, name), text, flags=re.M)
    return text


def main(stage):
    stage = pathlib.Path(stage)
    if stage.exists():
        shutil.rmtree(stage)
    shutil.copytree(ROOT / "collection", stage)
    shutil.copy(ROOT / "LICENSE", stage / "LICENSE")
    utils = sorted(p.stem for p in (ROOT / "module_utils").glob("*.py"))
    modules = sorted(p.stem for p in (ROOT / "library").glob("*.py"))
    for src, dest in (("library", "plugins/modules"), ("module_utils", "plugins/module_utils"),
                      ("doc_fragments", "plugins/doc_fragments")):
        (stage / dest).mkdir(parents=True)
        for path in sorted((ROOT / src).glob("*.py")):
            (stage / dest / path.name).write_text(rewrite(path.read_text(), utils, modules))
    for role in ROLES:
        shutil.copytree(ROOT / "roles" / role, stage / "roles" / role)
        for path in (stage / "roles" / role).rglob("*.yml"):
            path.write_text(rewrite(path.read_text(), utils, modules))
    print(stage)


if __name__ == "__main__":
    main(sys.argv[1])
