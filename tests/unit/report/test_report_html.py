"""The diagnosis as a picture: gpu_diagnose's html page, loaded in a real headless Chromium.

The page is rendered from the real incident bundle of tests/bundle_corpus (lab-node-1: the
drop-in on disk, containerd never restarted) and read back from the browser's DOM: the six
layers top down as the path of a GPU Pod, the broken one marked, the evidence linked to the
bundle's files, the node facts; screenshots and a printed PDF go to the test's temp folder.
"""
import json
import os
import pathlib
import shutil
import sys
import urllib.parse
from lab_testing import ROOT  # tests/lab_testing.py

import pytest

import gpu_diagnose
from ansible.module_utils.diagnosis.verdict import LAYERS
from ansible.module_utils.report import render

sys.path.insert(0, str(ROOT / "tools"))
from headless_chromium import Chromium, binary  # noqa: E402

INCIDENT = ROOT / "tests" / "bundle_corpus" / "lab-node-1-incident"
TOP_DOWN = list(reversed(LAYERS))
LAYERS_JS = ("[...document.querySelectorAll('[data-layer]')].map(e => ({layer: e.dataset.layer, "
             "status: e.dataset.status, first: e.dataset.firstBroken, text: e.innerText}))")


@pytest.fixture(scope="module")
def browser():
    if not binary():
        pytest.fail("no Chromium: apt-get install chromium (the browser tests need Debian's package)",
                    pytrace=False)
    with Chromium(width=1100, height=900) as chromium:
        yield chromium


@pytest.fixture
def bundle(tmp_path):
    """A copy of the incident bundle, so the page can be written inside it."""
    dest = tmp_path / "bundle"
    shutil.copytree(INCIDENT, dest)
    return dest


def run(module_runner, **args):
    out = module_runner(gpu_diagnose.main, args, check_mode=args.pop("_check", False))
    assert not out["failed"], out.get("msg")
    return out


def test_bundle_page_draws_the_six_layers_and_marks_the_broken_one(module_runner, browser, bundle, tmp_path):
    page_path = bundle / "diagnosis.html"
    out = run(module_runner, bundle=str(bundle), node="lab-node-1", html=str(page_path))
    assert out["first_broken"] == "container-runtime"
    assert out["html"] == {"dest": str(page_path), "changed": True} and out["changed"] is True
    # the rest of the result is as without the option
    assert [l["layer"] for l in out["layers"]] == LAYERS

    page = browser.open(page_path.as_uri())
    layers = page.evaluate(LAYERS_JS)
    assert [l["layer"] for l in layers] == TOP_DOWN
    assert {l["layer"]: l["status"] for l in layers} == {l["layer"]: l["status"] for l in out["layers"]}
    assert [l["layer"] for l in layers if l["first"] == "true"] == ["container-runtime"]
    broken = next(l for l in layers if l["layer"] == "container-runtime")
    assert "first broken layer" in broken["text"] and "BROKEN" in broken["text"]
    assert "restart pending" in broken["text"]
    # a layer not judged says why
    workload = next(l for l in layers if l["layer"] == "workload")
    assert workload["status"] == "skipped" and "Not judged: no Pod given" in workload["text"]
    # the GPU node frame holds the four node layers, the Pod and the control plane stand above it
    framed = page.evaluate("[...document.querySelectorAll('.node-frame [data-layer]')].map(e => e.dataset.layer)")
    assert framed == ["node-advertisement", "device-plugin", "container-runtime", "driver"]
    # broken is drawn in the broken colour, ok in the ok colour
    colours = page.evaluate("Object.fromEntries([...document.querySelectorAll('[data-layer]')].map("
                            "e => [e.dataset.layer, getComputedStyle(e).borderTopColor]))")
    assert colours["container-runtime"] == "rgb(179, 38, 30)"
    assert colours["scheduling"] == "rgb(31, 122, 58)"
    # every rule of the style sheet holds - none lost to escaping ("Segoe UI" as &#34;, `>` as &gt;)
    styled = page.evaluate("(() => { const t = document.querySelector('.node-frame > .frame-title');"
                           " return [getComputedStyle(document.body).fontFamily, getComputedStyle(t).position,"
                           " getComputedStyle(document.querySelector('code')).fontFamily]; })()")
    assert styled[0].startswith("system-ui") and '"Segoe UI"' in styled[0], styled
    assert styled[1] == "absolute" and styled[2].startswith("ui-monospace"), styled

    # the node facts behind it, each with where it was read
    facts = page.evaluate("Object.fromEntries([...document.querySelectorAll('[data-fact]')].map("
                          "r => [r.dataset.fact, r.cells[1].innerText]))")
    assert facts["runtimes_running"] == "runc" and facts["runtimes_configured"] == "nvidia"
    assert facts["restart_pending"].startswith("restart pending on lab-node-1")
    assert facts["capacity"] == "20" and facts["allocatable"] == "20"
    assert facts["plugin_pod"].startswith("phase=Running Ready=True")

    # every link is relative and lands on a file or folder of the bundle
    hrefs = page.evaluate("[...document.querySelectorAll('a')].map(a => [a.getAttribute('href'), a.href])")
    assert hrefs, "the evidence links the bundle's files"
    for raw, absolute in hrefs:
        assert not urllib.parse.urlsplit(raw).scheme, raw
        target = pathlib.Path(urllib.parse.unquote(urllib.parse.urlsplit(absolute).path))
        assert target.exists() and (bundle in target.parents or target == bundle), (raw, target)
    assert any(raw == "nodes/lab-node-1/crictl-info.json" or raw.startswith("nodes/lab-node-1/")
               for raw, _a in hrefs)
    assert any(raw.startswith("cluster/nodes.json") for raw, _a in hrefs)

    # self-contained: nothing was fetched, nothing points outside
    assert page.evaluate("performance.getEntriesByType('resource').length") == 0
    assert page.evaluate("document.querySelectorAll('script, link, img, iframe, object').length") == 0
    page.screenshot(str(tmp_path / "diagnosis.png"))
    page.pdf(str(tmp_path / "diagnosis.pdf"))
    assert (tmp_path / "diagnosis.pdf").read_bytes()[:5] == b"%PDF-"
    # prints cleanly: the colours are kept in print, the layers do not break across pages
    page.call("Emulation.setEmulatedMedia", {"media": "print"})
    printed = page.evaluate("(() => { const e = document.querySelector('[data-layer=\"container-runtime\"]');"
                            " const s = getComputedStyle(e); return [s.backgroundColor, s.breakInside,"
                            " s.printColorAdjust || s.webkitPrintColorAdjust]; })()")
    assert printed == ["rgb(253, 231, 230)", "avoid", "exact"]
    page.call("Emulation.setEmulatedMedia", {"media": ""})
    page.close()


