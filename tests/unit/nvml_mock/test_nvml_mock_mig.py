"""MIG in the mock NVML library (nvml_mock/, issue 40 phase 1), driven as go-nvml drives it.

The mock and its reader are built with gcc (nvml_mock/build.sh) against go-nvml's own nvml.h;
mig_harness.c beside this file makes the same C calls go-nvml makes (go-nvlib v0.10.0
mig_device.go, mig-parted v0.12.1 pkg/mig/config/config.go). Every process - the harness, a
second harness, the reader - shares the MIG state through the state file, as every process
that opens the real library shares the driver's.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from ansible.module_utils.sharing import cards, mig_layout, mig_listing

from nvml_mock_testing import (  # noqa: F401  (constants and the mock's build)
    A100, IN_USE, INSUFFICIENT_RESOURCES, LIBDIR, LISTINGS, MIG_UUID, MOCK_SRC, NOT_FOUND, NOT_SUPPORTED,
    CONFIG, RESET_REQUIRED, ROOT, SUCCESS, go_nvml_dir)


@pytest.fixture
def node(built, tmp_path):
    """A configuration and state file of this test's own: card, count, state path."""
    class Node:
        harness = built / "harness"
        state = tmp_path / "state" / "nvml-mock-mig.state"
        conf = tmp_path / "nvml-mock.conf"

        def configure(self, card="A100-SXM4-40GB", count=4):
            self.conf.write_text("card = %s\ncount = %d\nmig_state = %s\n" % (card, count, self.state))

        def env(self):
            return {"NVML_MOCK_CONFIG": str(self.conf), "LD_LIBRARY_PATH": str(built / "root" / LIBDIR),
                    "PATH": "/usr/bin:/bin"}

        def run(self, *args):
            """The harness's lines, each a list of fields."""
            done = subprocess.run([str(built / "harness")] + [str(a) for a in args], env=self.env(),
                                  stdout=subprocess.PIPE, universal_newlines=True, timeout=30, check=True)
            return [line.split() for line in done.stdout.splitlines()]

        def smi(self, *args):
            done = subprocess.run([str(built / "root/usr/bin/nvidia-smi")] + [str(a) for a in args],
                                  env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  universal_newlines=True, timeout=30, check=False)
            return done.returncode, done.stdout

        def enable(self, gpus=4):
            """MIG on (pending), then the reset that makes it current - as mig-parted does."""
            for gpu in range(gpus):
                assert self.run("mode", gpu, 1)[0] == [str(SUCCESS), str(RESET_REQUIRED)]
            rc, out = self.smi("-r", "-i", ",".join(str(gpu) for gpu in range(gpus)))
            assert rc == 0 and out.count("was successfully reset") == gpus, out

        def layout(self, gpu, profiles):
            """Create one GPU instance (+ its full compute instance) per profile ID, in order."""
            args = []
            for pid in profiles:
                args += ["cgi", gpu, pid]
            return self.run(*args)

        def devices(self):
            """[(gpu, index, uuid, gi, ci, MiB, name)] of every MIG device."""
            return [(int(f[1]), int(f[2]), f[3], int(f[4]), int(f[5]), int(f[6]), " ".join(f[10:]).strip('"'))
                    for f in self.run("list")]

    state = Node()
    state.state.parent.mkdir()
    state.configure()
    return state


def test_mig_mode_is_pending_until_a_reset(node):
    assert node.run("getmode", 0) == [["0", "0", "0"]]
    assert node.run("mode", 0, 1, "getmode", 0, "cgi", 0, 19) == [
        [str(SUCCESS), str(RESET_REQUIRED)], ["0", "0", "1"],
        [str(NOT_SUPPORTED), "0", "0", "0", "999"]]        # no instances while MIG is off
    rc, out = node.smi("-i", "0", "-mig", "1")
    assert rc == 0 and "pending enable state for GPU 00000000:07:00.0" in out
    assert node.smi()[1].count("Disabled* |") == 1                 # the table marks the pending change
    rc, out = node.smi("-r", "-i", "00000000:07:00.0")               # as mig-parted runs it
    assert rc == 0 and out.splitlines()[0] == "GPU 00000000:07:00.0 was successfully reset.", out
    assert node.run("getmode", 0, "getmode", 1) == [["0", "1", "1"], ["0", "0", "0"]]
    # disabling is pending too; the reset drops every instance
    node.layout(0, [19])
    assert node.run("mode", 0, 0, "getmode", 0) == [[str(SUCCESS), str(RESET_REQUIRED)], ["0", "1", "0"]]
    assert len(node.devices()) == 1
    node.smi("-r", "-i", "0")
    assert node.run("getmode", 0) == [["0", "0", "0"]] and node.devices() == []


