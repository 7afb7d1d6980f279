# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG layouts: whether one fits a card, where its instances go, and what the device plugin
advertises for it (mig_plan).

A layout is mig-parted's form: {profile: instances per GPU}. It fits when the instances can
be placed without overlapping memory slices, their compute slices add up to at most the
card's and their engines to at most the card's. What the device plugin v0.20.0 advertises
for it follows internal/rm/rm.go (AddDefaultResourcesToConfig: `mig-<profile>` with
"+" -> ".", under mixed; `gpu` under single) and internal/rm/device_map.go
(assertAllMigDevicesAreValid).
"""

import itertools

from ansible.module_utils.sharing.cards import (
    CARDS, ENGINE_NAMES, ENGINES, PROFILE_ALIASES, PlanError, card_engines, card_for)
from ansible.module_utils.sharing.plugin_config import PLUGIN_VERSION


def check_gpus(gpus):
    """PlanError unless gpus is a count of GPUs (1 or more)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise PlanError("gpus must be the number of GPUs in the node (1 or more), got %r" % (gpus,))


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


def layout_text(layout):
    """A layout as mig-parted writes it: {"1g.10gb": 7}."""
    return "{%s}" % ", ".join('"%s": %d' % (p, n) for p, n in layout.items())


def mig_plan(model, gpus, layout, mig_strategy="mixed", profile_listing=None,
             placement_listing=None):
    """What a node of ``gpus`` cards in MIG mode with ``layout`` advertises; PlanError if the
    layout does not fit or the device plugin refuses it."""
    name, spec, note = card_for(model, profile_listing, placement_listing)
    check_gpus(gpus)
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
                "mode off" % (PLUGIN_VERSION, chain))
        raise PlanError("mig_devices is empty: a MIG-enabled GPU with no MIG devices advertises "
                        "nothing (the device plugin only warns \"device 0 has no MIG devices "
                        "configured\" under mixed); give at least one profile")
    placement, stuck = place(spec, layout)
    if placement is None:
        raise PlanError(
            "the MIG layout %s does not fit on %s: no room for %s (%d compute and %d memory "
            "slices per GPU; %s takes %d compute slices, at most %d per GPU, placed at memory "
            "slices %s). Layouts that fit: %s" % (
                layout_text(layout), name, stuck, spec["compute_slices"], spec["memory_slices"], stuck,
                spec["profiles"][stuck]["slices"], spec["profiles"][stuck]["max_instances"],
                ", ".join(("%d-%d" % (s, s + z - 1)) if z > 1 else str(s)
                          for s, z in spec["profiles"][stuck]["placements"]),
                "; ".join(layout_text(c) for c in _closest(spec, layout))))
    short = engine_shortfall(spec, layout)
    if short is not None:
        engine, have, want, wanting = short
        raise PlanError(
            "the MIG layout %s does not fit on %s: it needs %d %s engines and a GPU has %d "
            "(%s); the instances fit in memory and compute slices, but not in engines. "
            "Layouts that fit: %s" % (
                layout_text(layout), name, want, ENGINE_NAMES[engine], have,
                ", ".join("%s wants %d" % (p, n) for p, n in wanting.items()),
                "; ".join(layout_text(c) for c in _closest(spec, layout))))
    if mig_strategy == "single" and len(layout) > 1:
        raise PlanError(
            "the NVIDIA device plugin %s refuses MIG devices of more than one profile on a node "
            "under mig-strategy single: %smore than one MIG device type present on node "
            "(internal/rm/device_map.go:195); layout %s. Fix: use mig-strategy mixed, or one "
            "profile per node" % (PLUGIN_VERSION, chain, layout_text(layout)))
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
