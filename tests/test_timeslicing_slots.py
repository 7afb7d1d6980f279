"""timeslicing_slots: the slot table and its errors."""
import textwrap

import timeslicing_slots

LAB = textwrap.dedent("""\
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: time-slicing-config, namespace: gpu-operator}
    data:
      any: |-
        version: v1
        sharing:
          timeSlicing:
            failRequestsGreaterThanOne: true
            resources:
              - name: nvidia.com/gpu
                replicas: 5
    """)
EXPECTED = ("PHYSICAL_GPUS=4\nREPLICAS=5\nADVERTISED=20\nVRAM_PER_GPU_GIB=40\n"
            "VRAM_GUARANTEED_PER_SLOT_GIB=0\nVRAM_SHARED_PER_GPU_GIB=40\nISOLATION=none\n")


def run(module_runner, tmp_path, manifest=LAB, **args):
    src = tmp_path / "ts.yaml"
    src.write_text(manifest)
    base = {"src": str(src), "physical_gpus": 4, "vram_per_gpu_gib": 40}
    base.update(args)
    return module_runner(timeslicing_slots.main, base)


def test_lab_table_and_file(module_runner, tmp_path):
    dest = tmp_path / "slots.txt"
    out = run(module_runner, tmp_path, dest=str(dest))
    assert out["advertised"] == 20 and out["vram_guaranteed_per_slot_gib"] == 0
    assert out["isolation"] == "none" and out["strategy"] == "time-slicing"
    assert out["fail_requests_greater_than_one"] is True
    assert dest.read_text() == EXPECTED and out["changed"]
    assert run(module_runner, tmp_path, dest=str(dest))["changed"] is False


def test_other_hardware_is_computed_not_copied(module_runner, tmp_path):
    out = run(module_runner, tmp_path, physical_gpus=8, vram_per_gpu_gib=80)
    assert out["advertised"] == 40 and out["vram_shared_per_gpu_gib"] == 80
    assert "ADVERTISED=40\n" in out["report"]


def test_mps_splits_memory(module_runner):
    config = ("sharing:\n  mps:\n    resources:\n      - name: nvidia.com/gpu\n"
              "        replicas: 4\n")
    out = module_runner(timeslicing_slots.main,
                        {"config": config, "physical_gpus": 2, "vram_per_gpu_gib": 80})
    assert out["strategy"] == "mps" and out["advertised"] == 8
    assert out["vram_guaranteed_per_slot_gib"] == 20 and out["isolation"] == "memory-limit"


def test_rename_by_default(module_runner):
    config = ("sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
              "      - name: nvidia.com/gpu\n        replicas: 2\n")
    out = module_runner(timeslicing_slots.main,
                        {"config": config, "physical_gpus": 1, "vram_per_gpu_gib": 24})
    assert out["resource_name"] == "nvidia.com/gpu.shared"


def test_data_any_mapping_is_common_mistake_2(module_runner, tmp_path):
    manifest = LAB.replace("  any: |-\n", "  any:\n")
    dest = tmp_path / "slots.txt"
    out = run(module_runner, tmp_path, manifest=manifest, dest=str(dest))
    assert out["failed"] and out["mistake"] == "data-any-mapping"
    assert "common mistake 2" in out["msg"] and "|-" in out["msg"]
    assert not dest.exists()


def test_errors_name_the_problem(module_runner, tmp_path):
    cases = {
        "version: v1\n": "no `sharing` section",
        "sharing:\n  timeSlicing:\n    resources:\n      - name: amd.com/gpu\n        replicas: 2\n":
            "no entry for nvidia.com/gpu",
        "sharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 0\n":
            "at least 1",
        "sharing: [unclosed\n": "not valid YAML",
    }
    for config, text in cases.items():
        out = module_runner(timeslicing_slots.main,
                            {"config": config, "physical_gpus": 4, "vram_per_gpu_gib": 40})
        assert out["failed"] and text in out["msg"], (config, out["msg"])


def test_check_mode_and_diff(module_runner, tmp_path):
    src = tmp_path / "ts.yaml"
    src.write_text(LAB)
    dest = tmp_path / "slots.txt"
    out = module_runner(timeslicing_slots.main,
                        {"src": str(src), "physical_gpus": 4, "vram_per_gpu_gib": 40,
                         "dest": str(dest)}, check_mode=True, diff=True)
    assert out["changed"] and out["diff"]["after"] == EXPECTED and not dest.exists()
