"""The GPU stack's foundation (issue 30), unit level: the mock NVML library and its nvidia-smi
reader (nvml_mock), its card table, the CDI spec writer, and
toolchain/build.sh for NVIDIA's four binaries.

The mock is built here with gcc against go-nvml's own nvml.h (the version NVIDIA's device plugin
pins); the tests that need NVIDIA's binaries skip, saying how to build them, when they are not
built. Helpers and fixtures shared with test_gpu_stack_plugin.py and test_gpu_stack_toolkit.py:
tests/unit/roles/gpu_stack_testing.py.
"""
import os
import re
import subprocess
import shutil
import sys

import pytest

from lab_testing import ROOT  # tests/lab_testing.py
from gpu_stack_testing import (
    DEFAULT_COMPONENTS, GPU_COMPONENTS, LIBDIR, MOCK_SRC, MODULES, PLUGIN, TOOLCHAIN, TOOLKIT, UUID,
    bin_dir, gen_cards, gen_stubs, go_nvml_dir, gpu_cdi_spec, listed, mock_conf, nvidia_binary, smi)


# ---- the card table: one source of truth ----

def test_card_table_is_generated_from_gpu_sharing():
    from ansible.module_utils.sharing import cards
    assert (MOCK_SRC / "cards.tsv").read_text() == gen_cards.table(cards.CARDS), \
        "nvml_mock/cards.tsv is stale: run gen_cards.py > cards.tsv"
    rows = {r[0]: r for r in gen_cards.rows(cards.CARDS)}
    assert rows["A100-SXM4-40GB"][1:4] == ("NVIDIA A100-SXM4-40GB", 40960, "8.0")


# ---- the library ----

