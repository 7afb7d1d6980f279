"""playbooks/files/lab-folder-claim.sh: two labs of one state location never share a lab folder."""
import json
import subprocess
from lab_testing import ROOT  # tests/lab_testing.py

SCRIPT = ROOT / "playbooks" / "files" / "lab-folder-claim.sh"


def claim(base, cluster, root, clusters, check=False):
    out = subprocess.run(["bash", str(SCRIPT), str(base), cluster, str(root), str(clusters)] + (["check"] if check else []),
                         capture_output=True, text=True, timeout=30)
    return out.returncode, out.stdout, out.stderr


def test_a_lab_records_its_folder_once(tmp_path):
    base, clusters, root = tmp_path / "state", tmp_path / "kwok/clusters", tmp_path / "gpuop"
    assert claim(base, "a", root, clusters, check=True) == (0, '{"changed": true}\n', "")
    assert not (base / "a").exists()                       # check mode writes nothing
    assert claim(base, "a", root, clusters)[:2] == (0, '{"changed": true}\n')
    assert (base / "a/lab-root").read_text() == "%s\n" % root
    assert claim(base, "a", root, clusters)[:2] == (0, '{"changed": false}\n')


def test_another_lab_s_folder_is_refused_while_its_cluster_exists(tmp_path):
    base, clusters, root = tmp_path / "state", tmp_path / "kwok/clusters", tmp_path / "gpuop"
    assert claim(base, "a", root, clusters)[0] == 0
    (clusters / "a").mkdir(parents=True)                   # lab a is up
    code, out, err = claim(base, "b", str(root) + "/", clusters)   # the same folder, written otherwise
    assert code == 1 and out == ""
    assert "the lab folder %s is the lab folder of another lab, a" % root in err
    assert "-e lab_root=%s-b" % root in err and "teardown.yml -e lab_cluster_name=a" in err
    assert not (base / "b").exists()                       # nothing written
    # a folder of its own is fine; and once lab a is torn down (its cluster gone) its claim lapses
    assert claim(base, "b", tmp_path / "gpuop-b", clusters)[0] == 0
    (clusters / "a").rmdir()
    assert claim(base, "b", root, clusters)[:2] == (0, '{"changed": true}\n')
