"""The container-runtime layer cites the sentinel's Node conditions (issue 39) - live and from a
bundle's nodes alike, since both hand the rule the Node object."""
from ansible.module_utils.diagnosis import host_layers
from ansible.module_utils.diagnosis.walk import Seen

NODE = "lab-node-1"
BREAKS = ("next start of containerd 1.6.20 serves no CRI: default_runtime_name runc is not among runtimes "
          "nvidia - the containerd.runtimes table is replaced whole by /root/gpuop/etc/containerd/conf.d/99-nvidia.toml")
PENDING = "loaded: runc; next start: nvidia (runtimes differ; containerd 1.6.20, /etc/containerd/config.toml)"


class Where(object):
    kind = "live"

    @staticmethod
    def node(name):
        return "GET /api/v1/nodes/%s" % name

    @staticmethod
    def facts(name):
        return "node facts of %s" % name

    @staticmethod
    def rc(name):
        return "RuntimeClass %s" % name


def seen(conditions, facts=None):
    node = {"metadata": {"name": NODE, "labels": {}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}] + conditions}}
    return Seen(node=node, name=NODE, labels={}, pod=None, request=None, texts=[], plugin_pods=[],
                other_components=[], plugin_why=None, daemonsets=None, rc_name=None, runtimeclass=None,
                rc_why=None, missing={}, resource="nvidia.com/gpu", driver_labels=[], selectors=[],
                dp_namespace=None, where=Where(), last_errors={},
                facts=facts if facts is not None else {"runtimes_running": ["runc"], "runtimes_configured": ["nvidia"],
                                                       "default_runtime": "runc", "cdi_enabled": False})


def evidence(result):
    return [(e["source"], e["value"]) if isinstance(e, dict) else tuple(e) for e in result["evidence"]]


def test_both_conditions_are_cited_and_breaks_is_a_finding():
    result = host_layers.container_runtime(seen([
        {"type": "RuntimeRestartPending", "status": "True", "message": PENDING},
        {"type": "RuntimeBreaksOnRestart", "status": "True", "message": BREAKS}]))
    said = evidence(result)
    assert ("GET /api/v1/nodes/lab-node-1 .status.conditions RuntimeRestartPending (node-problem-detector's sentinel)",
            "True: " + PENDING) in said
    assert ("GET /api/v1/nodes/lab-node-1 .status.conditions RuntimeBreaksOnRestart (node-problem-detector's sentinel)",
            "True: " + BREAKS) in said
    findings = [v for s, v in said if s == "finding" and "sentinel" in v]
    assert findings == ["the sentinel says the next restart of containerd on lab-node-1 serves no CRI (%s): "
                        "reboot it only after the fix" % BREAKS]


def test_false_is_cited_without_a_finding():
    result = host_layers.container_runtime(seen([
        {"type": "RuntimeBreaksOnRestart", "status": "False", "message": "the next start of containerd serves CRI"}]))
    said = evidence(result)
    assert any(s.endswith("RuntimeBreaksOnRestart (node-problem-detector's sentinel)") and v.startswith("False: ")
               for s, v in said)
    assert not [v for s, v in said if s == "finding" and "sentinel" in v]


def test_no_sentinel_no_citation():
    assert not [e for e in evidence(host_layers.container_runtime(seen([]))) if "sentinel" in e[0]]


def test_the_cdi_condition_is_cited_and_true_is_a_finding():
    """Issue 48: RuntimeIgnoresCDI (the check's cdi mode) - a claim's devices dropped by a containerd without CDI."""
    says = ("containerd 1.6.20~ds1 knows no CDI (crictl info: no enableCDI, no cdiSpecDirs; CDI came with containerd "
            "1.7) but /var/run/cdi holds 1 CDI spec of gpu.nvidia.com (k8s.gpu.nvidia.com-claim_05b5.yaml)")
    said = evidence(host_layers.container_runtime(seen([{"type": "RuntimeIgnoresCDI", "status": "True", "message": says}])))
    assert ("GET /api/v1/nodes/lab-node-1 .status.conditions RuntimeIgnoresCDI (node-problem-detector's sentinel)",
            "True: " + says) in said
    assert [v for s, v in said if s == "finding" and "sentinel" in v] == [
        "the sentinel says containerd on lab-node-1 drops the CDI devices the kubelet hands it (%s)" % says]
    said = evidence(host_layers.container_runtime(seen([{"type": "RuntimeIgnoresCDI", "status": "False",
                                                         "message": "containerd 2.2.0 applies CDI"}])))
    assert not [v for s, v in said if s == "finding" and "sentinel" in v]
