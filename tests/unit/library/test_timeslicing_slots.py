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


def test_refusals_quote_the_plugin_and_write_nothing(module_runner, tmp_path):
    dest = tmp_path / "slots.txt"
    cases = {
        "sharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 1\n":
            "number of replicas must be >= 2",
        "version: v2\n": "unknown version: v2",
        "sharing: [unclosed\n": "error converting YAML to JSON",
        "sharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: 'false'\n    resources:\n"
        "      - {name: nvidia.com/gpu, replicas: 2}\n": "cannot unmarshal string",
    }
    for config, text in cases.items():
        out = module_runner(timeslicing_slots.main,
                            {"config": config, "physical_gpus": 4, "vram_per_gpu_gib": 40,
                             "dest": str(dest)})
        assert out["failed"] and text in out["msg"], (config, out["msg"])
        assert text in out["plugin_message"]
        assert "NVIDIA device plugin v0.20.0 refuses" in out["msg"]
        assert not dest.exists()


def test_accepted_configs_the_old_table_refused(module_runner):
    """No sharing section, or entries only for other names: the plugin starts, GPUs unshared."""
    for config in ("version: v1\n",
                   "sharing:\n  timeSlicing:\n    resources:\n      - {name: nvidia.com/mig-1g.5gb, "
                   "replicas: 2}\n"):
        out = module_runner(timeslicing_slots.main,
                            {"config": config, "physical_gpus": 4, "vram_per_gpu_gib": 40})
        assert not out["failed"], out
        assert out["advertised_resources"] == {"nvidia.com/gpu": 4}
        assert out["vram_guaranteed_per_slot_gib"] == 40 and out["isolation"] == "exclusive"


def test_bad_numbers_and_modes_are_refused(module_runner, tmp_path):
    dest = tmp_path / "slots.txt"
    for args, text in ((dict(vram_per_gpu_gib=float("nan")), "finite number above 0"),
                       (dict(vram_per_gpu_gib=float("inf")), "finite number above 0"),
                       (dict(physical_gpus=0), "at least 1"),
                       (dict(mode="77777"), "beyond 0777"),
                       (dict(mode="rw-r--r--"), "not an octal file mode"),
                       (dict(resource="Example/GPU"), "not a resource name")):
        base = {"config": "version: v1\n", "physical_gpus": 4, "vram_per_gpu_gib": 40,
                "dest": str(dest)}
        base.update(args)
        out = module_runner(timeslicing_slots.main, base)
        assert out["failed"] and text in out["msg"], (args, out["msg"])
        assert "Traceback" not in out["msg"] and not dest.exists()


def test_non_utf8_manifest_and_bad_data(module_runner, tmp_path):
    src = tmp_path / "ts.yaml"
    src.write_bytes(b"kind: ConfigMap\ndata:\n  any: \xff\xfe\n")
    out = module_runner(timeslicing_slots.main,
                        {"src": str(src), "physical_gpus": 4, "vram_per_gpu_gib": 40})
    assert out["failed"] and "not UTF-8" in out["msg"] and "line 3" in out["msg"]
    for text, want in (("kind: ConfigMap\ndata: [a]\n", "data is a list"),
                       ("kind: ConfigMap\nmetadata: x\ndata:\n  any: 3\n", "must be a string")):
        src.write_text(text)
        out = module_runner(timeslicing_slots.main,
                            {"src": str(src), "physical_gpus": 4, "vram_per_gpu_gib": 40})
        assert out["failed"] and want in out["msg"], out["msg"]


def test_mps_values(module_runner):
    config = "sharing:\n  mps:\n    resources:\n      - {name: nvidia.com/gpu, replicas: 3}\n"
    out = module_runner(timeslicing_slots.main,
                        {"config": config, "physical_gpus": 4, "vram_per_gpu_gib": 40})
    assert out["mps_memory_limit_mib"] == 13653 and out["mps_active_thread_percentage"] == 33
    assert out["fail_requests_greater_than_one"] is True
    assert out["vram_guaranteed_per_slot_gib"] == 13.33
    out = module_runner(timeslicing_slots.main,
                        {"config": config.replace("3}", "20}"), "physical_gpus": 1,
                         "vram_per_gpu_gib": 16, "compute_capability": "7.0"})
    assert out["failed"] and "20 > 16" in out["msg"]


def test_check_mode_and_diff(module_runner, tmp_path):
    src = tmp_path / "ts.yaml"
    src.write_text(LAB)
    dest = tmp_path / "slots.txt"
    out = module_runner(timeslicing_slots.main,
                        {"src": str(src), "physical_gpus": 4, "vram_per_gpu_gib": 40,
                         "dest": str(dest)}, check_mode=True, diff=True)
    assert out["changed"] and out["diff"]["after"] == EXPECTED and not dest.exists()
