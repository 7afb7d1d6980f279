# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MIG cards: their profiles, instances, memory, engines and placements, from a real listing
or the built-in table - where the numbers come from.

- A node's own `nvidia-smi mig -lgip` / `-lgipp` text (options mig_profile_listing,
  mig_placement_listing; read by mig_listing.py) decides when given: profile
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
"""

import re

from ansible.module_utils.lab.refusals import LabError
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
# PCI device IDs (what lspci and NVML's pciDeviceId >> 16 give; mig-parted selects a config's
# entry by them): the pci.ids database (Debian package pci.ids 0.0~2023.04.11-1) where it names
# the card; else the one ID of the card's group in NVIDIA/mig-parted v0.12.1
# deployments/systemd/config-default.yaml `all-balanced` whose comment names the card
PCI_DEVICE_IDS = {
    "A100-SXM4-40GB": (0x20B0, "pci.ids: 20b0 GA100 [A100 SXM4 40GB]; mig-parted "
                       "pkg/mig/config/known_configs.go:27 A100_SXM4_40GB = 0x20B010DE"),
    "A100-SXM4-80GB": (0x20B2, "pci.ids: 20b2 GA100 [A100 SXM4 80GB]"),
    "H100-SXM5-80GB": (0x2330, "pci.ids: 2330 GH100[H100 SXM5 80GB]"),
    "H100-PCIE-80GB": (0x2331, "pci.ids: 2331 GH100 [H100 PCIe]"),
    "H100-NVL-94GB": (0x2321, "config-default.yaml group 'H100 NVL, H800 NVL' [0x2321, 0x233A]; "
                      "pci.ids 2023.04 names 2321 only GH100"),
    "H200-SXM5-141GB": (0x2335, "config-default.yaml group 'H200 141GB, H200 NVL' [0x2335, "
                        "0x233B]; not in pci.ids 2023.04"),
    "GH200-96GB": (0x2342, "config-default.yaml group 'H100-96GB, PG506-96GB, GH200, H20' "
                   "[0x2342, 0x233D, 0x20B6, 0x2329] (pci.ids: 20b6 is PG506); not in pci.ids "
                   "2023.04, so unverified here"),
    "GH200-144GB": (0x2348, "config-default.yaml group 'GH200 144G HBM3e' [0x2348]"),
    "B200-180GB": (0x2901, "config-default.yaml group 'B200' [0x2901]"),
    "A30-24GB": (0x20B7, "pci.ids: 20b7 GA100GL [A30 PCIe]; config-default.yaml group "
                 "'A30-24GB' 0x20B7"),
}
# profile names a driver prints differently for the same profile (B200 1g.23gb/1g.24gb)
PROFILE_ALIASES = {"B200-180GB": {"1g.24gb": "1g.23gb", "1g.24gb+me": "1g.23gb+me"}}


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


def product_name(model):
    """NVML's product name (what `nvidia-smi --query-gpu=name` prints, and the DRA driver's
    productName attribute) of a card the table knows by any of its names - a variant's own
    name for a variant -, or None for a card not in the table."""
    try:
        name, spec, note = resolve_card(model)
    except PlanError:
        return None
    if note:
        wanted = _norm(model)
        return next(alias for alias in VARIANTS if _norm(alias) == wanted)
    return spec["names"][0]


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


def card_for(model, profile_listing=None, placement_listing=None):
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


def card_engines(spec):
    """The engines of one GPU: those its full-GPU profile is given; None if not known."""
    if spec.get("engines_total"):
        return dict(spec["engines_total"])
    full = max(spec["profiles"].values(), key=lambda p: (p["slices"], p["memory_gib"]))
    if full["slices"] != spec["compute_slices"] or full["engines"] is None:
        return None
    return dict(full["engines"])
