#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: write several small text files in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: text_files
short_description: Write several small text files, and their folders, in one task
description:
  - Writes each file of O(files) with its content and mode, creating missing parent folders
    (and empty folders listed in O(dirs)). Reports C(changed) only for what differs.
  - Why not M(ansible.builtin.template) in a loop - each file costs two module runs there
    (a C(stat), then C(copy) or C(file)), about a second on a small machine even when nothing
    changes. Here the lab's manifests and scripts of one step converge in one run. Render the
    content with C(lookup('ansible.builtin.template', ...)) or C(lookup('ansible.builtin.file', ...)).
  - A file with O(files[].force=false) is a recorded observation or a trainee's answer - it is
    never rewritten once it exists, whatever it holds. With O(files[].backup) a changed file's
    old content is kept beside it (C(file.<timestamp>~)) and its path returned.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_attributes]
options:
  files:
    description: The files to write.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Where to write.
        type: path
        required: true
      content:
        description: The whole text of the file.
        type: str
        required: true
      mode:
        description: File mode, as an octal string.
        type: str
        default: "0644"
      backup:
        description: Keep the old content beside the file when it changes.
        type: bool
        default: false
      force:
        description: Replace an existing file whose content differs. C(false) keeps it as it is.
        type: bool
        default: true
  dirs:
    description: Folders to create (with parents) even when no file goes in them.
    type: list
    elements: path
    default: []
  dir_mode:
    description: Mode of the folders this module creates; existing folders are left alone.
    type: str
    default: "0755"
attributes:
  diff_mode:
    details: One before/after diff per changed file.
"""

EXAMPLES = r"""
- name: Write a step's manifests in one go
  text_files:
    files:
      - path: "{{ lab_root }}/k8s/runtimeclass.yaml"
        content: "{{ lookup('ansible.builtin.template', 'runtimeclass.yaml.j2') }}"
        backup: true
      - path: "{{ lab_root }}/k8s/gpu-pod.yaml"
        content: "{{ lookup('ansible.builtin.template', 'gpu-pod.yaml.j2') }}"
        backup: true

- name: Install a script, and record an observation only once
  text_files:
    dirs: ["{{ lab_root }}/out"]
    files:
      - path: /usr/local/bin/check-runtime.sh
        content: "{{ lookup('ansible.builtin.file', 'check-runtime.sh') }}"
        mode: "0755"
      - path: "{{ lab_root }}/out/first-seen.txt"
        content: "{{ observation }}\n"
        force: false
"""

RETURN = r"""
files:
  description: One entry per file of O(files), in order.
  returned: success
  type: list
  elements: dict
  sample: [{"path": "/root/gpuop/k8s/gpu-pod.yaml", "changed": true,
            "backup_file": "/root/gpuop/k8s/gpu-pod.yaml.1234.2026-11-30@23:59:59~"}]
changed_files:
  description: Paths written (or, in check mode, that would be).
  returned: success
  type: list
  elements: str
  sample: [/root/gpuop/k8s/gpu-pod.yaml]
created_dirs:
  description: Folders created.
  returned: success
  type: list
  elements: str
  sample: [/root/gpuop/k8s]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab.files import LabFileError, write_files  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path", required=True),
                content=dict(type="str", required=True, no_log=False),
                mode=dict(type="str", default="0644"),
                backup=dict(type="bool", default=False),
                force=dict(type="bool", default=True),
            )),
            dirs=dict(type="list", elements="path", default=[]),
            dir_mode=dict(type="str", default="0755"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        result = write_files(module, p["files"], p["dirs"], p["dir_mode"])
    except LabFileError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
