"""gpu_preflight: the module's main() - a preflight record per experiment id (skipped, passed,
failed), kept once written, check mode, and the refusals."""
import json
import os
import stat

import gpu_preflight


def _fake(path, script):
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_preflight_records_skipped_and_keeps_it(module_runner, tmp_path):
    kubectl = _fake(tmp_path / "kubectl", "exit 0\n")
    reqs = [{"name": "kubectl", "kind": "executable", "path": kubectl, "layers": ["scheduling"]},
            {"name": "nvidia-smi", "kind": "executable", "path": str(tmp_path / "none"),
             "layers": ["driver"]}]
    args = {"experiment_id": "day02-001", "dest": str(tmp_path / "rec"), "requirements": reqs,
            "reason": "No GPU context was accessed."}
    out = module_runner(gpu_preflight.main, args)
    record = json.loads((tmp_path / "rec" / "day02-001.json").read_text())
    assert out["changed"] and out["status"] == "skipped" and record["status"] == "skipped"
    assert record["layers"]["driver"]["status"] == "skipped"
    assert record["layers"]["scheduling"]["status"] == "verifiable"
    assert [r["status"] for r in record["requirements"]] == ["available", "missing"]
    assert "nvidia-smi missing" in record["reason"] and "No GPU context" in record["reason"]
    for key in ("experiment_id", "track", "kind", "time", "host", "requirements", "status", "reason"):
        assert key in record
    # a rerun with the same id keeps the first record, even when the machine changed
    _fake(tmp_path / "none", "exit 0\n")
    again = module_runner(gpu_preflight.main, args)
    assert again["kept_existing"] and not again["changed"] and again["record"] == record
    # a new id sees nvidia-smi now: passed
    out = module_runner(gpu_preflight.main, dict(args, experiment_id="day02-002"))
    assert out["status"] == "passed"


def test_preflight_failed_and_refusals(module_runner, tmp_path):
    args = {"experiment_id": "x1", "dest": str(tmp_path),
            "requirements": [{"name": "cluster", "kind": "cluster", "required": True,
                              "layers": ["scheduling"]}]}
    out = module_runner(gpu_preflight.main, args)
    assert out["status"] == "failed" and "no kubeconfig" in out["record"]["requirements"][0]["detail"]
    out = module_runner(gpu_preflight.main, dict(args, experiment_id="../evil"))
    assert out["failed"] and "experiment_id" in out["msg"]
    out = module_runner(gpu_preflight.main, dict(args, experiment_id="x2", requirements=[
        {"name": "a", "kind": "executable", "layers": ["gpu"]}]))
    assert out["failed"] and "unknown layer" in out["msg"]
    out = module_runner(gpu_preflight.main, dict(args, experiment_id="x3"), check_mode=True)
    assert not out["failed"] and not os.path.exists(tmp_path / "x3.json")