def test_rerun_keeps_the_page_check_mode_writes_nothing(module_runner, bundle, tmp_path):
    page_path = tmp_path / "out" / "diagnosis.html"
    first = run(module_runner, bundle=str(bundle), node="lab-node-1", html=str(page_path))
    assert first["html"]["changed"] and page_path.exists()
    before = page_path.read_bytes()
    again = run(module_runner, bundle=str(bundle), node="lab-node-1", html=str(page_path))
    assert again["html"] == {"dest": str(page_path), "changed": False} and again["changed"] is False
    assert page_path.read_bytes() == before
    # outside the bundle, the links climb to it
    assert 'href="../bundle/nodes/lab-node-1/' in before.decode()
    fresh = tmp_path / "check" / "diagnosis.html"
    checked = run(module_runner, bundle=str(bundle), node="lab-node-1", html=str(fresh), _check=True)
    assert checked["html"]["changed"] is True and not fresh.exists()
    # the Markdown dest and the page together: both written, both in the result
    md = tmp_path / "both" / "diagnosis.md"
    both = run(module_runner, bundle=str(bundle), node="lab-node-1", dest=str(md),
               html=str(md.with_suffix(".html")))
    assert md.exists() and md.with_suffix(".html").exists() and both["changed"] is True


def live_result(value):
    """A live-shaped result: API paths as sources, nothing to link."""
    layers = []
    for name in LAYERS:
        status = {"driver": "ok", "container-runtime": "ok", "device-plugin": "ok",
                  "node-advertisement": "ok", "scheduling": "broken", "workload": "unknown"}[name]
        layers.append({"layer": name, "status": status, "next": "look at %s" % name,
                       "evidence": [{"source": "GET /api/v1/nodes/n1 .spec.taints", "value": value}]})
    layers[-1]["reason"] = "the Pod is Pending"
    return {"node": "n1", "candidates": ["n1"], "layers": layers, "first_broken": "scheduling",
            "pod": "ml/trainer-0", "source": "live", "limits": []}


def test_evidence_is_text_never_markup(browser, tmp_path):
    hostile = '<img src=x onerror="document.title=\'owned\'"><script>document.title="owned"</script>'
    page_path = tmp_path / "live.html"
    page_path.write_text(render.diagnosis_html(live_result(hostile)))
    page = browser.open(page_path.as_uri())
    assert page.evaluate("document.title") != "owned"
    assert page.evaluate("document.querySelectorAll('img, script').length") == 0
    texts = page.evaluate("[...document.querySelectorAll('.evidence .val')].map(e => e.textContent)")
    assert hostile in texts
    # a live diagnosis links nothing (its sources are API paths)
    assert page.evaluate("document.querySelectorAll('a').length") == 0
    assert [l["first"] for l in page.evaluate(LAYERS_JS)] == ["false", "true", "false", "false", "false", "false"]
    assert "Why unknown: the Pod is Pending" in page.evaluate("document.body.innerText")
    page.screenshot(str(tmp_path / "live.png"))
    page.close()


def test_the_page_is_the_same_for_the_same_diagnosis():
    result = live_result("a taint")
    assert render.diagnosis_html(result) == render.diagnosis_html(json.loads(json.dumps(result)))


def test_refusals_are_plain(monkeypatch, module_runner, bundle, tmp_path):
    with pytest.raises(render.ReportError, match="expected the six"):
        render.diagnosis_html({"layers": [{"layer": "driver", "status": "ok"}]})
    with pytest.raises(render.ReportError, match="not a diagnosis"):
        render.diagnosis_html(["driver"])
    bad = live_result("x")
    bad["layers"][0]["status"] = "fine"
    with pytest.raises(render.ReportError, match="status 'fine'"):
        render.diagnosis_html(bad)
    monkeypatch.setattr(render, "jinja2", None)
    out = module_runner(gpu_diagnose.main, {"bundle": str(bundle), "node": "lab-node-1",
                                            "html": str(tmp_path / "x.html")})
    assert out["failed"] and "needs Jinja2" in out["msg"]
    assert not os.path.exists(tmp_path / "x.html")