def test_changes_from_processes_at_once_are_all_kept(node):
    """Four processes create at the same time, one GPU each: the state file's lock keeps every
    change (a read-modify-write without it would lose some)."""
    node.enable()
    env = node.env()
    procs = [subprocess.Popen([str(node.harness)] + ["cgi", str(gpu), "19"] * 7, env=env, stdout=subprocess.PIPE,
                              universal_newlines=True) for gpu in range(4)]
    outs = [p.communicate(timeout=30)[0] for p in procs]
    assert [[line.split()[0] for line in o.splitlines()] for o in outs] == [["0"] * 7] * 4, outs
    assert len(node.devices()) == 28
    rc, out = node.smi()
    assert rc == 0 and out.count("Enabled |") == 4, out         # the table's MIG M. column


def test_all_1g_5gb_is_seven_per_gpu_at_the_card_tables_placements(node):
    node.enable()
    for gpu in range(4):
        created = node.layout(gpu, [19] * 8)
        assert [c[0] for c in created] == ["0"] * 7 + [str(INSUFFICIENT_RESOURCES)]
        starts = sorted(int(c[2]) for c in created[:7])
        assert [(s, 1) for s in starts] == list(A100["1g.5gb"]["placements"])
        assert sorted(int(c[1]) for c in created[:7]) == list(range(7, 14))    # GPU instance IDs
        assert int(created[0][2]) == 6                         # the highest free placement first
    devices = node.devices()
    assert len(devices) == 28                                  # nvidia.com/mig-1g.5gb: 28
    assert {d[6] for d in devices} == {"NVIDIA A100-SXM4-40GB MIG 1g.5gb"}
    assert {d[5] for d in devices} == {4864}                    # 4.75 GiB, as -lgip prints it
    assert all(MIG_UUID.match(d[2]) for d in devices) and len({d[2] for d in devices}) == 28


def test_all_balanced_fits_as_the_model_places_it(node):
    node.enable(2)
    balanced = ("3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb")      # the model's order: largest first
    created = node.layout(0, [A100[p]["id"] for p in balanced])
    assert [c[0] for c in created] == ["0"] * 4 and [c[4] for c in created] == ["0"] * 4
    used = []
    for (_ret, _gi, start, size, _ci), name in zip(created, balanced):
        assert (int(start), int(size)) in A100[name]["placements"]
        used += range(int(start), int(start) + int(size))
    assert len(used) == len(set(used))
    assert mig_layout.fits(cards.CARDS["A100-SXM4-40GB"], {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1})
    names = sorted(d[6].split(" MIG ")[1] for d in node.devices())
    assert names == ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]
    # full: one more of anything is refused as NVML refuses it
    assert node.layout(0, [19])[0][0] == str(INSUFFICIENT_RESOURCES)
    # the order matters, as on the driver: small ones first leave the 3g.20gb no placement -
    # why mig-parted tries the orderings of a layout until one fits (pkg/mig/config/config.go)
    smallest_first = node.layout(1, [A100[p]["id"] for p in reversed(balanced)])
    assert [c[0] for c in smallest_first] == ["0", "0", "0", str(INSUFFICIENT_RESOURCES)]


LAYOUTS = [{"7g.40gb": 1}, {"4g.20gb": 1, "3g.20gb": 1}, {"3g.20gb": 2}, {"2g.10gb": 3, "1g.5gb": 1},
           {"1g.10gb": 4}, {"4g.20gb": 2}, {"3g.20gb": 2, "1g.5gb": 1}, {"1g.5gb+me": 2},
           {"7g.40gb": 1, "1g.5gb": 1}, {"2g.10gb": 3, "1g.10gb": 1}, {"1g.5gb+me": 1, "7g.40gb": 1},
           {"4g.20gb": 1, "2g.10gb": 2}, {"3g.20gb": 1, "2g.10gb": 2}]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda l: "+".join("%dx%s" % (n, p) for p, n in l.items()))
def test_a_layout_fits_in_the_mock_exactly_when_the_model_says_so(node, layout):
    node.configure(count=1)
    node.enable(1)
    spec = cards.CARDS["A100-SXM4-40GB"]
    order = sorted((p for p, n in layout.items() for _ in range(n)),
                   key=lambda p: (-A100[p]["placements"][0][1], -A100[p]["slices"], p))
    created = node.layout(0, [A100[p]["id"] for p in order])
    fits = mig_layout.fits(spec, layout)
    assert all(c[0] == "0" for c in created) == fits, (created, fits)
    if not fits:                                                  # refused as NVML refuses it
        assert [c for c in created if c[0] != "0"][0][0] == str(INSUFFICIENT_RESOURCES)


