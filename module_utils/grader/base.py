# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every check of the grader shares: a step's Result, the readers of the trainee's files
(each failing with a plain reason, never an exception), the three common mistakes, and
GraderBase - the lab folder, the lab's settings and the live cluster.

The grader holds no lab value of its own: every expected value that the lab could set
differently comes in as a setting (lab_grade's options; playbooks/grade.yml passes
``lab_grade_settings`` from inventory/group_vars/all/lab.yml). A step names the settings it
needs with ``@needs(...)``; without them it reports which are missing instead of guessing.
"""

import os

from ansible.module_utils.lab.yaml_load import yaml

from ansible.module_utils.containerd import loader as cc
from ansible.module_utils.kube.client import client as kube_client

MISTAKE_1 = ("common mistake 1 (unquoted dotted table name): write the plugin name in double "
             "quotes, [plugins.\"io.containerd.grpc.v1.cri\"...], so it stays one key")
MISTAKE_2 = ("common mistake 2 (data.any written as a YAML mapping): ConfigMap data values are "
             "strings; write `any: |-` and indent the config below it")
MISTAKE_3 = ("common mistake 3 (new spec pushed before all Pods were Ready): delete the "
             "DaemonSet, apply toolkit-ds.yaml again, wait until every Pod is Ready, then push "
             "the update")

get = cc.get  # nested dict lookup, None when a key is missing (the merge model's own)


class Result:
    """One step's verdict: reasons (why it fails; none = passed) and advice (never fails it)."""

    def __init__(self):
        self.reasons = []
        self.advice = []

    def fail(self, text):
        self.reasons.append(text)

    def note(self, text):
        self.advice.append(text)

    def as_dict(self):
        return {"passed": not self.reasons, "reasons": self.reasons, "advice": self.advice}


def needs(*settings):
    """Mark a check with the lab settings it compares against (GraderBase.missing_settings)."""
    def mark(check):
        check.needs = settings
        return check
    return mark


def read_kv(path, keys, result, name):
    """KEY=VALUE lines in the given order; reasons for anything else."""
    if not os.path.isfile(path):
        result.fail("%s is missing (expected at %s)" % (name, path))
        return None
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = [line.rstrip("\r\n") for line in handle]
    while lines and not lines[-1].strip():
        lines.pop()
    values = {}
    found = []
    for number, line in enumerate(lines, start=1):
        if "=" not in line:
            result.fail("%s line %d is not KEY=VALUE: %r" % (name, number, line))
            return None
        key, value = line.split("=", 1)
        found.append(key.strip())
        values[key.strip()] = value.strip()
    if found != keys:
        if sorted(found) == sorted(keys):
            result.fail("%s has the right keys in the wrong order: %s; the order is %s"
                        % (name, ", ".join(found), ", ".join(keys)))
        else:
            missing = [k for k in keys if k not in found]
            extra = [k for k in found if k not in keys]
            result.fail("%s must have exactly %d lines %s%s%s" % (
                name, len(keys), ", ".join(keys),
                "; missing: " + ", ".join(missing) if missing else "",
                "; unexpected: " + ", ".join(extra) if extra else ""))
        return None
    return values


def names(text):
    """The sorted names of a comma-separated list (runc,nvidia)."""
    return sorted(n.strip() for n in text.split(",") if n.strip())


def expect_fields(result, name, obj, wanted):
    """One reason per field of obj that differs: wanted is [((key, ...), value), ...]."""
    for keys, value in wanted:
        have = get(obj, *keys)
        if have != value:
            result.fail("%s: %s must be %s (found %r)" % (name, ".".join(keys), value, have))


def read_text_file(path, result, name):
    """The file's text, or None with a plain reason (missing, a folder, not UTF-8)."""
    if not os.path.isfile(path):
        result.fail("%s is missing (expected at %s)" % (name, path))
        return None
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        result.fail("%s is not UTF-8 text (byte 0x%02x on line %d); save it as UTF-8"
                    % (name, data[exc.start], data[:exc.start].count(b"\n") + 1))
        return None


def load_yaml_file(path, result, name):
    """The one object of a YAML file, or None with a plain reason (not YAML, a list, two)."""
    text = read_text_file(path, result, name)
    if text is None:
        return None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        result.fail("%s is not valid YAML%s: %s" % (
            name, " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark else "",
            getattr(exc, "problem", None) or exc))
        return None
    if len(docs) != 1 or not isinstance(docs[0], dict):
        result.fail("%s should hold exactly one object, found %d" % (name, len(docs)))
        return None
    return docs[0]


class GraderBase:
    """The lab folder (lab_root stands for the node's /), the lab's settings and the live
    cluster - reached once, lazily, and only by the checks that need it."""

    def __init__(self, lab_root, kubeconfig=None, context=None, **settings):
        self.root = lab_root
        self.kubeconfig = kubeconfig
        self.context = context
        self.settings = {k: v for k, v in settings.items() if v is not None}
        self._api = None
        self._api_error = None

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def missing_settings(self, check):
        """The settings a check (marked with @needs) compares against that were not given."""
        return [name for name in getattr(check, "needs", ()) if name not in self.settings]

    def api(self):
        """The cluster's client, or None (the reason in _api_error) when it cannot be reached."""
        if self._api is None and self._api_error is None:
            if not self.kubeconfig:
                self._api_error = "no kubeconfig given"
            else:
                try:
                    kube = kube_client(self.kubeconfig, self.context)
                    kube.get("/api/v1/namespaces", params={"limit": 1})
                    self._api = kube
                except Exception as exc:  # unreachable, bad kubeconfig
                    self._api_error = str(exc).splitlines()[0][:300]
        return self._api

    def need_cluster(self, result):
        """True when the cluster answers; else a reason that says how to start it."""
        if self.api() is None:
            result.fail("the cluster is not reachable (%s): start it with `ansible-playbook "
                        "lab.yml --tags environment`" % self._api_error)
            return False
        return True

    def read(self, path):
        """The object at an API path, or None when it does not exist."""
        return self.api().get(path, missing_ok=True)
