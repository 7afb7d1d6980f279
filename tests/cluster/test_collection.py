"""The collection gpu_incident.lab: how tools/build_collection.py makes it, and how an ops team
uses it - installed from a freshly built tarball with ansible-galaxy, used from a folder outside
the checkout with fully qualified names only, none of ANSIBLE_LIBRARY / ANSIBLE_MODULE_UTILS /
ANSIBLE_DOC_FRAGMENT_PLUGINS / ANSIBLE_ROLES_PATH / ANSIBLE_ACTION_PLUGINS set.

The tests without the `cluster` fixture need no cluster (the build's parsing rewrites)."""
import ast
import glob
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.dirname(sys.executable)
MU_PKG = "ansible_collections.gpu_incident.lab.plugins.module_utils"

spec = importlib.util.spec_from_file_location("build_collection", ROOT / "tools" / "build_collection.py")
bc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bc)


def rewrite_py(text, modules=("pod_wait", "text_files")):
    return bc.PythonRewriter(modules).rewrite(pathlib.Path("library/x.py"), text)


# --- the build's rewrites, by parsing ---------------------------------------------------------

def test_imports_are_rewritten_in_every_form_and_only_the_projects():
    source = (
        "import os\n"
        "from ansible.module_utils.basic import AnsibleModule\n"
        "from ansible.module_utils.kube.client import KUBE_ARGS, client  # noqa: E402\n"
        "from ansible.module_utils.diagnosis.layers import (  # a package module\n"
        "    Diagnosis,\n    markdown)\n"
        "from ansible.module_utils.kube.client import (KubeError,\n"
        "                                              condition)\n"
        "from ansible.module_utils import diagnosis as gd\n"
        "from ansible.module_utils import basic, six\n"
        "import ansible.module_utils.kube.client as lk\n"
        "import ansible.module_utils.diagnosis.sources\n"
        "import ansible.module_utils\n"
        "def f():\n"
        "    from ansible.module_utils.kube.client import KubeError\n"
        "    return ansible.module_utils.diagnosis.sources.open_bundle, ansible.module_utils.__path__\n"
        "NOTE = 'ansible.module_utils.kube.client stays in a string'\n"
        "# from ansible.module_utils.kube.client import client - stays in a comment\n")
    rewriter = bc.PythonRewriter(["pod_wait"])
    out = rewriter.rewrite(pathlib.Path("library/x.py"), source)
    assert rewriter.utils == {"kube", "diagnosis"}   # what ships with this file
    ast.parse(out)
    assert out.splitlines() == [
        "import os",
        "from ansible.module_utils.basic import AnsibleModule",
        "from %s.kube.client import KUBE_ARGS, client  # noqa: E402" % MU_PKG,
        "from %s.diagnosis.layers import (  # a package module" % MU_PKG,
        "    Diagnosis,", "    markdown)",
        "from %s.kube.client import (KubeError," % MU_PKG,
        " " * len("from %s.kube.client import (" % MU_PKG) + "condition)",
        "from %s import diagnosis as gd" % MU_PKG,
        "from ansible.module_utils import basic, six",
        "import %s.kube.client as lk" % MU_PKG,
        "import %s.diagnosis.sources" % MU_PKG,
        "import ansible.module_utils",
        "def f():",
        "    from %s.kube.client import KubeError" % MU_PKG,
        "    return %s.diagnosis.sources.open_bundle, ansible.module_utils.__path__" % MU_PKG,
        "NOTE = 'ansible.module_utils.kube.client stays in a string'",
        "# from ansible.module_utils.kube.client import client - stays in a comment"]


@pytest.mark.parametrize("source, says", [
    ("from ansible.module_utils import kube, basic\n", "split it into two imports"),
    ("from ansible.module_utils.no_such_thing import x\n", "neither ansible-core's nor the project's"),
    ("DOCUMENTATION = r'''\nmodule: x\nextends_documentation_fragment: [lab_kub]\n'''\n",
     "extends doc fragment lab_kub, but there is no doc_fragments/lab_kub.py"),
    ("DOCUMENTATION = '''\\nmodule: x\\n'''\n", "not a plain string literal"),
])
def test_what_cannot_ship_stops_the_build_naming_file_line_and_fix(source, says):
    with pytest.raises(bc.BuildError) as err:
        rewrite_py(source)
    assert says in str(err.value) and str(err.value).startswith("library/x.py:")


