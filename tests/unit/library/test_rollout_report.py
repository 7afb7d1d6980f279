"""rollout_report: the module's main() against an API server stand-in on loopback - the DaemonSet
and its Pods as `kubectl get -o json` gives them. A rollout complete, one stalled for good (the
scheduler's words become the blocker), the report recorded once and kept, check mode, and a
DaemonSet that is not there. The judgment itself is tests/unit/kube/test_rollout.py; a real
controller and scheduler: tests/cluster/."""
import http.server
import json
import threading
import urllib.parse

import pytest
import yaml

import rollout_report

NEW, OLD = "registry.local/device-plugin:v2", "registry.local/device-plugin:v1"
AFFINITY = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."


def daemonset(desired, updated, ready):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "plugin", "namespace": "gpu", "uid": "ds-1", "generation": 2},
            "spec": {"selector": {"matchLabels": {"app": "plugin"}},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                     "template": {"spec": {"containers": [{"name": "plugin", "image": NEW}]}}},
            "status": {"observedGeneration": 2, "desiredNumberScheduled": desired,
                       "currentNumberScheduled": desired, "updatedNumberScheduled": updated,
                       "numberReady": ready, "numberAvailable": ready, "numberUnavailable": desired - ready}}


def pod(name, image, ready=True, refused=None):
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    if refused:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                           "message": refused})
    return {"metadata": {"name": name, "namespace": "gpu", "labels": {"app": "plugin"},
                         "ownerReferences": [{"kind": "DaemonSet", "uid": "ds-1"}]},
            "spec": {"nodeName": None if refused else "node-" + name,
                     "containers": [{"name": "plugin", "image": image}]},
            "status": {"phase": "Pending" if refused else "Running", "conditions": conditions}}


class API(http.server.BaseHTTPRequestHandler):
    """GET only, as the module reads: the DaemonSet, its Pods by label selector, one Node."""
    objects = {}
    seen = []

    def do_GET(self):  # noqa: N802 (the http.server name)
        url = urllib.parse.urlsplit(self.path)
        API.seen.append(self.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path == "/apis/apps/v1/namespaces/gpu/daemonsets/plugin" and "ds" in API.objects:
            status, body = 200, API.objects["ds"]
        elif url.path == "/api/v1/namespaces/gpu/pods" and query.get("labelSelector") == ["app=plugin"]:
            status, body = 200, {"kind": "PodList", "metadata": {}, "items": API.objects.get("pods", [])}
        elif url.path == "/api/v1/nodes":
            status, body = 200, {"kind": "NodeList", "metadata": {"remainingItemCount": 2},
                                 "items": [{"metadata": {"name": "node-a"}}]}
        else:
            status, body = 404, {"kind": "Status", "reason": "NotFound",
                                 "message": 'daemonsets.apps "%s" not found' % url.path.rsplit("/", 1)[-1]}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def kubeconfig(tmp_path):
    API.objects, API.seen = {}, []
    httpd = http.server.HTTPServer(("127.0.0.1", 0), API)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:%d" % httpd.server_address[1]}}],
        "contexts": [{"name": "lab", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    yield str(path)
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


def args(kubeconfig, **more):
    return dict({"kubeconfig": kubeconfig, "namespace": "gpu", "name": "plugin", "wait_timeout": 10,
                 "settle": 1}, **more)


def test_a_complete_rollout_is_reported_and_recorded_once(module_runner, kubeconfig, tmp_path):
    API.objects = {"ds": daemonset(2, 2, 2), "pods": [pod("a", NEW), pod("b", NEW)]}
    dest = tmp_path / "rollout.env"
    out = module_runner(rollout_report.main, args(kubeconfig, dest=str(dest)))
    assert not out["failed"], out.get("msg")
    assert out["outcome"] == "complete" and out["complete"] and not out["stalled"]
    assert out["report"] == ("DESIRED=2\nUPDATED=2\nREADY=2\nOLD_IMAGE_PODS=0\nMAX_UNAVAILABLE=1\n"
                             "BLOCKER=none\n")
    assert out["changed"] and dest.read_text() == out["report"]
    assert [p["name"] for p in out["pods"]] == ["a", "b"]
    # the report is a recorded observation: a second run reads once and keeps it
    API.objects["ds"] = daemonset(2, 1, 1)
    again = module_runner(rollout_report.main, args(kubeconfig, dest=str(dest)))
    assert not again["failed"] and not again["changed"] and dest.read_text() == out["report"]
    assert again["outcome"] == "in-progress" and again["waited"] == 0


def test_a_final_stall_ends_the_wait_with_the_schedulers_words(module_runner, kubeconfig, tmp_path):
    API.objects = {"ds": daemonset(3, 1, 2),
                   "pods": [pod("a", OLD), pod("b", OLD), pod("c", NEW, ready=False, refused=AFFINITY)]}
    out = module_runner(rollout_report.main, args(kubeconfig, wait_timeout=60, settle=30,
                                                  dest=str(tmp_path / "r.env")), check_mode=True)
    assert not out["failed"], out.get("msg")
    assert out["outcome"] == "stalled" and out["waited"] < 30     # the controller's rule: no settling
    assert out["blocker"] == "node-affinity-mismatch" and out["blocked_pods"] == ["c"]
    assert out["old_image_pods"] == 2 and "BLOCKER=node-affinity-mismatch\n" in out["report"]
    assert AFFINITY in out["msg"]
    assert out["changed"] and not (tmp_path / "r.env").exists()   # check mode: said, not written


def test_a_rollout_that_does_not_settle_fails_unless_told_otherwise(module_runner, kubeconfig):
    API.objects = {"ds": daemonset(2, 1, 1), "pods": [pod("a", OLD), pod("b", NEW, ready=False)]}
    out = module_runner(rollout_report.main, args(kubeconfig, wait_timeout=1, wait_for="complete"))
    assert out["failed"] and "did not complete within 1s" in out["msg"]
    assert out["outcome"] == "timeout" and out["old_image_pods"] == 1     # what the last read showed
    out = module_runner(rollout_report.main, args(kubeconfig, wait_timeout=1, fail_on_timeout=False))
    assert not out["failed"] and out["outcome"] == "timeout"


def test_a_missing_daemonset_is_named(module_runner, kubeconfig):
    out = module_runner(rollout_report.main, args(kubeconfig, name="nothing"))
    assert out["failed"] and "cannot read DaemonSet gpu/nothing" in out["msg"] and "not found" in out["msg"]
