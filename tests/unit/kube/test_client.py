"""lab_kube: kubeconfig reading (files, data, tokens, exec plugins) and quantities.

What it does on the wire against a real API server is in tests/cluster/.
"""
import base64
import os
import ssl
import stat
import textwrap
from lab_testing import ROOT  # tests/lab_testing.py

import pytest
import yaml

from ansible.module_utils.kube import client as lab_kube


def kubeconfig(tmp_path, user, cluster=None, context_extra=None, current="lab"):
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://127.0.0.1:6443/"}}],
        "contexts": [{"name": "lab", "context": dict({"cluster": "c", "user": "u"}, **(context_extra or {}))}],
        "users": [{"name": "u", "user": user}],
    }
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_files_are_read_relative_to_the_kubeconfig(tmp_path):
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "pki" / "admin.crt").write_bytes(b"CERT")
    (tmp_path / "pki" / "admin.key").write_bytes(b"KEY")
    path = kubeconfig(tmp_path, {"client-certificate": "pki/admin.crt", "client-key": "pki/admin.key"},
                      cluster={"server": "https://10.0.0.1:6443/k8s/clusters/c-1/",
                               "certificate-authority": "pki/ca.crt"},
                      context_extra={"namespace": "gpu-lab"})
    conf = lab_kube.load_kubeconfig(path)
    assert (conf["ca"], conf["cert"], conf["key"]) == (b"CA", b"CERT", b"KEY")
    assert conf["server"] == "https://10.0.0.1:6443/k8s/clusters/c-1"
    assert conf["namespace"] == "gpu-lab"


def test_inline_data_and_token_file(tmp_path):
    (tmp_path / "token").write_text("s3cret\n")
    path = kubeconfig(tmp_path, {"tokenFile": "token"},
                      cluster={"server": "https://h:6443",
                               "certificate-authority-data": base64.b64encode(b"PEM").decode()})
    conf = lab_kube.load_kubeconfig(path)
    assert conf["ca"] == b"PEM" and conf["token"] == "s3cret" and conf["cert"] is None


def test_basic_auth(tmp_path):
    conf = lab_kube.load_kubeconfig(kubeconfig(tmp_path, {"username": "ada", "password": "pw"}))
    assert base64.b64decode(conf["basic"]) == b"ada:pw"


def test_exec_credential_plugin_is_run(tmp_path):
    plugin = tmp_path / "get-token"
    plugin.write_text(textwrap.dedent("""\
        #!/bin/sh
        # prints an ExecCredential; the token carries an env value to show env is passed
        printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        printf '"status":{"token":"tok-%s"}}' "$CLUSTER_ID"
        """))
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    path = kubeconfig(tmp_path, {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                          "command": str(plugin),
                                          "env": [{"name": "CLUSTER_ID", "value": "eks-7"}]}})
    assert lab_kube.load_kubeconfig(path)["token"] == "tok-eks-7"


def test_failing_exec_plugin_says_why(tmp_path):
    path = kubeconfig(tmp_path, {"exec": {"command": "sh", "args": ["-c", "echo expired >&2; exit 3"]}})
    with pytest.raises(lab_kube.KubeconfigError, match=r"failed \(exit 3\): expired"):
        lab_kube.load_kubeconfig(path)


def test_missing_exec_plugin_shows_the_install_hint(tmp_path):
    path = kubeconfig(tmp_path, {"exec": {"command": str(tmp_path / "nope"),
                                          "installHint": "install aws-cli"}})
    with pytest.raises(lab_kube.KubeconfigError, match="cannot run.*install aws-cli"):
        lab_kube.load_kubeconfig(path)


