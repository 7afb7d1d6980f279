"""lab_kube.Kube.get_text: a plain-text GET (a Pod's log) on a connection of its own.

Served by a real HTTP server on loopback; the API server's side of logs is in tests/cluster/.
"""
import http.server
import json
import socket
import threading

import pytest
import yaml

from ansible.module_utils.kube import client as lab_kube


class Handler(http.server.BaseHTTPRequestHandler):
    seen = []

    def do_GET(self):  # noqa: N802 (the http.server name)
        Handler.seen.append((self.path, dict(self.headers)))
        if self.path.startswith("/prefix/api/v1/namespaces/ns/pods/p/log"):
            body, status, kind = b"line 1\nline 2\n", 200, "text/plain"
        else:
            body = json.dumps({"kind": "Status", "message": 'pods "q" not found'}).encode()
            status, kind = 404, "application/json"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


def kubeconfig(tmp_path, port):
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:%d/prefix" % port}}],
        "contexts": [{"name": "lab", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "s3cret"}}]}))
    return str(path)


def test_text_is_returned_as_bytes_with_the_token_and_the_params(tmp_path, server):
    Handler.seen.clear()
    kube = lab_kube.client(kubeconfig(tmp_path, server))
    raw = kube.get_text("/api/v1/namespaces/ns/pods/p/log",
                        {"container": "c 1", "limitBytes": "10", "previous": None})
    assert raw == b"line 1\nline 2\n"
    path, headers = Handler.seen[-1]
    assert path == "/prefix/api/v1/namespaces/ns/pods/p/log?container=c+1&limitBytes=10"
    assert headers["Authorization"] == "Bearer s3cret" and headers["Accept"] == "*/*"


def test_an_error_carries_the_servers_status_and_message(tmp_path, server):
    kube = lab_kube.client(kubeconfig(tmp_path, server))
    with pytest.raises(lab_kube.KubeError) as info:
        kube.get_text("/api/v1/namespaces/ns/pods/q/log")
    assert info.value.status == 404 and 'pods "q" not found' in str(info.value)


def test_an_unreachable_server_is_status_none(tmp_path):
    with socket.socket() as sock:   # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kube = lab_kube.client(kubeconfig(tmp_path, port))
    with pytest.raises(lab_kube.KubeError) as info:
        kube.get_text("/api/v1/namespaces/ns/pods/p/log")
    assert info.value.status is None and "cannot reach the API server" in str(info.value)