def test_docs_get_fragment_and_module_names_and_examples_their_actions():
    source = (
        '"""Ansible module x."""\n'
        'DOCUMENTATION = r"""\n'
        "module: x\n"
        "description: Feeds M(pod_wait); not M(ansible.builtin.copy) nor M(unknown).\n"
        "extends_documentation_fragment:\n"
        "  - lab_kube\n"
        "  - lab_files.mode   # a part of a fragment\n"
        "  - ansible.builtin.action_common_attributes\n"
        "seealso:\n"
        "  - module: text_files\n"
        "  - module: ansible.builtin.copy\n"
        '"""\n'
        'EXAMPLES = r"""\n'
        "- name: Wait\n"
        "  pod_wait:\n"
        "    name: text_files   # a value equal to a module name stays\n"
        "    text_files: 1\n"
        "- name: Copy\n"
        "  ansible.builtin.copy: {src: a, dest: b}\n"
        '"""\n')
    out = rewrite_py(source)
    assert "Feeds M(gpu_incident.lab.pod_wait); not M(ansible.builtin.copy) nor M(unknown)." in out
    assert "  - gpu_incident.lab.lab_kube\n  - gpu_incident.lab.lab_files.mode   # a part" in out
    assert "  - ansible.builtin.action_common_attributes\n" in out
    assert "  gpu_incident.lab.pod_wait:\n    name: text_files   # a value" in out
    assert "    text_files: 1\n" in out and "  ansible.builtin.copy: {src: a, dest: b}" in out
    assert "  - module: gpu_incident.lab.text_files\n  - module: ansible.builtin.copy\n" in out
    assert out.count("gpu_incident.lab.") == 5


def test_only_task_actions_become_fqcn_and_the_file_keeps_its_comments():
    text = (
        "---\n"
        "# a role's tasks\n"
        "- name: An action key\n"
        "  pod_wait:  # trailing comment\n"
        "    namespace: x\n"
        "  vars:\n"
        "    pod_wait: a variable named like a module\n"
        "    text_files: {}\n"
        "- name: A block\n"
        "  module_defaults:\n"
        "    text_files: {backup: true}\n"
        "  block:\n"
        "    - name: Nested\n"
        '      "text_files":\n'
        "        files: [{path: /tmp/x, content: pod_wait}]\n"
        "  rescue:\n"
        "    - ansible.builtin.debug: {msg: pod_wait}\n"
        "- name: Old forms\n"
        "  action: pod_wait namespace=x\n"
        "- local_action:\n"
        "    module: text_files\n")
    root = yaml.compose(text)
    src = bc.Source(pathlib.Path("roles/r/tasks/main.yml"), text)
    for start, end, new in bc.task_action_edits(root, {"pod_wait", "text_files"}, text):
        src.replace(start, end, new)
    out = src.result()
    assert out.splitlines() == [
        "---", "# a role's tasks", "- name: An action key",
        "  gpu_incident.lab.pod_wait:  # trailing comment", "    namespace: x",
        "  vars:", "    pod_wait: a variable named like a module", "    text_files: {}",
        "- name: A block", "  module_defaults:", "    gpu_incident.lab.text_files: {backup: true}",
        "  block:", "    - name: Nested", '      "gpu_incident.lab.text_files":',
        "        files: [{path: /tmp/x, content: pod_wait}]", "  rescue:",
        "    - ansible.builtin.debug: {msg: pod_wait}",
        "- name: Old forms", "  action: gpu_incident.lab.pod_wait namespace=x",
        "- local_action:", "    module: gpu_incident.lab.text_files"]
    assert yaml.safe_load(out)   # still YAML


