# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG layouts and the side-by-side sharing plan (time-slicing, MPS, MIG) for one card model.

Where the numbers come from
- A node's own `nvidia-smi mig -lgip` / `-lgipp` text (options mig_profile_listing,
  mig_placement_listing; read by module_utils/mig_listing.py) decides when given: profile
  IDs, instances, memory as printed, engines, placements.
- Otherwise the built-in table CARDS: per card, the printed values of a real listing (file,
  driver release and publication in tests/sharing_corpus/mig_listings/sources.yaml and in each
  card's ``source``). A value no listing printed is marked in the profile's ``source`` (the
  MIG user guide for profiles, instances and placements; the name's nominal size for memory
  only where nothing printed it). The same profile prints differently per driver (A100 80GB
  1g.10gb 9.50 vs 9.62, B200 1g.23gb 22.00 vs 20.50): give the node's listing to plan with
  that driver's numbers.
- Placements (start, size in memory slices) per profile ID are the `-lgipp` of the card or,
  for Hopper/Blackwell cards with the same profile IDs and eighths of memory, the H100's
  `-lgipp` (the MIG user guide draws the same placements for them); A100 from the guide and
  the go-nvml v0.13.3-1 mock cards.
- Engines: a GPU has as many decoders (DEC), encoders (ENC), JPEG decoders, optical-flow
  accelerators (OFA) and copy engines (CE) as its full-GPU profile is given; a layout whose
  instances want more of one than that does not fit (A30: one JPEG and one OFA, so 1g.6gb+me
  and 2g.12gb+me cannot coexist).
- MPS: the device plugin v0.20.0 pins each client's memory to NVML's total bytes / replicas
  (cmd/mps-control-daemon/mps/daemon.go perDevicePinnedDeviceMemoryLimits, sent as
  set_default_device_pinned_mem_limit on the control pipe: a default per CUDA client
  process, not per Pod). NVML's total is the MiB nvidia-smi prints (memory_total_mib), else
  the table's ``nvml_total_mib``, else the nominal size (said so in memory_source).

A layout is mig-parted's form: {profile: instances per GPU}. It fits when the instances can
be placed without overlapping memory slices, their compute slices add up to at most the
card's and their engines to at most the card's. What the device plugin v0.20.0 advertises
for it follows internal/rm/rm.go (AddDefaultResourcesToConfig: `mig-<profile>` with
"+" -> ".", under mixed; `gpu` under single) and internal/rm/device_map.go
(assertAllMigDevicesAreValid).
"""

import itertools
import re

from ansible.module_utils.sharing import device_plugin as ts
from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.lab.files import parse_mode, write_text
from ansible.module_utils.sharing.mig_listing import ListingError, parse_lgip, parse_lgipp, slices_of

ENGINES = ("dec", "enc", "jpeg", "ofa", "ce")
ENGINE_NAMES = {"dec": "decoder (DEC)", "enc": "encoder (ENC)", "jpeg": "JPEG decoder",
                "ofa": "optical-flow accelerator (OFA)", "ce": "copy engine (CE)"}

LISTINGS = "tests/sharing_corpus/mig_listings/"
# placements by profile ID (nvidia-smi mig -lgipp)
_H100_LGIPP = {19: (range(7), 1), 20: (range(7), 1), 15: ((0, 2, 4, 6), 2), 14: ((0, 2, 4), 2),
               9: ((0, 4), 4), 5: ((0,), 4), 0: ((0,), 8)}
_A30_LGIPP = {14: (range(4), 1), 21: (range(4), 1), 5: ((0, 2), 2), 6: ((0, 2), 2),
              0: ((0,), 4)}


def _p(profile_id, total, memory_gib, sm, dec, enc, ce, jpeg, ofa, lgipp, source=None,
       slices=None):
    """One profile as `-lgip` prints it: ID, instances total, GiB, SM, DEC, ENC / CE, JPEG, OFA."""
    starts, size = lgipp[profile_id]
    entry = {"id": profile_id, "slices": slices, "memory_gib": memory_gib,
             "max_instances": total, "placements": [(s, size) for s in starts], "sm": sm,
             "engines": None if dec is None else
             {"dec": dec, "enc": enc, "ce": ce, "jpeg": jpeg, "ofa": ofa}}
    if source:
        entry["source"] = source
    return entry


def _card(names, nominal, nvml, nvml_source, cc, memory_slices, source, profiles,
          compute_slices=None):
    for name, profile in profiles.items():
        profile["slices"] = slices_of(name)
    return {"memory_gib": nominal, "nvml_total_mib": nvml, "nvml_total_source": nvml_source,
            "compute_slices": compute_slices or max(p["slices"] for p in profiles.values()),
            "memory_slices": memory_slices, "compute_capability": cc, "names": names,
            "source": source, "profiles": profiles}


_GUIDE = "NVIDIA MIG user guide, Supported MIG Profiles"
_NO_ROW = "no listing row retrieved: "
CARDS = {
    "A100-SXM4-40GB": _card(
        ["NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"], 40, 40960,
        "nvidia-smi on R5xx drivers prints 40960MiB (driver 450.80.02 printed 40537MiB: give "
        "memory_total_mib for such a node)", "8.0", 8,
        LISTINGS + "a100-sxm4-40gb.lgip.txt (driver not printed); placements: " + _GUIDE +
        " and the go-nvml v0.13.3-1 mock A100", {
            "1g.5gb": _p(19, 7, 4.75, 14, 0, 0, 1, 0, 0, _H100_LGIPP),
            "1g.5gb+me": _p(20, 1, 4.75, 14, 1, 0, 1, 1, 1, _H100_LGIPP),
            "1g.10gb": _p(15, 4, 9.75, 14, 1, 0, 1, 0, 0, _H100_LGIPP),
            "2g.10gb": _p(14, 3, 9.75, 28, 1, 0, 2, 0, 0, _H100_LGIPP),
            "3g.20gb": _p(9, 2, 19.62, 42, 2, 0, 3, 0, 0, _H100_LGIPP),
            "4g.20gb": _p(5, 1, 19.62, 56, 2, 0, 4, 0, 0, _H100_LGIPP),
            "7g.40gb": _p(0, 1, 39.38, 98, 5, 0, 7, 1, 1, _H100_LGIPP),
        }),
    "A100-SXM4-80GB": _card(
        ["NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"], 80, 81920,
        "nvidia-smi prints 81920MiB (NVIDIA/mig-parted#31, driver 545.23.08)", "8.0", 8,
        LISTINGS + "a100-sxm4-80gb-hgx.lgip.txt (driver not printed; it predates 1g.20gb); "
        "placements: " + _GUIDE + " and the go-nvml v0.13.3-1 mock A100", {
            "1g.10gb": _p(19, 7, 9.5, 14, 0, 0, 1, 0, 0, _H100_LGIPP),
            "1g.10gb+me": _p(20, 1, 9.5, 14, 1, 0, 1, 1, 1, _H100_LGIPP),
            "1g.20gb": _p(15, 4, 19.5, 14, 1, 0, 1, 0, 0, _H100_LGIPP,
                          source=_NO_ROW + "memory from the go-nvml v0.13.3-1 mock A100 80GB, "
                          "engines as A100 40GB's 1g.10gb (ID 15) prints them"),
            "2g.20gb": _p(14, 3, 19.5, 28, 1, 0, 2, 0, 0, _H100_LGIPP),
            "3g.40gb": _p(9, 2, 39.25, 42, 2, 0, 3, 0, 0, _H100_LGIPP),
            "4g.40gb": _p(5, 1, 39.25, 56, 2, 0, 4, 0, 0, _H100_LGIPP),
            "7g.80gb": _p(0, 1, 78.75, 98, 5, 0, 7, 1, 1, _H100_LGIPP),
        }),
    "H100-SXM5-80GB": _card(
        ["NVIDIA H100 80GB HBM3"], 80, 81559,
        "nvidia-smi prints 81559MiB (Google Cloud A3 docs, driver 525.125.06)", "9.0", 8,
        LISTINGS + "h100-80gb-hbm3.lgip.txt and .lgipp.txt (driver not printed; driver "
        "525.125.06 printed 9.62/19.50/39.25, " + LISTINGS +
        "h100-80gb-525.125.06-gcp.lgip.txt)", {
            "1g.10gb": _p(19, 7, 9.75, 16, 1, 0, 1, 1, 0, _H100_LGIPP),
            "1g.10gb+me": _p(20, 1, 9.75, 16, 1, 0, 1, 1, 1, _H100_LGIPP),
            "1g.20gb": _p(15, 4, 19.62, 26, 1, 0, 1, 1, 0, _H100_LGIPP),
            "2g.20gb": _p(14, 3, 19.62, 32, 2, 0, 2, 2, 0, _H100_LGIPP),
            "3g.40gb": _p(9, 2, 39.5, 60, 3, 0, 3, 3, 0, _H100_LGIPP),
            "4g.40gb": _p(5, 1, 39.5, 64, 4, 0, 4, 4, 0, _H100_LGIPP),
            "7g.80gb": _p(0, 1, 79.25, 132, 7, 0, 8, 7, 1, _H100_LGIPP),
        }),
    "H100-PCIE-80GB": _card(
        ["NVIDIA H100 PCIe"], 80, None, None, "9.0", 8,
        _GUIDE + " (H100-PCIE 80GB: the same profiles, instances and engines as H100-SXM5); no "
        "H100 PCIe listing was found, so memory is each profile name's nominal size - give "
        "mig_profile_listing from the node", {
            name: _p(pid, total, nominal, None, dec, 0, ce, jpeg, ofa, _H100_LGIPP,
                     source=_NO_ROW + "memory is the name's nominal size; engines and "
                     "instances from " + _GUIDE)
            for name, pid, total, nominal, dec, ce, jpeg, ofa in (
                ("1g.10gb", 19, 7, 10, 1, 1, 1, 0), ("1g.10gb+me", 20, 1, 10, 1, 1, 1, 1),
                ("1g.20gb", 15, 4, 20, 1, 1, 1, 0), ("2g.20gb", 14, 3, 20, 2, 2, 2, 0),
                ("3g.40gb", 9, 2, 40, 3, 3, 3, 0), ("4g.40gb", 5, 1, 40, 4, 4, 4, 0),
                ("7g.80gb", 0, 1, 80, 7, 8, 7, 1))}),
    "H100-NVL-94GB": _card(
        ["NVIDIA H100 NVL"], 94, 95830,
        "nvidia-smi prints 95830MiB (the same Azure page as the listing, driver 560.35.03)",
        "9.0", 8, LISTINGS + "h100-nvl-560.35.03.lgip.txt and .lgipp.txt (driver 560.35.03)", {
            "1g.12gb": _p(19, 7, 10.75, 16, 1, 0, 1, 1, 0, _H100_LGIPP),
            "1g.12gb+me": _p(20, 1, 10.75, 16, 1, 0, 1, 1, 1, _H100_LGIPP),
            "1g.24gb": _p(15, 4, 21.62, 26, 1, 0, 1, 1, 0, _H100_LGIPP),
            "2g.24gb": _p(14, 3, 21.62, 32, 2, 0, 2, 2, 0, _H100_LGIPP),
            "3g.47gb": _p(9, 2, 46.38, 60, 3, 0, 3, 3, 0, _H100_LGIPP),
            "4g.47gb": _p(5, 1, 46.38, 64, 4, 0, 4, 4, 0, _H100_LGIPP),
            "7g.94gb": _p(0, 1, 93.12, 132, 7, 0, 8, 7, 1, _H100_LGIPP),
        }),
    "H200-SXM5-141GB": _card(
        ["NVIDIA H200"], 141, 143771,
        "nvidia-smi prints 143771MiB for NVIDIA H200 (public nvidia-smi outputs, e.g. code "
        "index file 6737105653)", "9.0", 8,
        "NVIDIA/mig-parted#120 (" + LISTINGS + "h200-mig-parted-120.*.lgip.txt, driver not "
        "printed); placements: the H100 -lgipp by profile ID", {
            "1g.18gb": _p(19, 7, 16.0, 16, 1, 0, 1, 1, 0, _H100_LGIPP),
            "1g.18gb+me": _p(20, 1, 16.0, 16, 1, 0, 1, 1, 1, _H100_LGIPP),
            "1g.35gb": _p(15, 4, 32.25, 26, 1, 0, 1, 1, 0, _H100_LGIPP),
            "2g.35gb": _p(14, 3, 32.25, 32, 2, 0, 2, 2, 0, _H100_LGIPP),
            "3g.71gb": _p(9, 2, 69.5, 60, 3, 0, 3, 3, 0, _H100_LGIPP),
            "4g.71gb": _p(5, 1, 69.5, 64, 4, 0, 4, 4, 0, _H100_LGIPP),
            "7g.141gb": _p(0, 1, 139.75, 132, 7, 0, 8, 7, 1, _H100_LGIPP),
        }),
    "GH200-96GB": _card(
        ["NVIDIA GH200 480GB"], 96, None, None, "9.0", 8,
        LISTINGS + "gh200-96gb.lgip.txt (driver not printed); placements: the H100 -lgipp by "
        "profile ID", {
            "1g.12gb": _p(19, 7, 11.0, 16, 1, 0, 1, 1, 0, _H100_LGIPP),
            "1g.12gb+me": _p(20, 1, 11.0, 16, 1, 0, 1, 1, 1, _H100_LGIPP),
            "1g.24gb": _p(15, 4, 23.0, 26, 1, 0, 1, 1, 0, _H100_LGIPP),
            "2g.24gb": _p(14, 3, 23.0, 32, 2, 0, 2, 2, 0, _H100_LGIPP),
            "3g.48gb": _p(9, 2, 46.5, 60, 3, 0, 3, 3, 0, _H100_LGIPP),
            "4g.48gb": _p(5, 1, 46.5, 64, 4, 0, 4, 4, 0, _H100_LGIPP),
            "7g.96gb": _p(0, 1, 93.0, 132, 7, 0, 8, 7, 1, _H100_LGIPP),
        }),
    "GH200-144GB": _card(
        ["NVIDIA GH200 144G HBM3e"], 144, None, None, "9.0", 8,
        "NVIDIA/mig-parted#139 (" + LISTINGS + "gh200-144gb-mig-parted-139.lgip.txt): only its "
        "1g and 2g rows were retrievable, so the 3g, 4g and 7g profiles are not in the table - "
        "give mig_profile_listing from the node to plan them; placements: the H100 -lgipp by "
        "profile ID", {
            "1g.18gb": _p(19, 7, 17.5, 16, 1, 0, 1, 1, 0, _H100_LGIPP),
            "1g.18gb+me": _p(20, 1, 17.5, 16, 1, 0, 1, 1, 1, _H100_LGIPP),
            "1g.36gb": _p(15, 4, 35.25, 26, 1, 0, 1, 1, 0, _H100_LGIPP),
            "2g.36gb": _p(14, 3, 35.25, 32, 2, 0, 2, 2, 0, _H100_LGIPP),
        }, compute_slices=7),
    "B200-180GB": _card(
        ["NVIDIA B200"], 180, None, None, "10.0", 8,
        "NVIDIA/mig-parted#166 (" + LISTINGS + "b200-mig-parted-166.lgip.txt; a later listing, "
        "mig-parted#187, prints 1g.23gb 20.50) for the 1g and 2g rows; 3g.90gb, 4g.90gb and "
        "7g.180gb from " + _GUIDE + " (B200: instances 2, 1, 1); placements: the H100 -lgipp by "
        "profile ID (the guide's B200 diagram)", {
            "1g.23gb": _p(19, 7, 22.0, 18, 1, 0, 2, 1, 0, _H100_LGIPP),
            "1g.23gb+me": _p(20, 1, 22.0, 18, 1, 0, 2, 1, 1, _H100_LGIPP),
            "1g.45gb": _p(15, 4, 44.25, 30, 1, 0, 2, 1, 0, _H100_LGIPP),
            "2g.45gb": _p(14, 3, 44.25, 36, 2, 0, 4, 2, 0, _H100_LGIPP),
            "3g.90gb": _p(9, 2, 90, None, None, None, None, None, None, _H100_LGIPP,
                          source=_NO_ROW + "memory is the name's nominal size, engines unknown "
                          "(" + _GUIDE + ")"),
            "4g.90gb": _p(5, 1, 90, None, None, None, None, None, None, _H100_LGIPP,
                          source=_NO_ROW + "memory is the name's nominal size, engines unknown "
                          "(" + _GUIDE + ")"),
            "7g.180gb": _p(0, 1, 180, None, None, None, None, None, None, _H100_LGIPP,
                           source=_NO_ROW + "memory is the name's nominal size, engines unknown "
                           "(" + _GUIDE + ")"),
        }),
    "A30-24GB": _card(
        ["NVIDIA A30"], 24, 24576,
        "nvidia-smi prints 24576MiB (the notes of the listing, driver 535.183.01)", "8.0", 4,
        LISTINGS + "a30-535.183.01.lgip.txt and .lgipp.txt (driver 535.183.01)", {
            "1g.6gb": _p(14, 4, 5.81, 14, 1, 0, 1, 0, 0, _A30_LGIPP),
            "1g.6gb+me": _p(21, 1, 5.81, 14, 1, 0, 1, 1, 1, _A30_LGIPP),
            "2g.12gb": _p(5, 2, 11.69, 28, 2, 0, 2, 0, 0, _A30_LGIPP),
            "2g.12gb+me": _p(6, 1, 11.69, 28, 2, 0, 2, 1, 1, _A30_LGIPP),
            "4g.24gb": _p(0, 1, 23.44, 56, 4, 0, 4, 1, 1, _A30_LGIPP),
        }),
}
# other names of a card in the table: same chip and memory, so the same MIG profiles per the
# MIG user guide (its A100 table covers the SXM4 and PCIe products); the listing is the SXM4's
VARIANTS = {
    "NVIDIA A100-PCIE-40GB": ("A100-SXM4-40GB", "A100-PCIE-40GB: the MIG user guide gives the "
                              "same profiles as A100-SXM4-40GB; numbers from the SXM4 listing"),
    "NVIDIA A100 80GB PCIe": ("A100-SXM4-80GB", "A100 80GB PCIe: the MIG user guide gives the "
                              "same profiles as A100-SXM4-80GB; numbers from the SXM4 listing"),
}
# profile names a driver prints differently for the same profile (B200 1g.23gb/1g.24gb)
PROFILE_ALIASES = {"B200-180GB": {"1g.24gb": "1g.23gb", "1g.24gb+me": "1g.23gb+me"}}

MPS_SCOPE = ("a default per CUDA client process: the MPS control daemon gets "
             "set_default_device_pinned_mem_limit for the GPU, so each process that connects "
             "is limited to it - not each Pod (a Pod with two CUDA processes may use twice)")


class PlanError(LabError):
    """A plan that cannot be made: an unknown card, a layout that does not fit, a bad count."""


def _norm(name):
    text = name.strip().lower()
    text = re.sub(r"[\s_]+", "-", text)
    text = re.sub(r"-+", "-", text)
    text = re.sub(r"-mig-\d+g\..*$", "", text)       # GFD under mig-strategy single
    text = re.sub(r"-shared$", "", text)              # GFD with sharing (renamed resource)
    if text.startswith("nvidia-"):
        text = text[len("nvidia-"):]
    return text


def _known():
    names = []
    for name, spec in CARDS.items():
        names.append("%s (%s)" % (name, ", ".join('"%s"' % n for n in spec["names"])))
    names.extend('"%s" -> %s' % (alias, target) for alias, (target, _why) in VARIANTS.items())
    return "; ".join(names)


def resolve_card(model):
    """(table name, spec, note): the card for the table's name, nvidia-smi's product name
    ("NVIDIA H100 80GB HBM3") or GFD's nvidia.com/gpu.product value ("NVIDIA-H100-80GB-HBM3",
    with GFD's -SHARED / -MIG-<profile> suffixes), any case."""
    if not isinstance(model, str) or not model.strip():
        raise PlanError("gpu_model is required; known cards: %s" % _known())
    wanted = _norm(model)
    for name, spec in CARDS.items():
        if wanted in [_norm(name)] + [_norm(n) for n in spec["names"]]:
            return name, spec, None
    for alias, (target, why) in VARIANTS.items():
        if wanted == _norm(alias):
            return target, CARDS[target], why
    raise PlanError("unknown gpu_model %r; known cards: %s. The name may be the table's, "
                    "nvidia-smi's product name (nvidia-smi --query-gpu=name --format=csv) or "
                    "the node label nvidia.com/gpu.product; for a card not in the table give "
                    "mig_profile_listing and mig_placement_listing from the node"
                    % (model, _known()))


def card(model):
    """The card entry for a model name (any form resolve_card takes)."""
    name, spec, _note = resolve_card(model)
    return name, spec


def spec_from_listing(profile_listing, placement_listing=None, base=None, name="the listing"):
    """A card spec from `nvidia-smi mig -lgip` text (and `-lgipp`, else the table card
    ``base``'s placements by profile ID). PlanError naming the line if unreadable."""
    try:
        lgip = parse_lgip(profile_listing, source="mig_profile_listing")
        lgipp = parse_lgipp(placement_listing, source="mig_placement_listing") \
            if placement_listing is not None else None
    except ListingError as exc:
        raise PlanError(exc.message)
    gpus = lgip["gpus"]
    # one card model: a profile printed on several GPUs must print the same there (a listing
    # cut short after its first GPU, or rows of some GPUs only, is read as the union)
    printed = {}
    for gpu in sorted(gpus):
        for pname, profile in gpus[gpu].items():
            seen = printed.get(pname)
            if seen is None:
                printed[pname] = profile
            elif (seen["id"], seen["total"], seen["memory_text"]) != \
                    (profile["id"], profile["total"], profile["memory_text"]):
                raise PlanError(
                    "mig_profile_listing shows profile %s differently at line %d (ID %d, %d "
                    "instances, %s GiB) and line %d (ID %d, %d instances, %s GiB); a plan is "
                    "for one card model - give the listing of one GPU (nvidia-smi mig -lgip -i "
                    "N)" % (pname, seen["line"], seen["id"], seen["total"], seen["memory_text"],
                            profile["line"], profile["id"], profile["total"],
                            profile["memory_text"]))
    if lgipp is not None:
        placements = {}
        for gpu in sorted(lgipp["gpus"]):
            for pid, where in lgipp["gpus"][gpu].items():
                placements.setdefault(pid, where)
    else:
        if base is None:
            raise PlanError("mig_placement_listing is required with mig_profile_listing for "
                            "a card not in the table (%s): give `nvidia-smi mig -lgipp` from "
                            "the node" % name)
        placements = {}
        for pname, profile in printed.items():
            known = next((p for p in base["profiles"].values() if p["id"] == profile["id"]),
                         None)
            if known is None:
                raise PlanError("mig_profile_listing line %d: profile %s (ID %d) is not in the "
                                "table's card, so its placements are unknown: give "
                                "mig_placement_listing (`nvidia-smi mig -lgipp`) too"
                                % (profile["line"], pname, profile["id"]))
            placements[profile["id"]] = known["placements"]
    profiles = {}
    for pname, profile in printed.items():
        where = placements.get(profile["id"])
        if not where:
            raise PlanError("mig_placement_listing has no placement for profile ID %d (%s, "
                            "mig_profile_listing line %d); give both listings from the same "
                            "node" % (profile["id"], pname, profile["line"]))
        profiles[pname] = {
            "id": profile["id"], "slices": profile["slices"], "memory_gib": profile["memory_gib"],
            "max_instances": profile["total"], "placements": [tuple(p) for p in where],
            "sm": profile["sm"], "free": profile["free"],
            "engines": {e: profile[e] for e in ENGINES},
            "source": "mig_profile_listing line %d" % profile["line"]}
    memory_slices = max(s + z for p in profiles.values() for s, z in p["placements"])
    compute_slices = max(p["slices"] for p in profiles.values())
    engines_total = None
    if base is not None and compute_slices < base["compute_slices"]:
        # a listing cut short before the full-GPU profile (".......")
        compute_slices = base["compute_slices"]
        memory_slices = max(memory_slices, base["memory_slices"])
        engines_total = card_engines(base)
    spec = {"memory_gib": base["memory_gib"] if base else None,
            "nvml_total_mib": base["nvml_total_mib"] if base else None,
            "nvml_total_source": base["nvml_total_source"] if base else None,
            "compute_slices": compute_slices, "engines_total": engines_total,
            "memory_slices": memory_slices,
            "compute_capability": base["compute_capability"] if base else "8.0",
            "names": base["names"] if base else [],
            "source": "mig_profile_listing (nvidia-smi mig -lgip as given%s)" % (
                ", placements from mig_placement_listing" if lgipp is not None else
                ", placements from the table by profile ID"),
            "profiles": profiles, "listing_gpus": sorted(gpus),
            "listing_remarks": lgip["remarks"] + (lgipp["remarks"] if lgipp else [])}
    return spec


def card_engines(spec):
    """The engines of one GPU: those its full-GPU profile is given; None if not known."""
    if spec.get("engines_total"):
        return dict(spec["engines_total"])
    full = max(spec["profiles"].values(), key=lambda p: (p["slices"], p["memory_gib"]))
    if full["slices"] != spec["compute_slices"] or full["engines"] is None:
        return None
    return dict(full["engines"])


def engine_shortfall(spec, layout):
    """(engine, card has, layout wants, {profile: wants}) for the first engine the layout
    runs out of, or None (also None when the table does not know the card's engines)."""
    have = card_engines(spec)
    if have is None:
        return None
    for engine in ENGINES:
        wants = {}
        for profile, count in layout.items():
            engines = spec["profiles"][profile]["engines"]
            if engines is None:
                return None
            if engines[engine]:
                wants[profile] = engines[engine] * count
        if sum(wants.values()) > have[engine]:
            return engine, have[engine], sum(wants.values()), wants
    return None


def _resolve_profiles(name, spec, layout):
    aliases = PROFILE_ALIASES.get(name, {}) if spec is CARDS.get(name) else {}
    renamed = {}
    for profile in list(layout):
        if profile not in spec["profiles"] and aliases.get(profile) in spec["profiles"]:
            renamed[profile] = aliases[profile]
    return renamed


def _validate_layout(name, spec, layout):
    if not isinstance(layout, dict):
        raise PlanError("mig_devices must be a mapping of profile -> instances per GPU "
                        "(mig-parted's form, e.g. {\"1g.5gb\": 7}), got %r" % (layout,))
    renamed = _resolve_profiles(name, spec, layout)
    clean = {}
    for profile, count in layout.items():
        profile = renamed.get(profile, profile)
        if profile not in spec["profiles"]:
            raise PlanError("%s has no MIG profile %r; its profiles: %s"
                            % (name, profile, ", ".join(spec["profiles"])))
        if isinstance(count, str) and count.strip().isdigit():
            count = int(count)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise PlanError("mig_devices[%s] must be a whole number of instances per GPU (0 or "
                            "more), got %r" % (profile, count))
        if count:
            clean[profile] = clean.get(profile, 0) + count
    return clean, renamed


def place(spec, layout):
    """A placement {profile: [starts]} for the layout, or (None, profile-without-room)."""
    profiles = spec["profiles"]
    for profile, count in layout.items():
        if count > profiles[profile]["max_instances"]:
            return None, profile
    instances = sorted((p for p, n in layout.items() for dummy in range(n)),
                       key=lambda p: (-profiles[p]["placements"][0][1], -profiles[p]["slices"], p))
    used_compute = sum(profiles[p]["slices"] for p in instances)
    if used_compute > spec["compute_slices"]:
        return None, instances[-1]
    taken = [False] * spec["memory_slices"]
    chosen = []
    deepest = [0]

    def search(i):
        deepest[0] = max(deepest[0], i)
        if i == len(instances):
            return True
        for start, size in profiles[instances[i]]["placements"]:
            if any(taken[start:start + size]):
                continue
            for k in range(start, start + size):
                taken[k] = True
            chosen.append((instances[i], start))
            if search(i + 1):
                return True
            chosen.pop()
            for k in range(start, start + size):
                taken[k] = False
        return False

    if search(0):
        result = {}
        for profile, start in chosen:
            result.setdefault(profile, []).append(start)
        return result, None
    return None, instances[min(deepest[0], len(instances) - 1)]


def fits(spec, layout):
    """Whether the layout fits: placed, and engines suffice."""
    return place(spec, layout)[0] is not None and engine_shortfall(spec, layout) is None


def fitting_layouts(spec):
    """Every maximal layout of the card (nothing more fits), most instances first."""
    names = list(spec["profiles"])
    ranges = [range(spec["profiles"][n]["max_instances"] + 1) for n in names]
    fit = []
    for counts in itertools.product(*ranges):
        layout = {n: c for n, c in zip(names, counts) if c}
        if layout and fits(spec, layout):
            fit.append(layout)
    maximal = []
    for layout in fit:
        grown = False
        for n in names:
            bigger = dict(layout)
            bigger[n] = bigger.get(n, 0) + 1
            if bigger[n] <= spec["profiles"][n]["max_instances"] and fits(spec, bigger):
                grown = True
                break
        if not grown:
            maximal.append(layout)
    return maximal


def _closest(spec, layout, limit=5):
    def score(candidate):
        common = sum(min(candidate.get(p, 0), n) for p, n in layout.items())
        return (-common, -sum(candidate.values()))
    return sorted(fitting_layouts(spec), key=lambda c: (score(c), sorted(c.items())))[:limit]


def _fmt(layout):
    return "{%s}" % ", ".join('"%s": %d' % (p, n) for p, n in layout.items())


def _card_for(model, profile_listing=None, placement_listing=None):
    """(name, spec, note) from the table, or from the node's listings when given."""
    try:
        name, base, note = resolve_card(model)
    except PlanError:
        if profile_listing is None or placement_listing is None:
            raise
        name, base, note = model.strip(), None, "not in the table: planned from its listings"
    if profile_listing is None:
        if placement_listing is not None:
            raise PlanError("mig_placement_listing needs mig_profile_listing (`nvidia-smi mig "
                            "-lgip` from the same node)")
        return name, base, note
    return name, spec_from_listing(profile_listing, placement_listing, base, name), note


def mig_plan(model, gpus, layout, mig_strategy="mixed", profile_listing=None,
             placement_listing=None):
    """What a node of ``gpus`` cards in MIG mode with ``layout`` advertises; PlanError if the
    layout does not fit or the device plugin refuses it."""
    name, spec, note = _card_for(model, profile_listing, placement_listing)
    _check_gpus(gpus)
    if mig_strategy not in ("single", "mixed"):
        raise PlanError("mig_strategy must be single or mixed, got %r" % (mig_strategy,))
    layout, renamed = _validate_layout(name, spec, layout)
    chain = ("error starting plugins: error getting plugins: error building device map: error "
             "building device map from config.resources: invalid MIG configuration: ")
    if not layout:
        if mig_strategy == "single":
            raise PlanError(
                "the NVIDIA device plugin %s refuses a MIG-enabled GPU with no MIG devices under "
                "mig-strategy single: %sat least one device with migEnabled=true was not "
                "configured correctly: device 0 has no MIG devices configured (internal/rm/"
                "device_map.go:171). Fix: give mig_devices at least one profile, or turn MIG "
                "mode off" % (ts.PLUGIN_VERSION, chain))
        raise PlanError("mig_devices is empty: a MIG-enabled GPU with no MIG devices advertises "
                        "nothing (the device plugin only warns \"device 0 has no MIG devices "
                        "configured\" under mixed); give at least one profile")
    placement, stuck = place(spec, layout)
    if placement is None:
        raise PlanError(
            "the MIG layout %s does not fit on %s: no room for %s (%d compute and %d memory "
            "slices per GPU; %s takes %d compute slices, at most %d per GPU, placed at memory "
            "slices %s). Layouts that fit: %s" % (
                _fmt(layout), name, stuck, spec["compute_slices"], spec["memory_slices"], stuck,
                spec["profiles"][stuck]["slices"], spec["profiles"][stuck]["max_instances"],
                ", ".join(("%d-%d" % (s, s + z - 1)) if z > 1 else str(s)
                          for s, z in spec["profiles"][stuck]["placements"]),
                "; ".join(_fmt(c) for c in _closest(spec, layout))))
    short = engine_shortfall(spec, layout)
    if short is not None:
        engine, have, want, wanting = short
        raise PlanError(
            "the MIG layout %s does not fit on %s: it needs %d %s engines and a GPU has %d "
            "(%s); the instances fit in memory and compute slices, but not in engines. "
            "Layouts that fit: %s" % (
                _fmt(layout), name, want, ENGINE_NAMES[engine], have,
                ", ".join("%s wants %d" % (p, n) for p, n in wanting.items()),
                "; ".join(_fmt(c) for c in _closest(spec, layout))))
    if mig_strategy == "single" and len(layout) > 1:
        raise PlanError(
            "the NVIDIA device plugin %s refuses MIG devices of more than one profile on a node "
            "under mig-strategy single: %smore than one MIG device type present on node "
            "(internal/rm/device_map.go:195); layout %s. Fix: use mig-strategy mixed, or one "
            "profile per node" % (ts.PLUGIN_VERSION, chain, _fmt(layout)))
    advertised, memory, sources = {}, {}, {}
    for profile, count in layout.items():
        resource = "nvidia.com/gpu" if mig_strategy == "single" else \
            "nvidia.com/mig-" + profile.replace("+", ".")
        advertised[resource] = advertised.get(resource, 0) + count * gpus
        memory[resource] = spec["profiles"][profile]["memory_gib"]
        sources[resource] = spec["profiles"][profile].get("source", "listing")
    plan = {
        "strategy": "mig",
        "gpu_model": name,
        "mig_strategy": mig_strategy,
        "mig_devices": layout,
        "placement": placement,
        "advertised_resources": advertised,
        "slots": sum(advertised.values()),
        "guaranteed_memory_gib_per_slot": min(memory.values()),
        "guaranteed_memory_gib_by_resource": memory,
        "memory_source": spec["source"],
        "memory_source_by_resource": sources,
        "engines_per_gpu": card_engines(spec),
        "engines_used_per_gpu": None if card_engines(spec) is None else {
            e: sum(spec["profiles"][p]["engines"][e] * n for p, n in layout.items())
            for e in ENGINES},
        "isolation": "hardware",
    }
    if card_engines(spec) is None:
        plan["engines_note"] = ("engines not checked: the table does not know every profile's "
                                "engines for %s; give mig_profile_listing" % name)
    if renamed:
        plan["profile_names"] = renamed
    if note:
        plan["card_note"] = note
    if "listing_gpus" in spec:
        plan["listing_gpus"] = spec["listing_gpus"]
        if len(spec["listing_gpus"]) not in (1, gpus):
            plan["listing_note"] = ("the listing shows %d GPUs, the plan is for gpus=%d"
                                    % (len(spec["listing_gpus"]), gpus))
        busy = {p: spec["profiles"][p]["max_instances"] - spec["profiles"][p]["free"]
                for p in spec["profiles"] if spec["profiles"][p]["free"] <
                spec["profiles"][p]["max_instances"]}
        if busy:
            plan["listing_note"] = ("the listing shows instances already in use (Free below "
                                    "Total for %s); the plan uses Total, as after the GPU is "
                                    "repartitioned" % ", ".join(sorted(busy)))
    return plan


def _check_gpus(gpus):
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise PlanError("gpus must be the number of GPUs in the node (1 or more), got %r" % (gpus,))


ALL_MEMORY = {
    "time-slicing": "nothing stops it: the slots share the whole card's memory, so the other "
                    "Pods on that GPU fail with out-of-memory (shared fate)",
    "mps": "its allocations stop at the per-process limit; the others keep their memory, but "
           "all clients share one MPS server per GPU, so a fatal fault in one can take the "
           "others down",
    "mig": "it runs out of memory inside its own instance; the other instances are untouched "
           "(separate memory, cache and compute)",
}
_CONFIG_MANAGER = (
    "config-manager (the sidecar of the device plugin%s) watches only the node label "
    "nvidia.com/device-plugin.config and acts when its value changes (re-points the config "
    "and SIGHUPs the plugin); it does not watch the ConfigMap, so an edit in place takes "
    "effect only on `kubectl rollout restart` of the device plugin DaemonSet%s, or on "
    "labelling the node with a new config name")
_TS_COST = (_CONFIG_MANAGER % ("", "") +
            ". No drain: running Pods keep their GPU; the new count is advertised after the "
            "restart")
_MPS_COST = (_CONFIG_MANAGER % (" and of the MPS control daemon",
                                " (and the MPS control daemon's)") +
             ". The new per-process limit applies to CUDA processes started after the MPS "
             "daemon restarts: restart the Pods that use the GPU")
CHANGE_COST = {
    "time-slicing": _TS_COST,
    "mps": _MPS_COST,
    "mig": "drain the GPU: a GPU is repartitioned only with no process on it (mig-parted; the "
           "GPU Operator's MIG manager acts on the node label nvidia.com/mig.config and stops "
           "the GPU clients first), then the device plugin re-advertises",
}
CHANGE_COST_SOURCE = {
    "time-slicing": "NVIDIA k8s-device-plugin v0.20.0 cmd/config-manager (label watch, SIGHUP; "
                    "v0.12.0 release notes: \"config-manager binary to run as sidecar and "
                    "update the plugin's configuration via a node label\"); GPU Operator docs, "
                    "GPU time-slicing (the ConfigMap is not watched)",
    "mps": "NVIDIA k8s-device-plugin v0.20.0 cmd/config-manager and cmd/mps-control-daemon; "
           "GPU Operator docs, GPU time-slicing / MPS",
    "mig": "NVIDIA mig-parted; GPU Operator docs, MIG manager (nvidia.com/mig.config)",
}


def _memory_total(name, spec, memory_total_mib):
    if memory_total_mib is not None:
        return memory_total_mib, ("memory_total_mib option: %d MiB (NVML memory.total as "
                                  "nvidia-smi prints it)" % memory_total_mib)
    if spec.get("nvml_total_mib"):
        return spec["nvml_total_mib"], ("table: NVML total %d MiB for %s - %s" % (
            spec["nvml_total_mib"], name, spec["nvml_total_source"]))
    return None, ("nominal %s GiB of %s: the table has no NVML total for this card, so the "
                  "limit is computed from the marketing size and may be too high; give "
                  "memory_total_mib (nvidia-smi --query-gpu=memory.total --format=csv)"
                  % (spec["memory_gib"], name))


def sharing_plan(model, gpus, timeslicing_replicas=None, mps_replicas=None, mig_devices=None,
                 mig_strategy="mixed", mig_profile_listing=None, mig_placement_listing=None,
                 memory_total_mib=None):
    """One plan per strategy asked, from the device plugin model; and the Markdown table."""
    name, spec, note = _card_for(model, mig_profile_listing, mig_placement_listing)
    _check_gpus(gpus)
    if timeslicing_replicas is None and mps_replicas is None and mig_devices is None:
        raise PlanError("ask for at least one plan: timeslicing_replicas, mps_replicas or "
                        "mig_devices")
    if memory_total_mib is not None and (isinstance(memory_total_mib, bool) or
                                         not isinstance(memory_total_mib, int) or
                                         memory_total_mib < 1):
        raise PlanError("memory_total_mib must be a whole number of MiB above 0 (NVML's "
                        "memory.total as nvidia-smi prints it, e.g. 81559), got %r"
                        % (memory_total_mib,))
    plans = []
    total_mib, total_source = _memory_total(name, spec, memory_total_mib)
    vram = spec["memory_gib"] if spec["memory_gib"] is not None else \
        (total_mib / 1024.0 if total_mib else None)
    if vram is None and (timeslicing_replicas is not None or mps_replicas is not None):
        raise PlanError("%s is not in the table: give memory_total_mib for a time-slicing or "
                        "MPS plan" % name)
    for strategy, replicas in (("time-slicing", timeslicing_replicas), ("mps", mps_replicas)):
        if replicas is None:
            continue
        key = "timeSlicing" if strategy == "time-slicing" else "mps"
        config = "version: v1\nsharing:\n  %s:\n    resources:\n      - name: nvidia.com/gpu\n" \
                 "        replicas: %s\n" % (key, replicas)
        try:
            view = ts.plugin_view(config, gpus, vram,
                                  compute_capability=spec["compute_capability"],
                                  memory_total_mib=total_mib)
        except ts.SlotsError as exc:
            raise PlanError("%s_replicas=%s: %s" % (key == "mps" and "mps" or "timeslicing",
                                                    replicas, exc.message))
        plan = {
            "strategy": strategy,
            "gpu_model": name,
            "replicas": view["replicas"],
            "advertised_resources": view["advertised_resources"],
            "slots": view["advertised"],
            "guaranteed_memory_gib_per_slot": view["vram_guaranteed_per_slot_gib"],
            "mps_memory_limit_mib": view["mps_memory_limit_mib"],
            "isolation": view["isolation"],
            "fail_requests_greater_than_one": view["fail_requests_greater_than_one"],
        }
        if strategy == "mps":
            plan["memory_source"] = total_source
            plan["mps_memory_limit_scope"] = MPS_SCOPE
            plan["memory_total_mib"] = total_mib if total_mib else int(vram * 1024)
        else:
            plan["memory_source"] = ("time-slicing sets no memory limit (device plugin %s): "
                                     "nothing is guaranteed; the slots share the card's "
                                     "memory" % ts.PLUGIN_VERSION)
        plans.append(plan)
    if mig_devices is not None:
        plans.append(mig_plan(name if spec is CARDS.get(name) else model, gpus, mig_devices,
                              mig_strategy, mig_profile_listing, mig_placement_listing))
    for plan in plans:
        plan["when_one_pod_takes_all_memory"] = ALL_MEMORY[plan["strategy"]]
        plan["change_cost"] = CHANGE_COST[plan["strategy"]]
        plan["change_cost_source"] = CHANGE_COST_SOURCE[plan["strategy"]]
        if note and "card_note" not in plan:
            plan["card_note"] = note
    return plans, table(name, gpus, plans, spec)


def table(name, gpus, plans, spec=None):
    spec = spec or CARDS[name]
    size = "%s GiB" % spec["memory_gib"] if spec["memory_gib"] is not None else "size not known"
    if spec.get("nvml_total_mib"):
        size += ", NVML total %d MiB" % spec["nvml_total_mib"]
    lines = [
        "GPU sharing plan: %d x %s (%s each)" % (gpus, name, size),
        "",
        "| strategy | advertised | slots | guaranteed memory per slot | isolation "
        "| one Pod takes all memory | changing the plan |",
        "|---|---|---|---|---|---|---|",
    ]
    for plan in plans:
        what = plan["strategy"]
        if what == "mig":
            what = "MIG %s (%s)" % (_fmt(plan["mig_devices"]), plan["mig_strategy"])
            memory = ", ".join("%s GiB (%s)" % (v, k.split("/", 1)[1])
                               for k, v in plan["guaranteed_memory_gib_by_resource"].items())
        else:
            what = "%s x%d" % (what, plan["replicas"])
            memory = "%s GiB" % plan["guaranteed_memory_gib_per_slot"]
            if plan["strategy"] == "mps":
                memory += " (%d MiB limit per client process)" % plan["mps_memory_limit_mib"]
        advertised = ", ".join("%s: %d" % kv for kv in plan["advertised_resources"].items())
        lines.append("| %s | %s | %d | %s | %s | %s | %s |" % (
            what, advertised, plan["slots"], memory, plan["isolation"],
            plan["when_one_pod_takes_all_memory"], plan["change_cost"]))
    lines.append("")
    for plan in plans:
        lines.append("- %s memory: %s" % (plan["strategy"], plan["memory_source"]))
    return "\n".join(lines) + "\n"


def plan_report(module):
    """gpu_sharing_plan: the plans of module.params and their Markdown table, written to dest
    (a backup kept when it changes). The module's result. Raises PlanError or LabFileError -
    nothing is written before either."""
    p = module.params
    if p["dest"]:
        parse_mode(p["mode"])
    plans, markdown = sharing_plan(p["gpu_model"], p["gpus"], p["timeslicing_replicas"],
                                   p["mps_replicas"], p["mig_devices"], p["mig_strategy"],
                                   mig_profile_listing=p["mig_profile_listing"],
                                   mig_placement_listing=p["mig_placement_listing"],
                                   memory_total_mib=p["memory_total_mib"])
    result = dict(changed=False, gpu_model=plans[0]["gpu_model"], plans=plans, table=markdown)
    if p["dest"]:
        result.update(write_text(module, p["dest"], markdown, mode=p["mode"], backup=True,
                                 raise_errors=True))
    return result
