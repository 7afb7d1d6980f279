# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the templates are given, and the two pages.

:func:`picture_model` turns a gpu_diagnose result (``layers``, ``first_broken``, ``node``,
``pod``, ``source``, ``limits``, ``candidates``) into the six layers top down as the path of a
GPU Pod (seed 003: the Pod, the control plane, then on the GPU node the kubelet, the device
plugin, the container runtime with the toolkit, the driver and the GPU), with the node facts
found in the evidence. A bundle's files named by the evidence are linked relatively to the page.
:func:`diagnosis_html` renders the self-contained page; :func:`board_html` the board.
"""

import os
import re

from urllib.parse import quote

from ansible.module_utils.diagnosis.verdict import LAYERS
from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.report.templates import BOARD_SCRIPT, STYLE, TEMPLATES

try:
    import jinja2
    JINJA2_ERROR = None
except ImportError as exc:  # a host without Jinja2 can still diagnose; only the page needs it
    jinja2 = None
    JINJA2_ERROR = str(exc)


class ReportError(LabError):
    """A page that cannot be rendered (no Jinja2, a result that is not gpu_diagnose's)."""


STATUSES = ("ok", "broken", "unknown", "skipped")
# top down: the path of a GPU Pod as seed 003 draws it
TOP_DOWN = list(reversed(LAYERS))
OUTSIDE_NODE = ("workload", "scheduling")
TITLES = {
    "workload": ("GPU Pod", "the workload: its phase, containers and restarts"),
    "scheduling": ("Control plane: API server, scheduler",
                   "places the Pod by the node's allocatable, taints, affinity and RuntimeClass"),
    "node-advertisement": ("Kubelet", "reports the GPUs in the node's capacity and allocatable"),
    "device-plugin": ("NVIDIA device plugin", "registers the GPUs with the kubelet through its socket"),
    "container-runtime": ("Container runtime -> NVIDIA Container Toolkit",
                          "the running containerd has the nvidia runtime (or CDI) the Pod needs"),
    "driver": ("Driver - GPU / VRAM", "the host sees the GPU: nvidia-smi, the kernel's NVRM/Xid lines"),
}
SOURCE_LABELS = {"live": "the live cluster", "bundle": "a support bundle",
                 "must-gather": "a GPU Operator must-gather folder"}
# the node facts behind a diagnosis, as the evidence names them: (key, label, pattern on the
# evidence source, pattern on the value or None)
FACTS = (
    ("driver_ok", "driver works (nvidia-smi)", r"\bdriver_ok\b", None),
    ("driver_version", "driver version", r"\bdriver_version\b", None),
    ("driver_error", "nvidia-smi says", r"\bdriver_error\b", None),
    ("gpus", "GPUs nvidia-smi lists", r"\bgpus \(nvidia-smi", None),
    ("runtimes_running", "runtimes running (the daemon)", r"\bruntimes_running\b", None),
    ("runtimes_configured", "runtimes configured (the next start)", r"\bruntimes_configured\b", None),
    ("restart_pending", "restart pending", r"^finding$", r"^restart pending\b"),
    ("default_runtime", "default runtime", r"\bdefault_runtime$", None),
    ("cdi_enabled", "CDI enabled", r"\bcdi_enabled\b", None),
    ("capacity", "advertised (capacity)", r"\.status\.capacity\[", None),
    ("allocatable", "allocatable", r"\.status\.allocatable\[", None),
    ("plugin_pod", "device-plugin Pod", None, r"^phase=\S+ Ready="),
    ("device_plugin_sockets", "plugin socket", r"\bdevice_plugin_sockets\b", None),
)
MAX_VALUE = 800


def text(value):
    """An evidence value as one readable text."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return ", ".join("%s=%s" % (k, text(v)) for k, v in sorted(value.items()))
    out = str(value)
    return out if len(out) <= MAX_VALUE else out[:MAX_VALUE] + " ..."


class Links(object):
    """The bundle files an evidence source names, as links relative to the page's folder.
    Only files and folders inside the bundle that exist are linked."""

    def __init__(self, bundle, page_dir):
        self.bundle = os.path.realpath(bundle) if bundle else None
        self.page_dir = os.path.realpath(page_dir) if page_dir else None

    def href(self, source):
        if not self.bundle or not self.page_dir:
            return None
        match = re.match(r"([A-Za-z0-9_.][^\s\[\](),]*)", str(source))
        if not match:
            return None
        target = os.path.realpath(os.path.join(self.bundle, match.group(1)))
        if target != self.bundle and not target.startswith(self.bundle + os.sep):
            return None
        if target == self.bundle or not os.path.exists(target):
            return None
        return self.relative(target) + ("/" if os.path.isdir(target) else "")

    def relative(self, target):
        return quote(os.path.relpath(target, self.page_dir).replace(os.sep, "/"))

    def bundle_href(self):
        if not self.bundle or not self.page_dir:
            return None
        return self.relative(self.bundle) + "/"


def check_result(result):
    """A gpu_diagnose result, or ReportError naming what is missing."""
    if not isinstance(result, dict) or not isinstance(result.get("layers"), list):
        raise ReportError("not a diagnosis: expected gpu_diagnose's result (layers, first_broken, "
                          "node), got %s" % type(result).__name__)
    names = [l.get("layer") if isinstance(l, dict) else None for l in result["layers"]]
    if sorted(n for n in names if n) != sorted(LAYERS) or len(names) != len(LAYERS):
        raise ReportError("not a diagnosis: its layers are %s, expected the six of %s"
                          % (names, ", ".join(LAYERS)))
    for layer in result["layers"]:
        if layer.get("status") not in STATUSES:
            raise ReportError("layer %s: status %r is none of %s" % (
                layer.get("layer"), layer.get("status"), ", ".join(STATUSES)))
    return result


def facts_of(layers, links):
    """The node facts behind the diagnosis, found in its evidence, in FACTS order."""
    found = {}
    for layer in layers:
        for item in layer.get("evidence") or []:
            source, value = str(item.get("source", "")), item.get("value")
            for key, label, source_re, value_re in FACTS:
                if key in found:
                    continue
                if source_re and not re.search(source_re, source):
                    continue
                if value_re and not re.search(value_re, str(value)):
                    continue
                found[key] = {"key": key, "label": label, "value": text(value), "source": source,
                              "href": links.href(source)}
    return [found[key] for key, _l, _s, _v in FACTS if key in found]


def picture_model(result, bundle=None, page_dir=None):
    """The picture's model of a gpu_diagnose result (see the module's docstring)."""
    check_result(result)
    links = Links(bundle, page_dir)
    by_name = {l["layer"]: l for l in result["layers"]}
    first = result.get("first_broken")
    boxes = []
    for name in TOP_DOWN:
        layer = by_name[name]
        title, role = TITLES[name]
        boxes.append({
            "layer": name, "status": layer["status"], "first": name == first, "title": title,
            "role": role, "reason": layer.get("reason"), "next": layer.get("next") or "",
            "evidence": [{"source": str(e.get("source", "")), "value": text(e.get("value")),
                          "href": links.href(e.get("source", ""))}
                         for e in layer.get("evidence") or [] if isinstance(e, dict)]})
    not_judged = [b["layer"] for b in boxes if b["status"] in ("skipped", "unknown")]
    return {
        "node": result.get("node") or "?", "pod": result.get("pod"), "first_broken": first,
        "candidates": result.get("candidates") or [], "source": result.get("source") or "live",
        "source_label": SOURCE_LABELS.get(result.get("source"), result.get("source") or "?"),
        "limits": result.get("limits") or [],
        "outer": [b for b in boxes if b["layer"] in OUTSIDE_NODE],
        "inner": [b for b in boxes if b["layer"] not in OUTSIDE_NODE],
        "not_judged": ", ".join(not_judged), "facts": facts_of(result["layers"], links),
        "bundle": bundle, "bundle_href": links.bundle_href(),
    }


def environment():
    if jinja2 is None:
        raise ReportError("the HTML report needs Jinja2 (python3-jinja2, or pip install jinja2) on "
                          "the host that writes it: %s" % JINJA2_ERROR)
    return jinja2.Environment(loader=jinja2.DictLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=False,
                              lstrip_blocks=False, keep_trailing_newline=True)


def diagnosis_html(result, bundle=None, page_path=None):
    """The diagnosis as one self-contained HTML page. With ``bundle`` (the folder judged) and
    ``page_path`` (where the page goes), the evidence links the bundle's files relatively."""
    page_dir = os.path.dirname(os.path.abspath(page_path)) if page_path else None
    model = picture_model(result, bundle, page_dir)
    return environment().get_template("diagnosis.html").render(d=model, style=STYLE)


