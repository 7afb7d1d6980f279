#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: judge how containerd will merge a config and its drop-ins."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containerd_merge
short_description: Predict which runtimes containerd loads from a config and its imports
description:
  - Reads a containerd main config and every file its C(imports) pull in, the way
    containerd does (breadth-first, globs sorted by name, a path loaded once), and judges
    the merge for the containerd version given.
  - On containerd 1.x each plugin table a later file mentions replaces the earlier one
    whole. A drop-in that only adds C(runtimes.nvidia) therefore removes C(runc), the
    built-in runtime included, while C(default_runtime_name = "runc") stays - the CRI
    plugin then fails on the next start. On 2.x tables deep-merge and runc survives.
  - Returns the runtimes each side defines, the tables both sides define, the runtimes a
    restart would load (checked against the real containerd 1.6.20 C(config dump) on a
    corpus of config sets), and plain-language findings.
  - With O(observed_runtimes) (what C(containerd config dump) showed on the node) the
    findings say what a difference between observation and prediction implies, e.g. that
    the daemon was not restarted since the drop-in was written.
  - With O(dest) it writes the lab's five-line C(merge.txt).
  - Runs where the files are; it reads and never changes the configs.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_files, lab_attributes]
options:
  path:
    description: The main containerd config, e.g. C(/etc/containerd/config.toml).
    type: path
    required: true
  containerd_version:
    description:
      - Whose merge semantics to model. C(1.6), C(1.7) or any C(1.x.y) give per-plugin
        whole-table replacement; C(2.0) and later give deep merge.
      - The patch release matters for relative globs (resolved against the file's folder
        from 1.6.29 / 1.7.16, against the daemon's working directory before) and for
        C(version = 3) (fatal from 1.6.32 / 1.7.17). Without a patch the newest is assumed.
    type: str
    default: "1.7"
  observed_runtimes:
    description:
      - Runtime names that C(containerd config dump) showed on the node (the observation).
        Compared with the prediction in RV(findings) and written as C(LOADED_RUNTIMES).
    type: list
    elements: str
  observed_dump:
    description:
      - The text of a C(containerd config dump) taken on the node; its runtimes become the
        observation. Mutually exclusive with O(observed_runtimes).
    type: str
  observe:
    description:
      - Run the host's own containerd (the one on its PATH) as C(containerd --config PATH config
        dump), with O(path) as PATH, and take its runtimes as the observation - what that
        containerd's next start loads from the config (a running daemon may hold an older one;
        C(crictl info) shows that). Only reads, also in check mode.
      - Mutually exclusive with O(observed_runtimes) and O(observed_dump); refused with a
        O(root) other than C(/) (the binary reads the imports as the host's own paths).
    type: bool
    default: false
  fail_on_broken_default:
    description:
      - Fail when a restart would leave the default runtime unconfigured (RV(default_runtime_name)
        not among RV(predicted_runtimes)), with RV(findings) as the message. The report of
        O(dest) is written first - it is the observation.
    type: bool
    default: false
  expect_main_runtimes:
    description:
      - Runtime names the main file must define; fail, naming what the parser read, when one is
        missing (e.g. right after writing the files, to read them back).
    type: list
    elements: str
    default: []
  expect_dropin_runtimes:
    description:
      - Runtime names the imported files must define; fail, naming the files that were loaded,
        when one is missing (an C(imports) that does not reach them).
    type: list
    elements: str
    default: []
  dest:
    description:
      - Write the five-line report here (C(MAIN_RUNTIMES), C(DROPIN_RUNTIMES), C(CONFLICT),
        C(CONFLICT_TABLE), C(LOADED_RUNTIMES)). Requires O(observed_runtimes) or
        O(observed_dump).
      - Nothing is written when the configs cannot be judged.
    type: path
  root:
    description:
      - The folder that stands for the node's C(/) - absolute paths in the config, imports
        included, resolve under it (C(/etc/containerd/conf.d/*.toml) becomes
        C(<root>/etc/containerd/conf.d/*.toml)); a path that already lies inside it is taken as
        it is. For the lab folder, or a copy of a node's C(/etc) from a support bundle.
    type: path
    default: /
  working_dir:
    description:
      - The daemon's working directory, against which containerd before 1.6.29 / 1.7.16
        resolves relative import globs. systemd starts containerd in C(/).
    type: path
    default: /
attributes:
  diff_mode:
    details: Shows the change to O(dest).
notes:
  - The project's tests check the model against two real binaries - Debian's containerd
    1.6.20 and containerd 2.2.0 built from its Go module - on 29 config sets. 2.3+ (each file
    migrated as it loads) is modelled from containerd's source.
  - C(containerd config dump) re-reads the files, so it shows what the next start loads, not
    what a running daemon holds (C(crictl info) shows that).
seealso:
  - name: containerd configuration imports
    description: How containerd merges imported files.
    link: https://github.com/containerd/containerd/blob/main/docs/man/containerd-config.toml.5.md
"""

EXAMPLES = r"""
- name: Judge the node's config as containerd 1.7 would load it
  containerd_merge:
    path: /etc/containerd/config.toml
    containerd_version: "1.7"
  register: merge

- name: Stop when a restart would lose the default runtime, judged against the host's own dump
  containerd_merge:
    path: /etc/containerd/config.toml
    containerd_version: "1.6.20"
    observe: true
    fail_on_broken_default: true

- name: Read back files just written - the parser must see the runtimes they declare
  containerd_merge:
    path: /etc/containerd/config.toml
    expect_main_runtimes: [runc]
    expect_dropin_runtimes: [nvidia]

- name: Write the lab's merge.txt with the incident-day observation
  containerd_merge:
    path: /root/gpuop/etc/containerd/config.toml
    observed_runtimes: [runc]
    dest: /root/gpuop/out/merge.txt
"""

RETURN = r"""
msg:
  description: The predicted runtimes, then RV(findings), one per line.
  returned: success
  type: str
  sample: "containerd 1.6 would load: nvidia\\nThe drop-in ... replaces the whole ..."
main_runtimes:
  description: Runtime names the main file defines directly.
  returned: success
  type: list
  elements: str
  sample: [runc]
dropin_runtimes:
  description: Runtime names the imported files define directly.
  returned: success
  type: list
  elements: str
  sample: [nvidia]
dropin_files:
  description: The imported files actually loaded, in containerd's load order.
  returned: success
  type: list
  elements: str
  sample: [/etc/containerd/conf.d/99-nvidia.toml]
conflict:
  description: Whether the main file and the drop-ins define a common table.
  returned: success
  type: bool
  sample: true
conflict_tables:
  description: The deepest tables both sides define, written with quoted dotted keys.
  returned: success
  type: list
  elements: str
  sample: ['plugins."io.containerd.grpc.v1.cri".containerd.runtimes']
predicted_runtimes:
  description:
    - Sorted names of the runtimes C(containerd config dump) of that version lists under
      the CRI plugin's C(containerd.runtimes), the built-in runc included where it
      survives. What a restart would load.
  returned: success
  type: list
  elements: str
  sample: [nvidia]
default_runtime_name:
  description: The default runtime the merged config names.
  returned: success
  type: str
  sample: runc
config_version:
  description: The effective config version (the last non-zero C(version); 0 when none).
  returned: success
  type: int
  sample: 2
cri_plugin:
  description: The plugin key the CRI settings are read from for this version.
  returned: success
  type: str
  sample: io.containerd.grpc.v1.cri
findings:
  description: Plain-language diagnoses of the merge.
  returned: always
  type: list
  elements: str
observed_runtimes:
  description: The observation used (given, or read from O(observed_dump)).
  returned: when observed_runtimes or observed_dump is given
  type: list
  elements: str
report:
  description: The five-line report (when O(dest) or O(observed_runtimes) is given).
  returned: when observed_runtimes is given
  type: str
error:
  description: Where judging failed - file, line, column, the fix, the named mistake.
  returned: failure
  type: dict
backup_file:
  description: The copy of the previous O(dest).
  returned: when backup made
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.containerd.loader import ConfigError  # noqa: E402
from ansible.module_utils.containerd.merge_report import JudgmentFailed, ObservationError, merge_check  # noqa: E402
from ansible.module_utils.lab.files import REPORT_ARGS, LabFileError  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            containerd_version=dict(type="str", default="1.7"),
            observed_runtimes=dict(type="list", elements="str"),
            observed_dump=dict(type="str"),
            observe=dict(type="bool", default=False),
            fail_on_broken_default=dict(type="bool", default=False),
            expect_main_runtimes=dict(type="list", elements="str", default=[]),
            expect_dropin_runtimes=dict(type="list", elements="str", default=[]),
            working_dir=dict(type="path", default="/"),
            root=dict(type="path", default="/"),
            **REPORT_ARGS
        ),
        mutually_exclusive=[("observed_runtimes", "observed_dump")],
        supports_check_mode=True,
    )
    try:
        result = merge_check(module)
    except ConfigError as exc:
        module.fail_json(msg=str(exc), findings=[], error=dict(
            path=exc.path, line=exc.line, column=exc.column, fix=exc.fix,
            mistake=exc.mistake, message=exc.message))
    except (ObservationError, LabFileError) as exc:
        module.fail_json(msg=str(exc))
    except JudgmentFailed as exc:
        module.fail_json(msg=str(exc), **exc.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