def test_mig_devices_resolve_by_uuid(node):
    node.enable(2)
    node.layout(1, [9, 14])
    devices = node.devices()
    # the highest free placement first: 3g.20gb at 4:4 is GPU instance 2, 2g.10gb at 2:2 is 4
    assert [(d[0], d[3], d[4]) for d in devices] == [(1, 2, 0), (1, 4, 0)]
    for gpu, _index, uuid, gi, ci, _mib, _name in devices:
        assert node.run("uuid", uuid) == [["0", "1", str(gpu), str(gi), str(ci)]]
    assert node.run("uuid", "MIG-00000000-0000-0000-0000-000000000000")[0][0] == str(NOT_FOUND)


def test_the_state_is_seen_by_another_process(node):
    node.enable(1)
    node.layout(0, [14, 14])                                     # one process creates...
    rc, out = node.smi("-L")                                     # ...another lists
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-")
    assert re.match(r"^  MIG 2g\.10gb     Device  0: \(UUID: MIG-[0-9a-f-]{36}\)$", lines[1]), out
    assert re.match(r"^  MIG 2g\.10gb     Device  1: \(UUID: MIG-", lines[2]) and lines[3].startswith("GPU 1:")
    text = node.state.read_text()
    assert re.search(r"^gi GPU-\S+ 5 14 4 2$", text, re.M) and re.search(r"^ci GPU-\S+ 5 0 1 0 2$", text, re.M)
    rc, out = node.smi("mig", "-lgi")
    assert rc == 0 and re.findall(r"^\|   0  MIG 2g\.10gb         14        (\d)          (\d:2)     \|$", out, re.M) \
        == [("4", "2:2"), ("5", "4:2")], out
    # their compute instances, as the MIG user guide prints -lci (what gpu_view.sh reads for the
    # capability files NVIDIA's DRA driver needs): each GPU instance's one full-size instance
    rc, out = node.smi("mig", "-lci")
    assert rc == 0 and re.findall(r"^\|   0 +(\d) +MIG 2g\.10gb +(\d+) +(\d) +(\d:\d) +\|$", out, re.M) \
        == [("4", "1", "0", "0:2"), ("5", "1", "0", "0:2")], out


def test_the_state_file_keeps_one_header_however_often_it_is_written(node):
    """Each change rewrites the file under its lock with the mock's header; the header read back is
    a comment, not another GPU's line to keep - it used to be kept and the file grew by one header
    per write (496 on a day's lab-node-1, its MIG state behind them)."""
    node.enable()
    for gpu in range(4):
        node.layout(gpu, [19] * 7)
    text = node.state.read_text()
    assert text.count("# nvml-mock MIG state") == 1, text[:400]
    assert text.startswith("# nvml-mock MIG state") and len(node.devices()) == 28


def test_destroying_a_held_instance_fails_as_the_driver_does(node):
    node.enable(1)
    node.layout(0, [9])                                           # GPU instance 2 (4:4)
    uuid = node.devices()[0][2]
    held = pathlib.Path(str(node.state) + ".held")
    held.mkdir()
    (held / uuid).write_text("")                                  # a container holds it
    assert node.run("dci", 0, 2, 0) == [[str(IN_USE), "In", "use", "by", "another", "client"]]
    assert node.run("dgi", 0, 2)[0][0] == str(IN_USE)             # its compute instance is active
    rc, out = node.smi("-r", "-i", "0")
    assert rc != 0 and "in use by another client" in out
    assert len(node.devices()) == 1
    (held / uuid).unlink()                                        # the container ended
    assert node.run("dci", 0, 2, 0, "dgi", 0, 2) == [["0", "Success"], ["0", "Success"]]
    assert node.devices() == []


def test_the_a100_listing_is_the_real_one_byte_for_byte(node):
    node.enable(1)
    rc, out = node.smi("mig", "-i", "0", "-lgip")
    assert rc == 0 and out == (LISTINGS / "a100-sxm4-40gb.lgip.txt").read_text()
    # Free/Total follows the instances: after all-balanced nothing is free
    node.layout(0, [9, 14, 19, 19])
    rc, out = node.smi("mig", "-i", "0", "-lgip")
    assert re.search(r"MIG 1g\.5gb        19     0/7 ", out) and re.search(r"MIG 7g\.40gb        0     0/1 ", out)


