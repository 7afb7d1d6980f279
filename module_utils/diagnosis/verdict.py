# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The six layers in their order of judgment, and the shape of what each layer says.

A verdict is ``{layer, status, evidence, next[, reason]}``: status ``ok``, ``broken``,
``skipped`` (could not be checked here - ``reason`` says why; never counted as ok) or
``unknown``; evidence items ``{source, value}`` say what was read (API path, bundle file or
command) and what it showed; ``next`` is what to look at next.
"""

from ansible.module_utils.kube.client import parse_quantity

# bottom-up: the driver lets the host see the GPU, the toolkit lets the container see it, the
# device plugin lets Kubernetes see it, and only then does the scheduler decide (seed 003)
LAYERS = ["driver", "container-runtime", "device-plugin", "node-advertisement", "scheduling",
          "workload"]


def ev(source, value):
    """One evidence item: where it was read, what it showed."""
    return {"source": source, "value": value}


def verdict(name, status, evidence, next_step, reason=None):
    out = {"layer": name, "status": status, "evidence": evidence, "next": next_step}
    if reason:
        out["reason"] = reason
    return out


def text_ev(found):
    """The first error-text findings as evidence."""
    return [ev(t["source"], t["line"]) for t in found[:4]]


def amount(value):
    """A resource quantity as a number, or None when absent or unreadable."""
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def qty(value):
    """A quantity as the API prints it (2, not 2.0)."""
    text = str(value)
    return text[:-2] if text.endswith(".0") else text