def test_readme_tables_are_read_by_their_first_column():
    text = ("| Module | What |\n|---|---|\n| `a`, `b` | x `not_me` |\n\nprose `c`\n\n"
            "| Role | What |\n|---|---|\n| `r` | y |\n")
    assert bc.table_names(text, "Module") == ["a", "b"]
    assert bc.table_names(text, "Role") == ["r"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The collection staged by the build, and packed by ansible-galaxy (fresh, never a
    tarball left in dist/ by an earlier build)."""
    top = tmp_path_factory.mktemp("built")
    stage = top / "ansible_collections" / "gpu_incident" / "lab"
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "build_collection.py"), str(stage)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    out = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", str(stage),
                          "--output-path", str(top / "dist")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    return stage, glob.glob(str(top / "dist" / "gpu_incident-lab-*.tar.gz"))[0]


def test_the_list_is_what_ships(built):
    stage, _ = built
    ships = yaml.safe_load((ROOT / "collection" / "ships.yml").read_text())
    plugins = stage / "plugins"
    assert sorted(p.stem for p in (plugins / "modules").glob("*.py")) == sorted(ships["modules"])
    # module_utils: exactly what the shipped Python imports (by the collection's names), packages whole
    shipped = {str(p.relative_to(plugins / "module_utils")) for p in (plugins / "module_utils").rglob("*.py")}
    imported, fragments = set(), set()
    for path in plugins.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(MU_PKG):
                rest = node.module[len(MU_PKG) + 1:].split(".") if node.module != MU_PKG else []
                imported.update([rest[0]] if rest else [a.name for a in node.names])
            elif isinstance(node, ast.Import):
                imported.update(a.name[len(MU_PKG) + 1:].split(".")[0] for a in node.names
                                if a.name.startswith(MU_PKG + "."))
        if path.parent.name == "modules":
            doc = next(yaml.safe_load(n.value.value) for n in tree.body if isinstance(n, ast.Assign)
                       and getattr(n.targets[0], "id", "") == "DOCUMENTATION")
            fragments.update(f.split(".")[2] for f in doc.get("extends_documentation_fragment") or []
                             if f.startswith("gpu_incident.lab."))
    expected = set()
    for name in imported:
        package = ROOT / "module_utils" / name
        expected |= ({str(p.relative_to(ROOT / "module_utils")) for p in package.rglob("*.py")}
                     if package.is_dir() else {name + ".py"})
    assert shipped == expected
    assert {"diagnosis", "kube", "lab"} <= imported and any("/" in e for e in shipped)
    assert sorted(p.stem for p in (plugins / "doc_fragments").glob("*.py")) == sorted(fragments)
    assert "lab_kube" in fragments

    assert sorted(p.name for p in (stage / "roles").iterdir()) == sorted(ships["roles"])
    assert sorted(p.stem for p in (plugins / "plugin_utils").glob("*.py")) == sorted(ships["action_plugins"])
    linked = sorted(m for m in ships["modules"] if (ROOT / "action_plugins" / (m + ".py")).is_symlink())
    assert linked and sorted(p.stem for p in (plugins / "action").glob("*.py")) == linked
    assert not (stage / "ships.yml").exists()
    # self-contained: no shipped Python imports the project's module_utils by ansible.module_utils
    project = {p.stem for p in (ROOT / "module_utils").iterdir() if p.suffix == ".py" or p.is_dir()}
    for path in plugins.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            named = ([node.module or ""] + [node.module + "." + a.name for a in node.names]
                     if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in named:
                parts = name.split(".")
                assert not (parts[:2] == ["ansible", "module_utils"] and len(parts) > 2
                            and parts[2] in project), (path, name)


def test_runtime_groups_every_module_of_the_kube_fragment(built):
    stage, _ = built
    runtime = yaml.safe_load((stage / "meta" / "runtime.yml").read_text())
    members = runtime["action_groups"]["kube"]
    extending = []
    for module in yaml.safe_load((ROOT / "collection" / "ships.yml").read_text())["modules"]:
        doc = next(yaml.safe_load(n.value.value) for n in ast.parse((ROOT / "library" / (module + ".py")).read_text()).body
                   if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "DOCUMENTATION")
        fragments = doc.get("extends_documentation_fragment") or []
        if any(f.split(".")[0] == "lab_kube" for f in fragments):
            extending.append(module)
    assert members == extending and len(members) >= 4


# --- the installed collection, against a real control plane -----------------------------------

PLAYBOOK = """
- name: The collection by its fully qualified names
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{{{ ansible_playbook_python }}}}"
  module_defaults:
    group/gpu_incident.lab.kube:
      kubeconfig: {kubeconfig}
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
    - name: A module against the cluster - its kubeconfig from the action group's defaults
      gpu_incident.lab.manifest_drift:
        definitions: [{{apiVersion: v1, kind: Namespace, metadata: {{name: kube-system}}}}]
      register: drift
    - name: Another module of the group, the same one default
      gpu_incident.lab.gpu_bundle_collect:
        dest: {out}/bundle
        stack_namespaces: [kube-system]
      register: bundle
    - name: The cluster answered both
      ansible.builtin.assert:
        that:
          - drift.objects[0].state == 'same'
          - bundle.files | length > 0
    - name: What the lab's modules returned, for the test to compare
      ansible.builtin.copy:
        content: "{{{{ {{'merge': merge, 'drift': drift}} | to_nice_json }}}}"
        dest: {out}/results.json
        mode: "0644"
  roles:
    - role: gpu_incident.lab.runtime_check
      vars:
        runtime_check_install_dir: {out}/sbin
        runtime_check_gate: true
        runtime_check_path_prepend: [{fake}]
