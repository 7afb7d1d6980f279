"""Malformed input gets a plain refusal that names the input, and nothing is written."""
import pathlib

import pytest

import containerd_merge
import lab_grade
import text_files
from ansible.module_utils.kube.client import KubeconfigError, load_kubeconfig

PYTHON_WORDS = ("Traceback", "AttributeError", "TypeError", "KeyError", "object has no attribute",
                "ValueError", "UnicodeDecodeError")


def plain(out):
    assert out["failed"], out
    assert not any(word in out["msg"] for word in PYTHON_WORDS), out["msg"]
    return out["msg"]


@pytest.mark.parametrize("text,words", [
    ('version = 2\nplugins = "x"\n', ["plugins is string", "expects a table", ":2"]),
    ('version = "two"\n', ["version is string", "integer", ":1"]),
    ('version = 2\nimports = "conf.d/*.toml"\n', ["imports is string", "write an array"]),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = ["runc"]\n',
     ["runtimes is array", "table of runtimes"]),
])
def test_containerd_merge_refuses_wrong_types(module_runner, tmp_path, text, words):
    config = tmp_path / "config.toml"
    config.write_text(text)
    dest = tmp_path / "merge.txt"
    out = module_runner(containerd_merge.main, {"path": str(config), "dest": str(dest),
                                                "observed_runtimes": ["runc"]})
    msg = plain(out)
    for word in words:
        assert word in msg, msg
    assert "Fix:" in msg and not dest.exists()


@pytest.mark.parametrize("dump", ["", "garbage\nnot a dump\n"])
def test_containerd_merge_refuses_an_empty_or_garbage_dump(module_runner, tmp_path, dump):
    config = tmp_path / "config.toml"
    config.write_text('version = 2\n')
    dest = tmp_path / "merge.txt"
    msg = plain(module_runner(containerd_merge.main, {"path": str(config), "dest": str(dest),
                                                      "observed_dump": dump}))
    assert "observed_dump lists no runtime table" in msg and not dest.exists()


def test_text_files_checks_every_mode_before_writing(module_runner, tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    for mode, words in (("77777", "beyond 0777"), ("rw-r--r--", "not an octal file mode"),
                        ("4755", "beyond 0777")):
        out = module_runner(text_files.main, {"files": [
            {"path": str(first), "content": "a"}, {"path": str(second), "content": "b", "mode": mode}]})
        assert words in plain(out)
        assert not first.exists() and not second.exists()


def test_text_files_folder_that_cannot_be_created(module_runner, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = module_runner(text_files.main, {"files": [{"path": str(blocker / "sub" / "a.txt"),
                                                      "content": "a"}]})
    assert "is not a folder" in plain(out) or "cannot create folder" in out["msg"]


def test_lab_grade_refuses_an_empty_step_list(module_runner, tmp_path):
    for steps in ([], "[]"):
        assert "nothing to grade" in plain(module_runner(lab_grade.main, {
            "lab_root": str(tmp_path), "steps": steps}))
    for steps, want in (("[1,2]", ["1", "2"]), ("1,2", ["1", "2"]), ("3", ["3"]), (4, ["4"])):
        out = module_runner(lab_grade.main, {"lab_root": str(tmp_path), "steps": steps})
        assert sorted(out["steps"]) == want, (steps, out)


@pytest.mark.parametrize("text,words", [
    ("current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: x\n",
     "clusters must be a list"),
    ("current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
     "clusters: [{name: k, cluster: {server: 6443}}]\nusers: [{name: u, user: {}}]\n",
     "field server must be a string"),
    ("current-context: [a]\n", "current-context must be"),
    ("current-context: c\ncontexts: [x]\n", "contexts[0] must be a mapping"),
])
def test_kubeconfig_with_wrong_types(tmp_path, text, words):
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with pytest.raises(KubeconfigError) as info:
        load_kubeconfig(str(path))
    assert words in str(info.value) and str(path) in str(info.value)