def board_body(context):
    """The board's changing part (the script swaps it when it differs)."""
    return environment().get_template("board_body.html").render(**context)


def board_page(body, version, title, state_dir, cluster, poll_seconds):
    """The board's page around a body from board_body()."""
    env = environment()
    from markupsafe import Markup  # Jinja2's own dependency: the body is already escaped HTML
    return env.get_template("board.html").render(
        body=Markup(body), version=version, title=title, state_dir=state_dir, cluster=cluster,
        poll_seconds=poll_seconds, style=STYLE)


def board_script():
    return BOARD_SCRIPT


def write_diagnosis_html(module, result, dest, bundle=None):
    """gpu_diagnose's html option: write the page to ``dest`` when it differs (check mode writes
    nothing; --diff shows it). What to merge into the module's result: html {dest, changed}."""
    from ansible.module_utils.lab.files import write_text
    page = diagnosis_html(result, bundle, dest)
    written = write_text(module, dest, page, raise_errors=True)
    out = {"html": {"dest": dest, "changed": written["changed"]},
           "changed": bool(result.get("changed")) or written["changed"]}
    diffs = [d for d in (result.get("diff"), written.get("diff")) if d]
    if diffs:
        out["diff"] = diffs[0] if len(diffs) == 1 else diffs
    return out
