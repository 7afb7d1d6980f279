"""-e kwok_cluster_workdir=DIR moves the whole cluster, its kubeconfig included.

The cluster lives in <kwok_cluster_workdir>/clusters/<name> and kwokctl writes its kubeconfig there;
the role waits for /readyz through kwok_cluster_kubeconfig, which the lab wires to lab_kubeconfig.
When lab_kubeconfig was derived from $HOME/.kwok instead, a lab with another workdir created its
cluster in DIR and then asked ~/.kwok's kubeconfig - missing (the wait ran out: "API server did not
report ready"), or the default lab's (the new lab then acted on that lab's cluster).
The variables are rendered with Ansible's Templar in the lab's precedence: role defaults, then the
inventory's group_vars, then extra vars.
"""
import os

import pytest
import yaml

from lab_testing import ROOT  # tests/lab_testing.py


def trusted(value):
    """The files' values as Ansible trusts what it loads from them (templates in lists included)."""
    from ansible.template import trust_as_template
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, list):
        return [trusted(item) for item in value]
    if isinstance(value, dict):
        return {key: trusted(item) for key, item in value.items()}
    return value


def rendered(extra_vars, *names):
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    from ansible.template import Templar, trust_as_template

    init_plugin_loader()
    role = ROOT / "roles/kwok_cluster"
    variables = {}
    for path in (role / "defaults/main.yml", ROOT / "inventory/group_vars/all/lab.yml", role / "vars/main.yml"):
        variables.update(trusted(yaml.safe_load(path.read_text())))
    variables.update(extra_vars)
    templar = Templar(loader=DataLoader(), variables=variables)
    return [templar.template(trust_as_template("{{ %s }}" % name)) for name in names]


@pytest.mark.parametrize("extra_vars, workdir", [
    ({}, os.path.expanduser("~/.kwok")),
    ({"kwok_cluster_workdir": "/tmp/wdtest-kwok"}, "/tmp/wdtest-kwok"),
    ({"kwok_cluster_workdir": "/tmp/wdtest-kwok", "lab_cluster_name": "wdtest"}, "/tmp/wdtest-kwok"),
])
def test_the_kubeconfig_the_lab_waits_on_is_in_the_cluster_s_own_folder(extra_vars, workdir):
    name = extra_vars.get("lab_cluster_name", "gpu-incident-lab")
    lab_kubeconfig, role_kubeconfig, up_args = rendered(
        extra_vars, "lab_kubeconfig", "kwok_cluster_kubeconfig", "_kwok_cluster_up_args")
    cluster_dir = "%s/clusters/%s" % (workdir, name)
    # components.sh up TIMEOUT CLUSTER_DIR KUBECTL KUBECONFIG: the folder kwokctl creates and the
    # kubeconfig the wait asks are one cluster's
    assert up_args[1] == cluster_dir
    assert up_args[3] == role_kubeconfig == lab_kubeconfig == cluster_dir + "/kubeconfig.yaml"
