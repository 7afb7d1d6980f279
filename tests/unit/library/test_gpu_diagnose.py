"""gpu_diagnose: the module's main() on the lab's real incident bundle (tests/bundle_corpus,
SOURCE.md) - as a folder and as the archive gpu_support_bundle writes, the six layers in order
with the first broken one, the Markdown report written once and kept, check mode, and what it
refuses before reading anything. Every rule on bundles built around real artefacts:
tests/unit/diagnosis/test_gpu_diagnosis_bundle.py; the HTML page: tests/unit/report/."""
import pytest

import gpu_diagnose
from ansible.module_utils.bundle import archive
from ansible.module_utils.diagnosis.layers import LAYERS
from lab_testing import TESTS

INCIDENT = TESTS / "bundle_corpus/lab-node-1-incident"


def diagnose(module_runner, check_mode=False, **args):
    out = module_runner(gpu_diagnose.main, dict({"bundle": str(INCIDENT), "node": "lab-node-1"}, **args),
                        check_mode=check_mode)
    assert not out["failed"], out.get("msg")
    return out


def test_the_incident_bundle_cuts_the_path_at_the_container_runtime(module_runner):
    out = diagnose(module_runner)
    assert [layer["layer"] for layer in out["layers"]] == LAYERS
    assert out["first_broken"] == "container-runtime" and not out["changed"]
    statuses = {layer["layer"]: layer["status"] for layer in out["layers"]}
    assert statuses["container-runtime"] == "broken" and statuses["driver"] != "broken"
    assert "restart pending" in out["report"]


def test_the_report_is_written_once_and_kept(module_runner, tmp_path):
    dest = tmp_path / "diagnosis.md"
    out = diagnose(module_runner, check_mode=True, dest=str(dest))
    assert out["changed"] and not dest.exists()                      # check mode: said, not written
    out = diagnose(module_runner, dest=str(dest))
    assert out["changed"] and dest.read_text() == out["report"]
    dest.write_text("the trainee's own notes\n")
    again = diagnose(module_runner, dest=str(dest))
    assert not again["changed"] and dest.read_text() == "the trainee's own notes\n"


def test_an_archive_reads_as_its_folder(module_runner, tmp_path):
    files = {str(p.relative_to(INCIDENT)): p.read_bytes() for p in INCIDENT.rglob("*") if p.is_file()}
    packed = tmp_path / "bundle.tar.gz"
    archive.write(str(packed), files, "gpu-support-bundle")
    from_archive = diagnose(module_runner, bundle=str(packed))
    from_folder = diagnose(module_runner)
    assert from_archive["first_broken"] == from_folder["first_broken"] == "container-runtime"
    assert from_archive["layers"] == from_folder["layers"]


@pytest.mark.parametrize("args,words", [
    ({"node": None}, "one of the following is required: pod, node"),
    ({"kubeconfig": "/nonexistent/kubeconfig"}, "mutually exclusive"),
    ({"bundle": "/nonexistent/bundle"}, "not a folder"),
    ({"pod": "trainer-0", "node": None}, "NS/NAME"),
])
def test_what_it_cannot_read_is_refused_plainly(module_runner, args, words):
    given = dict({"bundle": str(INCIDENT), "node": "lab-node-1"}, **args)
    out = module_runner(gpu_diagnose.main, {k: v for k, v in given.items() if v is not None})
    assert out["failed"] and words in out["msg"], out.get("msg")