@pytest.mark.parametrize("user, cluster, current, match", [
    ({"auth-provider": {"name": "gcp"}}, None, "lab", "legacy auth-provider 'gcp'"),
    ({}, {"server": "https://h", "proxy-url": "http://proxy"}, "lab", "proxy-url is not supported"),
    ({}, None, "other", "no context named 'other'"),
    ({}, {"certificate-authority": "x"}, "lab", "has no server"),
])
def test_unusable_kubeconfigs_are_named(tmp_path, user, cluster, current, match):
    with pytest.raises(lab_kube.KubeconfigError, match=match):
        lab_kube.load_kubeconfig(kubeconfig(tmp_path, user, cluster=cluster, current=current))


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(lab_kube.KubeconfigError, match="cannot load kubeconfig .*none"):
        lab_kube.load_kubeconfig(str(tmp_path / "none"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters: [\n")
    with pytest.raises(lab_kube.KubeconfigError, match="not YAML"):
        lab_kube.load_kubeconfig(str(bad))


def test_client_wraps_setup_errors(tmp_path):
    with pytest.raises(lab_kube.KubeconfigError, match="cannot load kubeconfig"):
        lab_kube.client(str(tmp_path / "none"))


@pytest.mark.parametrize("text, value", [
    ("32Gi", 34359738368), ("500m", 0.5), ("1e3", 1000), ("1.5k", 1500), ("4", 4),
    ("128Mi", 134217728), ("2E", 2 * 10 ** 18)])
def test_quantities(text, value):
    assert lab_kube.parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["lots", "4.5.1", "Gi", "", "1Gb"])
def test_bad_quantities(text):
    with pytest.raises(ValueError):
        lab_kube.parse_quantity(text)


def test_condition_lookup():
    pod = {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    assert lab_kube.condition(pod, "PodScheduled")["status"] == "False"
    assert lab_kube.condition(pod, "Ready") == {} and lab_kube.condition({}, "Ready") == {}


def test_no_kubernetes_package_needed():
    """The point of the client: our modules must not import the kubernetes package."""
    import subprocess
    import sys
    root = str(ROOT)
    code = ("import sys, ansible.module_utils as m; m.__path__.append(%r); "
            "sys.modules['kubernetes'] = None; "
            "from ansible.module_utils.kube import client, rollout; import ansible.module_utils.grader.grade; print('ok')"
            % os.path.join(root, "module_utils"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_a_kept_alive_connection_the_server_closed_is_reopened(tmp_path, monkeypatch):
    """An API server closes idle connections; the next request reconnects once instead of
    failing with the TLS layer's 'EOF occurred in violation of protocol'."""
    import ssl

    class Response:
        status, reason = 200, "OK"

        def read(self):
            return b'{"ok": true}'

    class Conn:
        def __init__(self, fail):
            self.fail = fail

        def request(self, *args, **kwargs):
            if self.fail:
                raise ssl.SSLEOFError(8, "EOF occurred in violation of protocol")

        def getresponse(self):
            return Response()

        def close(self):
            pass

    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    kube = lab_kube.Kube(str(path))
    made = []
    monkeypatch.setattr(kube, "_connect", lambda: made.append(1) or Conn(fail=len(made) == 1))
    assert kube.get("/version") == {"ok": True} and len(made) == 2
    monkeypatch.setattr(kube, "_connect", lambda: Conn(fail=True))
    kube._conn = None
    with pytest.raises(lab_kube.KubeError, match="cannot reach the API server"):
        kube.get("/version")


def test_with_a_ca_in_the_kubeconfig_only_that_ca_is_trusted(tmp_path):
    """As client-go builds its pool from the CA data alone; without one, the system's roots."""
    import subprocess
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(tmp_path / "ca.key"), "-out", str(tmp_path / "ca.crt"), "-days", "1",
                    "-subj", "/CN=lab-test-ca"], check=True, capture_output=True)
    conf = {"insecure": False, "ca": (tmp_path / "ca.crt").read_bytes(), "cert": None, "key": None}
    ctx = lab_kube._ssl_context(conf)
    assert [dict(c["subject"][0])["commonName"] for c in ctx.get_ca_certs()] == ["lab-test-ca"]
    assert ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED
    system = lab_kube._ssl_context(dict(conf, ca=None))
    assert system.verify_mode == ssl.CERT_REQUIRED and system.check_hostname
    insecure = lab_kube._ssl_context(dict(conf, insecure=True))
    assert insecure.verify_mode == ssl.CERT_NONE and not insecure.check_hostname
