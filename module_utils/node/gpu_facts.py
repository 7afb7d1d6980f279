# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The live node side of the diagnosis: the node's artefacts collected, read as node facts.

:func:`gather` runs on the GPU node (module gpu_node_facts over SSH): the one collector
(node.collect - the same commands, once each, that a support bundle's node half runs) gathers
the artefacts, and the diagnosis's own reading of a bundle's ``nodes/<node>/`` files
(node.artefacts: node_texts, facts_from_artefacts) makes the facts of them - so the facts
are those gpu_diagnose reads from a bundle of this node.
"""

from ansible.module_utils.node.artefacts import ARTEFACTS, ArtefactError, facts_from_artefacts, node_texts
from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.node.collect import collect


class NodeFactsError(LabError):
    """The node's outputs cannot be read into facts; ``checks`` says what was run."""

    def __init__(self, message, checks):
        super().__init__(message)
        self.checks = checks


def gather(p):
    """(node facts, raw artefacts {name: text}, checks) of this node, from gpu_node_facts'
    options `p`. An output no parser can read is reported in checks and left out (its keys
    stay unknown), never guessed at; NodeFactsError when that is not possible."""
    found = collect(p, names=ARTEFACTS)
    checks = found["checks"]
    files, smi_rc = node_texts(found["files"], found["index"])
    while True:
        try:
            facts = facts_from_artefacts(files, smi_rc=smi_rc, resources=p.get("resource"))
            break
        except ArtefactError as exc:
            name = next((n for n in list(files) if exc.message.startswith(n)), None)
            if name is None:
                raise NodeFactsError("on this node: %s" % exc.message, checks)
            checks.append({"command": "read %s" % name, "rc": None, "output": exc.message})
            files.pop(name)
    if found["nvidia_smi"] and "driver_ok" in facts:
        facts["nvidia_smi"] = " ".join(found["nvidia_smi"])
    return facts, files, checks
