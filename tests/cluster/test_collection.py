"""The collection gpu_incident.lab as an ops team uses it: installed from the built tarball
with ansible-galaxy, used from a folder outside the checkout with fully qualified names only,
and none of ANSIBLE_LIBRARY / ANSIBLE_MODULE_UTILS / ANSIBLE_DOC_FRAGMENT_PLUGINS /
ANSIBLE_ROLES_PATH set."""
import glob
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.dirname(sys.executable)
PLAYBOOK = """
- name: The collection by its fully qualified names
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{{{ ansible_playbook_python }}}}"
  tasks:
    - name: A module that needs no cluster - what containerd would load from a copied /etc
      gpu_incident.lab.containerd_merge:
        path: {bundle}/etc/containerd/config.toml
        root: {bundle}
        containerd_version: "1.7"
      register: merge
    - name: It read the drop-in through the node's own path
      ansible.builtin.assert:
        that: merge.predicted_runtimes == ['nvidia'] and merge.dropin_runtimes == ['nvidia']
    - name: A module against the cluster
      gpu_incident.lab.manifest_drift:
        kubeconfig: {kubeconfig}
        definitions: [{{apiVersion: v1, kind: Namespace, metadata: {{name: kube-system}}}}]
      register: drift
    - name: The cluster answered
      ansible.builtin.assert:
        that: drift.objects[0].state == 'same'
  roles:
    - role: gpu_incident.lab.runtime_check
      vars:
        runtime_check_install_dir: {install}
        runtime_check_gate: true
        runtime_check_path_prepend: [{fake}]
"""


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(PATH=BIN + ":" + env["PATH"], ANSIBLE_FORCE_COLOR="0", **extra)
    return env


def tarball():
    found = sorted(glob.glob(str(ROOT / "dist" / "gpu_incident-lab-*.tar.gz")))
    if not found:
        subprocess.run(["make", "collection"], cwd=ROOT, check=True, capture_output=True)
        found = sorted(glob.glob(str(ROOT / "dist" / "gpu_incident-lab-*.tar.gz")))
    return found[-1]


def test_installed_collection_runs_by_fqcn_outside_the_checkout(tmp_path, cluster):
    collections = tmp_path / "collections"
    out = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-p",
                          str(collections), tarball()], cwd=tmp_path, env=clean_env(),
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    bundle = tmp_path / "bundle"
    (bundle / "etc/containerd/conf.d").mkdir(parents=True)
    (bundle / "etc/containerd/config.toml").write_text(
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n')
    (bundle / "etc/containerd/conf.d/99-nvidia.toml").write_text(
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        '  runtime_type = "io.containerd.runc.v2"\n')
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "containerd").write_text(
        "#!/bin/sh\necho '[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]'\n")
    (fake / "containerd").chmod(0o755)
    work = tmp_path / "ops"
    work.mkdir()
    (work / "site.yml").write_text(PLAYBOOK.format(bundle=bundle, kubeconfig=cluster,
                                                   install=tmp_path / "sbin", fake=fake))
    env = clean_env(ANSIBLE_COLLECTIONS_PATH=str(collections))
    out = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "site.yml"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "failed=0" in out.stdout, out.stdout[-4000:] + out.stderr[-2000:]
    assert (tmp_path / "sbin" / "check-runtime.sh").exists()
    doc = subprocess.run([os.path.join(BIN, "ansible-doc"), "gpu_incident.lab.timeslicing_slots"],
                         cwd=work, env=env, capture_output=True, text=True)
    assert doc.returncode == 0 and "replicas" in doc.stdout and "renameByDefault" in doc.stdout