"""


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.pop("GPU_INCIDENT_LAB_IN_WORKER", None)
    env.update(PATH=BIN + ":" + env["PATH"], ANSIBLE_FORCE_COLOR="0", **extra)
    return env


def test_installed_collection_runs_by_fqcn_outside_the_checkout(tmp_path, built, cluster):
    _, tarball = built
    collections = tmp_path / "collections"
    out = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-p",
                          str(collections), tarball], cwd=tmp_path, env=clean_env(),
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
    results = {}
    # the installed collection runs its modules the usual way (AnsiballZ) by default, and in the
    # worker only when the ops team opts in (GPU_INCIDENT_LAB_IN_WORKER=1); the module files
    # Ansible leaves behind (ANSIBLE_KEEP_REMOTE_FILES) tell which way ran
    for mode in ("ansiballz", "in-worker"):
        run = tmp_path / mode
        run.mkdir()
        (work / "site.yml").write_text(PLAYBOOK.format(bundle=bundle, kubeconfig=cluster, out=run, fake=fake))
        extra = dict(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_KEEP_REMOTE_FILES="1",
                     ANSIBLE_REMOTE_TMP=str(run / "remote-tmp"))
        if mode == "in-worker":
            extra["GPU_INCIDENT_LAB_IN_WORKER"] = "1"
        out = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "site.yml"],
                             cwd=work, env=clean_env(**extra), capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and "failed=0" in out.stdout, out.stdout[-4000:] + out.stderr[-2000:]
        assert (run / "sbin" / "check-runtime.sh").exists() and (run / "bundle" / "bundle.json").exists()
        zipped = {pathlib.Path(p).name for p in glob.glob(str(run / "remote-tmp" / "*" / "AnsiballZ_*.py"))}
        lab = {"AnsiballZ_%s.py" % m for m in ("containerd_merge", "manifest_drift", "gpu_bundle_collect",
                                                "text_files")}
        if mode == "in-worker":
            assert not zipped & lab, zipped      # the lab's modules ran in the worker...
            assert "AnsiballZ_copy.py" in zipped  # ...ansible.builtin's the usual way
        else:
            assert lab <= zipped, zipped
        results[mode] = json.loads((run / "results.json").read_text())
    assert results["in-worker"] == results["ansiballz"]
    # kubeconfig is required by both cluster modules and no task gives it: group/...kube did
    assert results["in-worker"]["drift"]["objects"][0]["state"] == "same"
    env = clean_env(ANSIBLE_COLLECTIONS_PATH=str(collections))
    doc = subprocess.run([os.path.join(BIN, "ansible-doc"), "gpu_incident.lab.timeslicing_slots"],
                         cwd=work, env=env, capture_output=True, text=True)
    assert doc.returncode == 0 and "replicas" in doc.stdout and "renameByDefault" in doc.stdout
