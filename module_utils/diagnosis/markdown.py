# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnosis as Markdown: a table of the layers, then each layer's evidence."""


def markdown(result, resource):
    """The report of a Diagnosis.run() result (`resource` kept for callers; the result names it)."""
    lines = ["# GPU diagnosis%s" % (" of Pod " + result["pod"] if result.get("pod") else ""),
             "",
             "Node judged: %s. First broken layer: **%s**." % (
                 result["node"], result["first_broken"] or "none"), "",
             "| layer | status | next |", "|---|---|---|"]
    if result.get("limits"):
        lines[4:4] = ["Read from a %s; it cannot hold: %s." % (result.get("source"), "; ".join(
            result["limits"])), ""]
    for layer in result["layers"]:
        cells = (layer["layer"], layer["status"], layer["next"].replace("|", "/"))
        lines.append("| %s | %s | %s |" % cells)
    lines.append("")
    for layer in result["layers"]:
        lines.append("## %s: %s" % (layer["layer"], layer["status"]))
        if layer.get("reason"):
            lines.append("Reason: %s" % layer["reason"])
        for item in layer["evidence"]:
            lines.append("- %s: %s" % (item["source"], item["value"]))
        lines.append("")
    return "\n".join(lines)