def test_exports_every_symbol_go_nvml_references(mock_build):
    referenced = gen_stubs.referenced(str(go_nvml_dir()))
    assert len(referenced) > 350 and "nvmlInit_v2" in referenced and "nvmlEventSetWait_v2" in referenced
    nm = subprocess.run(["nm", "-D", "--defined-only", str(mock_build / LIBDIR / "libnvidia-ml.so.1")],
                        stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    defined = {line.split()[-1] for line in nm.splitlines() if line.strip()}
    missing = sorted(set(referenced) - defined)
    assert not missing, "go-nvml references nvml* symbols the mock does not export: " + ", ".join(missing)


def test_library_binds_lazily_and_names_itself(mock_build):
    lib = mock_build / LIBDIR / "libnvidia-ml.so.1"
    dynamic = subprocess.run(["readelf", "-d", str(lib)], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout
    assert "libnvidia-ml.so.1" in dynamic  # SONAME
    assert "BIND_NOW" not in dynamic and not re.search(r"FLAGS.*\bNOW\b", dynamic)
    assert b"NVML-MOCK gpu-incident-lab" in lib.read_bytes()


def test_unimplemented_calls_say_not_supported(driver_root):
    code = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
assert lib.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
fan = ctypes.c_uint()
print(lib.nvmlDeviceGetFanSpeed(dev, ctypes.byref(fan)))
"""
    out = subprocess.run([sys.executable, "-c", code, str(driver_root / LIBDIR / "libnvidia-ml.so.1")],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert out.strip() == "3"  # NVML_ERROR_NOT_SUPPORTED


XID_SCRIPT = r"""
import ctypes, sys, time
class Event(ctypes.Structure):
    _fields_ = [("device", ctypes.c_void_p), ("eventType", ctypes.c_ulonglong),
                ("eventData", ctypes.c_ulonglong), ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]
lib = ctypes.CDLL(sys.argv[1])
conf = sys.argv[2]
assert lib.nvmlInit_v2() == 0
events = ctypes.c_void_p()
assert lib.nvmlEventSetCreate(ctypes.byref(events)) == 0
handles = []
for i in range(4):
    dev = ctypes.c_void_p()
    assert lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(dev)) == 0
    assert lib.nvmlDeviceRegisterEvents(dev, ctypes.c_ulonglong(8 | 1 | 2), events) == 0
    handles.append(dev.value)
e = Event()
print("before", lib.nvmlEventSetWait_v2(events, ctypes.byref(e), 200))
with open(conf, "a") as f:
    f.write("xid = 2 48\n")
print("xid", lib.nvmlEventSetWait_v2(events, ctypes.byref(e), 5000), handles.index(e.device), e.eventType, e.eventData)
print("again", lib.nvmlEventSetWait_v2(events, ctypes.byref(e), 200))
with open(conf, "a") as f:
    f.write("lost = 3\n")
print("lost", lib.nvmlEventSetWait_v2(events, ctypes.byref(e), 5000), handles.index(e.device), e.eventData)
uuid = ctypes.create_string_buffer(96)
print("uuid", lib.nvmlDeviceGetUUID(ctypes.c_void_p(handles[3]), uuid, 96))
dev = ctypes.c_void_p()
print("handle", lib.nvmlDeviceGetHandleByIndex_v2(3, ctypes.byref(dev)))
"""


def test_xid_and_lost_gpu_arrive_through_the_event_set(driver_root):
    """Events written to the file after the set exists are delivered once; a lost GPU says Xid 79
    and then answers GPU_IS_LOST (NVML's documented code, 15) - read from the file on each call."""
    mock_conf(driver_root, "card = A100-SXM4-40GB\n")
    out = subprocess.run([sys.executable, "-c", XID_SCRIPT, str(driver_root / LIBDIR / "libnvidia-ml.so.1"),
                          str(driver_root / LIBDIR / "nvml-mock.conf")], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True, timeout=60).stdout.splitlines()
    assert out == ["before 10",            # NVML_ERROR_TIMEOUT: nothing happened
                   "xid 0 2 8 48",         # GPU 2, nvmlEventTypeXidCriticalError, Xid 48
                   "again 10",             # delivered once
                   "lost 0 3 79",          # GPU 3 fell off the bus
                   "uuid 15", "handle 15"]  # NVML_ERROR_GPU_IS_LOST


# ---- the reader, as a container sees it ----

def test_reader_lists_the_seed_gpus(driver_root):
    gpus = listed(driver_root)
    assert [g[:2] for g in gpus] == [(str(i), "NVIDIA A100-SXM4-40GB") for i in range(4)]
    uuids = [g[2] for g in gpus]
    assert all(UUID.match(u) for u in uuids) and len(set(uuids)) == 4
    assert listed(driver_root) == gpus  # stable: derived from seed, card and index


def test_reader_table_and_query_print_as_nvidia_smi(driver_root):
    rc, out = smi(driver_root)
    assert rc == 0, out
    assert re.search(r"^\| NVIDIA-SMI 550\.54\.15 +Driver Version: 550\.54\.15 +CUDA Version: 12\.4 +\|$", out, re.M)
    names = re.findall(r"^\| +(\d)  NVIDIA A100-SXM4-40GB +On  \| +00000000:([0-9A-F]{2}):00\.0 Off \|", out, re.M)
    assert names == [("0", "07"), ("1", "0F"), ("2", "47"), ("3", "4E")]
    assert len(re.findall(r"\| +0MiB /  40960MiB \|", out)) == 4
    assert "No running processes found" in out
    rc, out = smi(driver_root, "--query-gpu=index,name,uuid,driver_version,memory.total", "--format=csv,noheader")
    assert rc == 0, out
    uuids = [g[2] for g in listed(driver_root)]
    assert out.splitlines() == ["%d, NVIDIA A100-SXM4-40GB, %s, 550.54.15, 40960 MiB" % (i, u)
                                for i, u in enumerate(uuids)]
    rc, out = smi(driver_root, "--query-gpu=bogus", "--format=csv")
    assert rc == 2 and 'Field "bogus" is not a valid field to query.' in out


def test_reader_version_and_a_preloaded_library_as_the_dra_drivers_prestart_runs_it(driver_root, tmp_path):
    """NVIDIA's DRA driver's init container (hack/kubelet-plugin-prestart.sh, v0.4.1) runs
    `env -i LD_PRELOAD=<driver root>/.../libnvidia-ml.so.1 <driver root>/usr/bin/nvidia-smi --version`
    and leaves on exit 0: the library the loader preloaded is the one nvidia-smi uses, found
    nowhere else (no LD_LIBRARY_PATH; the standard folders are not the driver root)."""
    lib = driver_root / LIBDIR / "libnvidia-ml.so.1"
    done = subprocess.run(["env", "-i", "LD_PRELOAD=%s" % lib, str(driver_root / "usr/bin/nvidia-smi"), "--version"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=30,
                          check=False)
    assert (done.returncode, done.stdout) == (0, "NVIDIA-SMI version  : 550.54.15\nNVML version        : 550.54\n"
                                                 "DRIVER version      : 550.54.15\nCUDA Version        : 12.4\n")
    # --version stands alone, as NVIDIA's does
    assert smi(driver_root, "--version", "-L")[0] == 2
    # the driver's own version follows the node's configuration
    mock_conf(driver_root, "driver_version = 535.129.03\n")
    assert smi(driver_root, "--version")[1].splitlines()[1] == "NVML version        : 535.129"


def test_a_container_given_the_library_alone_reads_the_nodes_configuration_baked_in(driver_root, tmp_path):
    """NVIDIA's DRA driver's CDI spec mounts libnvidia-ml.so.<version> and nvidia-smi into the
    container, nothing beside them: the node's runner bakes the node's configuration and its
    card's rows into the node's copy of the library (node_runner/nvml_bake.py), and the mock there
    - library and reader alike - answers as on the node: the same card, the same UUIDs."""
    bake = ROOT / "node_runner/nvml_bake.py"
    mock_conf(driver_root, "card = H100-SXM5-80GB\ncount = 2\nuuid_seed = lab-x/lab-node-2\ndriver_version = 535.129.03\n")
    on_node = smi(driver_root, "-L")
    assert on_node[0] == 0 and on_node[1].count("NVIDIA H100 80GB HBM3") == 2
    # the container: the library under its version's name and nvidia-smi, no configuration, no table
    ctr = tmp_path / "ctr"
    (ctr / LIBDIR).mkdir(parents=True)
    (ctr / "usr/bin").mkdir(parents=True)
    lib = ctr / LIBDIR / "libnvidia-ml.so.535.129.03"
    shutil.copy(driver_root / LIBDIR / "libnvidia-ml.so.1", lib)
    (ctr / LIBDIR / "libnvidia-ml.so.1").symlink_to(lib.name)
    shutil.copy(driver_root / "usr/bin/nvidia-smi", ctr / "usr/bin/nvidia-smi")
    unbaked = smi(ctr, "-L")
    assert unbaked[0] == 0 and "H100" not in unbaked[1]   # the mock's defaults: not this node
    done = subprocess.run([sys.executable, str(bake), str(lib), str(driver_root / LIBDIR / "nvml-mock.conf"),
                           str(driver_root / LIBDIR / "nvml-mock-cards.tsv")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert smi(ctr, "-L") == on_node
    assert smi(ctr, "--version")[1].splitlines()[2] == "DRIVER version      : 535.129.03"
    # a file that is not the mock's library is refused, naming it, and left as it was
    other = tmp_path / "other.so"
    other.write_bytes(b"\x7fELF nothing")
    done = subprocess.run([sys.executable, str(bake), str(other), str(driver_root / LIBDIR / "nvml-mock.conf"),
                           str(driver_root / LIBDIR / "nvml-mock-cards.tsv")], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "not the mock's library" in done.stderr and other.read_bytes() == b"\x7fELF nothing"


def test_reader_takes_other_cards_from_the_table(driver_root):
    mock_conf(driver_root, "card = H100-SXM5-80GB\ncount = 8\ndriver_version = 535.129.03\n")
    rc, out = smi(driver_root, "--query-gpu=name,memory.total,driver_version,compute_cap", "--format=csv,noheader")
    assert rc == 0, out
    assert out.splitlines() == ["NVIDIA H100 80GB HBM3, 81559 MiB, 535.129.03, 9.0"] * 8


def test_reader_sees_only_the_gpus_a_container_was_given(driver_root, tmp_path):
    """With NVML_MOCK_DEVICE_NODES (the CDI spec sets it) only GPUs whose /dev/nvidia<minor>
    exists are listed, as GPU 0 onwards, with their own UUIDs - as in a container."""
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvidia2").write_text("")  # a stand-in name: only its existence is looked at
    everything = listed(driver_root)
    assert listed(driver_root, env={"NVML_MOCK_DEVICE_NODES": str(dev)}) == [
        ("0", "NVIDIA A100-SXM4-40GB", everything[2][2])]


NO_LIBRARY = ("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the "
              "NVIDIA Display Driver is properly installed and present in your system.\n"
              "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n")


@pytest.mark.parametrize("conf, rc, text", [
    ("fault = version-mismatch\nlibrary_version = 550.127.05\n", 18,
     "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.127\n"),
    ("fault = driver-not-loaded\n", 9,
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
     "latest NVIDIA driver is installed and running.\n"),
    ("fault = library-gone\n", 12, NO_LIBRARY),
])
def test_reader_fails_as_the_real_one(driver_root, conf, rc, text):
    mock_conf(driver_root, conf)
    assert smi(driver_root, "-L") == (rc, text)
    assert smi(driver_root) == (rc, text)


def test_reader_without_the_library(driver_root):
    (driver_root / LIBDIR / "libnvidia-ml.so.1").unlink()
    assert smi(driver_root, "-L") == (12, NO_LIBRARY)


def test_reader_reports_a_lost_gpu(driver_root):
    mock_conf(driver_root, "lost = 1\n")
    rc, out = smi(driver_root, "-L")
    assert rc == 15
    assert "Unable to determine the device handle for GPU0000:0F:00.0: GPU is lost.  Reboot the system to " \
           "recover this GPU" in out
    assert len(re.findall(r"^GPU \d: ", out, re.M)) == 3


def test_reader_refuses_a_library_that_is_not_the_mock(driver_root):
    (driver_root / LIBDIR / "libnvidia-ml.so.1").write_bytes(b"\x7fELF not the mock")
    rc, out = smi(driver_root, "-L")
    assert rc == 12 and "is not the lab's mock NVML library" in out


def test_reader_is_static(mock_build):
    out = subprocess.run(["file", "-L", str(mock_build / "usr/bin/nvidia-smi")], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    assert "statically linked" in out


# ---- the CDI spec ----

def test_cdi_spec_names_each_gpu_by_uuid_and_index(driver_root):
    spec = gpu_cdi_spec.spec(str(driver_root), gpu_cdi_spec.gpus(str(driver_root)), 510)
    uuids = [g[2] for g in listed(driver_root)]
    names = [d["name"] for d in spec["devices"]]
    assert names == [n for i, u in enumerate(uuids) for n in (u, str(i))] + ["all"]
    first = spec["devices"][0]["containerEdits"]["deviceNodes"]
    assert first == [{"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0, "permissions": "rw"}]
    common = spec["containerEdits"]
    assert [n["path"] for n in common["deviceNodes"]] == ["/dev/nvidiactl", "/dev/nvidia-uvm"]
    assert {m["containerPath"] for m in common["mounts"]} == {
        "/usr/bin/nvidia-smi", "/" + LIBDIR + "/libnvidia-ml.so.1", "/" + LIBDIR + "/nvml-mock-cards.tsv"}
    assert common["env"] == ["NVML_MOCK_DEVICE_NODES=/dev"]


# ---- toolchain/build.sh ----

def status(outdir, *names):
    done = subprocess.run([str(TOOLCHAIN / "build.sh"), "status", str(outdir)] + list(names),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False,
                          env=dict(os.environ, BUILD_STATUS_READ_ONLY="1"))
    return done.returncode, done.stdout, done.stderr


def test_status_default_set_is_unchanged(tmp_path):
    rc, out, _ = status(tmp_path)
    assert rc == 0
    assert [line.split()[0] for line in out.splitlines()] == DEFAULT_COMPONENTS
    assert all(line.endswith(" missing") for line in out.splitlines())


def test_status_of_the_gpu_stack(tmp_path):
    rc, out, _ = status(tmp_path, "gpu-stack")
    assert rc == 0
    assert out.splitlines() == ["%s %s missing" % (name, MODULES[name][1]) for name in GPU_COMPONENTS]
    rc, _, err = status(tmp_path, "nvidia-gpu-thing")
    assert rc == 2 and "unknown component 'nvidia-gpu-thing'" in err


def test_status_remembers_other_components(tmp_path):
    """A status of some components keeps what an earlier status remembered of the others."""
    verified = tmp_path / ".verified"
    verified.write_text("kubectl v1.36.3 1 2\n")
    subprocess.run([str(TOOLCHAIN / "build.sh"), "status", str(tmp_path), "gpu-stack"], check=True,
                   stdout=subprocess.PIPE)
    assert verified.read_text() == "kubectl v1.36.3 1 2\n"


@pytest.mark.parametrize("name", GPU_COMPONENTS)
def test_built_binary_names_nvidias_module(name):
    path = nvidia_binary(name)
    module, version = MODULES[name]
    out = subprocess.run(["go", "version", "-m", str(path)], stdout=subprocess.PIPE, universal_newlines=True,
                         check=True).stdout
    assert re.search(r"^\s+mod\s+%s\s+%s\s" % (re.escape(module), re.escape(version)), out, re.M), out
    # NVIDIA's go-nvml needs cgo; nfd-master is built as upstream's image, CGO off
    assert ("CGO_ENABLED=0" if name == "nfd-master" else "CGO_ENABLED=1") in out
    rc, line, _ = status(bin_dir(), name)
    assert rc == 0 and line == "%s %s ok\n" % (name, version)


def test_versions_are_stamped_as_upstream_does():
    plugin = subprocess.run([str(nvidia_binary("nvidia-device-plugin")), "--version"], stdout=subprocess.PIPE,
                            universal_newlines=True, check=True).stdout
    assert plugin.splitlines()[0] == "NVIDIA Device Plugin version %s" % PLUGIN[1]
    ctk = subprocess.run([str(nvidia_binary("nvidia-ctk")), "--version"], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    assert ctk.splitlines()[0] == "NVIDIA Container Toolkit CLI version %s" % TOOLKIT[1].lstrip("v")

