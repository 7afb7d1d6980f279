# -*- coding: utf-8 -*-
# Copyright: gpu-incident-lab contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What containerd makes of the files loader.py read, per version - and the judgment
containerd_merge returns.

* 1.x: every plugin table a later file mentions replaces the earlier one whole; a ``runtimes``
  table replaces containerd's built-in runc. The effective config version is the last non-zero
  ``version``; below 2 the CRI plugin is read from ``plugins.cri`` and every
  ``io.containerd.grpc.v1.cri`` setting is ignored.
* 2.x: tables deep-merge, a later scalar wins, the built-in runc survives; the CRI plugin lives
  at ``io.containerd.cri.v1.runtime`` (config v3); 2.3+ migrates each file before merging.
"""

from __future__ import annotations

import os
import re

from ansible.module_utils.containerd.loader import (
    BUILTIN_RUNTIME, CRI_V1, CRI_V2, CRI_V3_IMAGES, CRI_V3_RUNTIME, ConfigError, find_line,
    format_table_path, get, load_all, parse_version, rejects_version_3, runtimes_in, table_paths,
    version_text)


# ---------------------------------------------------------------- merging
def _deep_merge(into, other):
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        elif isinstance(value, dict):
            into[key] = _deep_merge({}, value)
        else:
            into[key] = value
    return into


def _effective_version(files):
    version = 0
    for entry in files:
        if entry.version:
            version = entry.version
    return version


def _predict_v1(files, version):
    """containerd 1.x: per-plugin whole-table replacement."""
    findings = []
    effective = _effective_version(files)
    if effective > 2 and rejects_version_3(version):
        last = [f for f in files if f.version == effective][-1]
        line = find_line(last.text, r"^\s*version\s*=")[0]
        raise ConfigError("unsupported config version %d: containerd %s reads versions 1 and 2"
                          % (effective, version_text(version)), path=last.path, line=line,
                          fix="write version = 2 (version 3 is containerd 2.x's format)")
    plugins = {}
    owner = {}
    replaced = []
    for entry in files:
        for key, value in (entry.data.get("plugins") or {}).items():
            if key in owner and key in (CRI_V1, CRI_V2):
                replaced.append((key, owner[key], entry.path))
            plugins[key] = value
            owner[key] = entry.path
    if effective >= 2:
        for key in plugins:
            if len(key.split(".")) < 4:
                raise ConfigError("invalid plugin key URI %r expect io.containerd.x.vx" % key,
                                  path=owner[key],
                                  fix='in a version 2 config plugins are named by their full '
                                      'URI, e.g. [plugins."io.containerd.grpc.v1.cri"]; '
                                      'move [plugins.%s] settings there' % key)
    cri_key = CRI_V2 if effective >= 2 else CRI_V1
    if effective < 2:
        sources = [f.path for f in files if f.version == 1] or [files[0].path]
        ignored = [f.path for f in files if get(f.data, "plugins", CRI_V2) is not None]
        if ignored:
            findings.append(
                "the merged config is version %d (%s): containerd 1.x then reads the "
                "CRI plugin from plugins.cri and ignores every plugins.\"%s\" setting in %s; "
                "only the built-in runc is left unless plugins.cri defines runtimes. Put "
                "version = 2 in the main file and no version = 1 in any drop-in."
                % (effective, "no file sets version" if effective == 0 else
                   "set by " + ", ".join(sources), CRI_V2, ", ".join(ignored)))
    cri = plugins.get(cri_key)
    runtimes_table = get(cri, "containerd", "runtimes")
    if isinstance(runtimes_table, dict):
        predicted = sorted(k for k, v in runtimes_table.items() if isinstance(v, dict))
    else:
        predicted = [BUILTIN_RUNTIME]
    default_name = get(cri, "containerd", "default_runtime_name") or BUILTIN_RUNTIME
    for key, before, after in replaced:
        if key != cri_key:
            continue
        lost = sorted(set(runtimes_in({"plugins": {key: _plugin_of(files, before, key)}}))
                      - set(predicted))
        findings.append(
            "on containerd 1.x %s replaces the whole plugins.%s table that %s set: "
            "tables are not merged across files, the later file wins whole%s."
            % (after, format_table_path((key,)), before,
               (" - runtime(s) %s defined there are lost" % ", ".join(lost)) if lost else ""))
    return predicted, default_name, cri_key, effective, findings


def _plugin_of(files, path, key):
    for entry in files:
        if entry.path == path:
            return get(entry.data, "plugins", key)
    return None


def _migrate_to_v2(data):
    """containerd 2.x migration of a version 0/1 file: short plugin names."""
    out = _deep_merge({}, data)
    plugins = out.get("plugins")
    if isinstance(plugins, dict) and CRI_V1 in plugins:
        cri = plugins.pop(CRI_V1)
        plugins[CRI_V2] = _deep_merge(plugins.get(CRI_V2, {}), cri)
    out["version"] = 2
    return out


def _migrate_to_v3(data):
    """containerd 2.x migration v2 -> v3: the CRI plugin splits in two. A v3
    table already present is kept and the v2 section is dropped."""
    out = _deep_merge({}, data)
    plugins = out.get("plugins")
    if isinstance(plugins, dict) and CRI_V2 in plugins:
        cri = plugins.pop(CRI_V2)
        runtime = {k: v for k, v in cri.items() if k in ("containerd", "cni")}
        images = {k: v for k, v in cri.items() if k == "registry"}
        if CRI_V3_RUNTIME not in plugins and runtime:
            plugins[CRI_V3_RUNTIME] = runtime
        if CRI_V3_IMAGES not in plugins and images:
            plugins[CRI_V3_IMAGES] = images
    out["version"] = 3
    return out


def _predict_v2(files, version):
    """containerd 2.x: deep merge; per-version migration.

    2.3+ migrate each file to version 3 as it is loaded (plugin migrations included).
    2.0-2.2 (LoadConfig in cmd/containerd/server/config) start from the default config,
    version 3; a file with no version or version 1 gets its short plugin names renamed and is
    then labelled with the version loaded so far (3 for the main file); a non-zero version
    overrides the merged one; the CRI plugin is migrated once, on the merged config, and only
    when its version ends below 3 - otherwise plugins."io.containerd.grpc.v1.cri" is ignored.
    """
    findings = []
    merged = {}
    effective = _effective_version(files)
    if version[1] >= 3:
        for entry in files:
            data = _migrate_to_v2(entry.data) if entry.version < 2 else entry.data
            if (data.get("version") or 0) < 3:
                data = _migrate_to_v3(data)
            _deep_merge(merged, data)
    else:
        loaded_version = 3  # the default config's
        labelled = []
        for entry in files:
            data = entry.data
            file_version = entry.version
            if file_version < 2:
                data = _migrate_to_v2(data)
                file_version = loaded_version
                data["version"] = file_version
                labelled.append(entry)
            _deep_merge(merged, data)
            loaded_version = file_version or loaded_version
        if loaded_version < 3:
            merged = _migrate_to_v3(merged)
        else:
            v2_files = [f.path for f in files
                        if get(_migrate_to_v2(f.data) if f.version < 2 else f.data,
                               "plugins", CRI_V2) is not None]
            if v2_files:
                why = ("the last file with a version says 3" if any(f.version >= 3 for f in files)
                       else "files without a version (or version 1) are labelled 3, the "
                            "default config's version, when they are loaded")
                findings.append(
                    "containerd %s migrates the CRI plugin once, on the merged config and only "
                    "when its version is below 3; here the merged version is 3 (%s), so the "
                    "plugins.\"%s\" settings in %s are ignored. Put version = 2 in the main "
                    "file, or write every file in version 3 form, or use 2.3+."
                    % (version_text(version), why, CRI_V2, ", ".join(v2_files)))
        effective = loaded_version
    runtimes = get(merged, "plugins", CRI_V3_RUNTIME, "containerd", "runtimes")
    names = {BUILTIN_RUNTIME}
    if isinstance(runtimes, dict):
        names |= {k for k, v in runtimes.items() if isinstance(v, dict)}
    default_name = get(merged, "plugins", CRI_V3_RUNTIME, "containerd",
                       "default_runtime_name") or BUILTIN_RUNTIME
    return sorted(names), default_name, CRI_V3_RUNTIME, effective, findings


# ---------------------------------------------------------------- judgment
def judge(path, containerd_version="1.7", observed_runtimes=None, working_dir="/", root="/"):
    """The whole judgment the containerd_merge module returns."""
    version = parse_version(containerd_version)
    if root and root != "/" and not os.path.isdir(root):
        raise ConfigError("root %s is not a folder; give the folder that stands for the node's / "
                          "(a lab folder, or a copy of the node's /etc unpacked with its path)" % root)
    files, findings = load_all(path, version, working_dir, root)
    main, dropins = files[0], files[1:]
    if version[0] == 1:
        predicted, default_name, cri_key, effective, more = _predict_v1(files, version)
    else:
        predicted, default_name, cri_key, effective, more = _predict_v2(files, version)
    findings.extend(more)

    main_tables = table_paths(main.data)
    dropin_tables = set()
    for entry in dropins:
        dropin_tables |= table_paths(entry.data)
    common = main_tables & dropin_tables
    deepest = sorted(t for t in common
                     if not any(len(o) > len(t) and o[:len(t)] == t for o in common))
    conflict_tables = [format_table_path(t) for t in deepest]

    main_runtimes = runtimes_in(main.data)
    dropin_runtimes = sorted({name for entry in dropins for name in runtimes_in(entry.data)})
    both = sorted(set(main_runtimes) & set(dropin_runtimes))
    if both:
        findings.append("runtime(s) %s are defined in the main file and again in a drop-in; "
                        "the drop-in loaded last decides their settings." % ", ".join(both))

    if default_name not in predicted:
        findings.append(
            "default_runtime_name = %r remains but the loaded runtimes are %s: the CRI "
            "plugin will fail on the next start (\"no corresponding runtime configured in "
            "containerd.runtimes for default_runtime_name\") and the node runs no Pods."
            % (default_name, ", ".join(predicted) or "none"))

    if observed_runtimes is not None:
        observed = sorted(set(observed_runtimes))
        missing = sorted(set(predicted) - set(observed))
        extra = sorted(set(observed) - set(predicted))
        if missing or extra:
            text = ("observed runtimes (%s) differ from what containerd %s would load from "
                    "these files after a restart (%s)."
                    % (", ".join(observed) or "none", version_text(version), ", ".join(predicted) or "none"))
            if missing:
                text += (" Missing from the observation: %s - the daemon that was observed "
                         "has not been restarted since the files changed (containerd has no "
                         "config reload; SIGHUP kills it), or the dump came from other files "
                         "or another glob." % ", ".join(missing))
            if extra:
                text += (" Observed but not predicted: %s - the running daemon still holds "
                         "a config these files no longer produce; the next restart drops it"
                         % ", ".join(extra))
                if default_name in extra:
                    text += (", and with it the default runtime %r: the node will stop "
                             "running Pods" % default_name)
                text += "."
            findings.append(text)

    return {
        "main_runtimes": main_runtimes,
        "dropin_runtimes": dropin_runtimes,
        "dropin_files": [entry.path for entry in dropins],
        "conflict": bool(conflict_tables),
        "conflict_tables": conflict_tables,
        "predicted_runtimes": predicted,
        "default_runtime_name": default_name,
        "config_version": effective,
        "cri_plugin": cri_key,
        "findings": findings,
    }


def merge_report(result, observed_runtimes):
    """The five lines of the lab's merge.txt."""
    return "".join([
        "MAIN_RUNTIMES=%s\n" % ",".join(result["main_runtimes"]),
        "DROPIN_RUNTIMES=%s\n" % ",".join(result["dropin_runtimes"]),
        "CONFLICT=%s\n" % ("yes" if result["conflict"] else "no"),
        "CONFLICT_TABLE=%s\n" % ",".join(result["conflict_tables"]),
        "LOADED_RUNTIMES=%s\n" % ",".join(observed_runtimes),
    ])


def runtimes_in_dump(text):
    """Runtime names under the CRI plugin's containerd.runtimes in a
    `containerd config dump` (1.x double quotes, 2.x single quotes)."""
    names = set()
    pattern = re.compile(
        r"""^\s*\[plugins\.(?:"[^"]*cri[^"]*"|'[^']*cri[^']*'|cri)\.containerd\.runtimes\.("""
        r"""[A-Za-z0-9_-]+|"[^"]+"|'[^']+')\]\s*$""")
    for line in text.splitlines():
        match = pattern.match(line)
        if match:
            names.add(match.group(1).strip("'\""))
    return sorted(names)