@pytest.mark.parametrize("card", sorted(cards.CARDS))
def test_the_listings_read_as_the_card_table(node, card):
    node.configure(card=card, count=1)
    node.enable(1)
    rc, lgip = node.smi("mig", "-lgip")
    rc2, lgipp = node.smi("mig", "-lgipp")
    assert rc == 0 and rc2 == 0, lgip + lgipp
    spec = cards.spec_from_listing(lgip, lgipp, cards.CARDS[card], card)
    table = cards.CARDS[card]["profiles"]
    assert set(spec["profiles"]) == set(table)
    for name, profile in table.items():
        got = spec["profiles"][name]
        assert (got["id"], got["max_instances"], got["memory_gib"], got["placements"]) == \
            (profile["id"], profile["max_instances"], profile["memory_gib"], list(profile["placements"])), name
        if profile["engines"] is not None:
            assert got["engines"] == profile["engines"], name
    assert mig_listing.parse_lgipp(lgipp)["gpus"] == {0: {p["id"]: list(p["placements"]) for p in table.values()}}


def test_exports_every_symbol_mig_parteds_go_nvml_references(built):
    """mig-parted v0.12.1 pins an older go-nvml (v0.12.4-1) than the device plugin: under lazy
    binding a symbol it calls and the mock lacks would abort it (go-nvml#82)."""
    import gen_stubs  # pylint: disable=import-outside-toplevel  (nvml_mock/gen_stubs.py)
    mod = (ROOT / "toolchain/mig-parted/go.mod").read_text()
    version = re.search(r"^\s*github\.com/NVIDIA/go-nvml (\S+)", mod, re.M).group(1)
    done = subprocess.run(["go", "mod", "download", "-json", "github.com/NVIDIA/go-nvml@" + version],
                          cwd=str(ROOT / "toolchain/mig-parted"), stdout=subprocess.PIPE,
                          universal_newlines=True, check=True)
    referenced = gen_stubs.referenced(str(pathlib.Path(json.loads(done.stdout)["Dir"]) / "pkg/nvml"))
    nm = subprocess.run(["nm", "-D", "--defined-only", str(built / "root" / LIBDIR / "libnvidia-ml.so.1")],
                        stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    defined = {line.split()[-1] for line in nm.splitlines() if line.strip()}
    assert len(referenced) > 300 and not sorted(set(referenced) - defined)


def test_a_container_sees_the_mig_devices_whose_capability_nodes_it_got(parted_view, mig_parted, tmp_path):
    """The CDI spec's MIG device (roles/gpu_stack/files/gpu_cdi_spec.py, over the mock's NVML) gives
    a container its parent's /dev/nvidia<minor> and two capability nodes; the mock in that
    container (NVML_MOCK_DEVICE_NODES) lists exactly that MIG device - and the capability numbers
    are those of gpu_view.sh's /proc/driver/nvidia-caps/mig-minors, which the plugin reads."""
    import gpu_cdi_spec   # roles/gpu_stack/files (on the path through gpu_stack_testing)
    node = parted_view
    node(mig_parted, "apply", "-f", CONFIG, "-c", "all-balanced")
    out = subprocess.run(["python3", str(gpu_cdi_spec.__file__), "--driver-root", str(node.root)],
                         env=node.env, stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    spec = json.loads(out)
    migs = [d for d in spec["devices"] if d["name"].startswith("MIG-")]
    assert len(migs) == 16 and len([d for d in spec["devices"] if re.match(r"^\d+:\d+$", d["name"])]) == 16
    chosen = migs[5]
    dev = tmp_path / "container-dev"
    for n in chosen["containerEdits"]["deviceNodes"]:
        path = dev / n["path"][len("/dev/"):]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    listing = subprocess.run([str(node.root / "usr/bin/nvidia-smi"), "-L"], stdout=subprocess.PIPE, universal_newlines=True,
                             env=dict(node.env, NVML_MOCK_DEVICE_NODES=str(dev)), check=True).stdout
    assert re.findall(r"\(UUID: (MIG-[^)]+)\)", listing) == [chosen["name"]], listing
    # the same numbers as the mig-minors file the device plugin reads
    node("true")
    minors = dict(line.rsplit(" ", 1) for line in (node.view / "driver/nvidia-caps/mig-minors").read_text().splitlines())
    caps = {int(n["path"].rsplit("nvidia-cap", 1)[1]) for d in migs for n in d["containerEdits"]["deviceNodes"]
            if "nvidia-cap" in n["path"]}
    assert caps <= {int(v) for v in minors.values()}
    for key, value in minors.items():
        m = re.match(r"gpu(\d+)/gi(\d+)(?:/ci(\d+))?/access$", key)
        if m:
            gpu, gi, ci = int(m.group(1)), int(m.group(2)), m.group(3)
            assert gpu_cdi_spec.cap_minor(gpu, gi, None if ci is None else int(ci)) == int(value), key
