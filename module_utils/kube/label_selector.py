# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Label selectors, read once for the whole lab: the diagnosis's device-plugin selector
(diagnosis/sources.py) and the support bundle's stack selectors (bundle/cluster_side.py) are both
this parser - a predicate on an object's labels."""

import re

from ansible.module_utils.lab.refusals import LabError


class SelectorError(LabError):
    """A label selector term that cannot be read (the message names the option and the term)."""


def label_selector(text, option="selector"):
    """A label selector string (a=b,c!=d,e,!f, g in (x,y)) as a predicate on labels, read as
    `kubectl get -l` reads it; SelectorError naming `option` for a term it cannot read."""
    if not text:
        return lambda labels: True
    terms = []
    for part in re.split(r",(?![^()]*\))", text):
        part = part.strip()
        match = re.fullmatch(r"([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)", part)
        if match:
            values = {v.strip() for v in match.group(3).split(",")}
            terms.append((match.group(1), match.group(2), values))
        elif re.fullmatch(r"[\w./-]+\s*!=\s*[\w.-]*", part):
            key, value = part.split("!=", 1)
            terms.append((key.strip(), "notin", {value.strip()}))
        elif re.fullmatch(r"[\w./-]+\s*==?\s*[\w.-]*", part):
            key, value = part.replace("==", "=").split("=", 1)
            terms.append((key.strip(), "in", {value.strip()}))
        elif re.fullmatch(r"![\w./-]+", part):
            terms.append((part[1:].strip(), "absent", None))
        elif re.fullmatch(r"[\w./-]+", part):
            terms.append((part, "exists", None))
        else:
            raise SelectorError("%s %r: cannot read %r as a label selector term (key=value, "
                                "key!=value, key, !key, key in (a,b))" % (option, text, part))

    def match(labels):
        for key, op, values in terms:
            if op == "in" and labels.get(key) not in values:
                return False
            if op == "notin" and labels.get(key) in values:
                return False
            if op == "exists" and key not in labels:
                return False
            if op == "absent" and key in labels:
                return False
        return True
    return match
