"""manifest_drift's apply (module_utils/kube/apply.py) against a real API server: create what is
missing in order, leave or patch what exists, check mode changes nothing, refusals named."""
import manifest_drift


def configmap(namespace, name, value, extra=None):
    data = {"any": value}
    data.update(extra or {})
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": data}


def run(module_runner, cluster, definitions, apply, check_mode=False):
    return module_runner(manifest_drift.main, {"kubeconfig": cluster, "definitions": definitions,
                                               "apply": apply}, check_mode=check_mode)


def test_missing_creates_in_order_and_never_touches_what_exists(module_runner, cluster, kube):
    space = "apply-order"
    wanted = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": space}},
              configmap(space, "a", "1")]
    out = run(module_runner, cluster, wanted, "missing", check_mode=True)
    assert out["changed"] and [a["action"] for a in out["applied"]] == ["created", "created"]
    assert kube.get("/api/v1/namespaces/%s" % space, missing_ok=True) is None
    out = run(module_runner, cluster, wanted, "missing")
    assert out["changed"] and [(a["kind"], a["action"]) for a in out["applied"]] == [
        ("Namespace", "created"), ("ConfigMap", "created")]
    assert kube.get("/api/v1/namespaces/%s/configmaps/a" % space)["data"] == {"any": "1"}
    # someone changed it since: apply=missing leaves it, apply=drift patches the named field only
    kube.patch("/api/v1/namespaces/%s/configmaps/a" % space, {"data": {"any": "edited", "kept": "yes"}})
    out = run(module_runner, cluster, wanted, "missing")
    assert not out["changed"] and out["applied"] == [] and out["objects"][1]["state"] == "differs"
    assert kube.get("/api/v1/namespaces/%s/configmaps/a" % space)["data"]["any"] == "edited"
    out = run(module_runner, cluster, wanted, "drift")
    assert out["changed"] and out["applied"] == [{"api_version": "v1", "kind": "ConfigMap", "name": "a",
                                                   "namespace": space, "action": "patched"}]
    assert kube.get("/api/v1/namespaces/%s/configmaps/a" % space)["data"] == {"any": "1", "kept": "yes"}
    out = run(module_runner, cluster, wanted, "drift")
    assert not out["changed"] and out["applied"] == []


def test_a_daemonset_container_is_patched_by_name(module_runner, cluster, kube, namespace):
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": namespace},
          "spec": {"selector": {"matchLabels": {"app": "d"}},
                   "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
                       "containers": [{"name": "c", "image": "example.invalid/a:1"},
                                      {"name": "side", "image": "example.invalid/s:1"}]}}}}
    assert run(module_runner, cluster, [ds], "drift")["changed"]
    update = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": namespace},
              "spec": {"template": {"spec": {"containers": [
                  {"name": "c", "image": "example.invalid/a:2", "resources": {"requests": {"memory": "1Gi"}}}]}}}}
    out = run(module_runner, cluster, [update], "drift")
    assert out["changed"] and out["applied"][0]["action"] == "patched"
    live = kube.get("/apis/apps/v1/namespaces/%s/daemonsets/d" % namespace)
    containers = {c["name"]: c for c in live["spec"]["template"]["spec"]["containers"]}
    assert containers["c"]["image"] == "example.invalid/a:2"
    assert containers["c"]["resources"]["requests"]["memory"] == "1Gi"
    assert containers["side"]["image"] == "example.invalid/s:1"   # strategic merge: kept by name


def test_a_refused_create_names_the_object_and_the_reason(module_runner, cluster, namespace):
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "no-containers", "namespace": namespace},
           "spec": {"containers": []}}
    out = run(module_runner, cluster, [bad], "missing")
    assert out["failed"] and out["msg"].startswith("cannot create Pod no-containers in namespace %s: 422" % namespace)
    assert "spec.containers" in out["msg"]


def test_an_unknown_apply_mode_is_refused_by_the_argument_spec(module_runner, cluster, namespace):
    out = run(module_runner, cluster, [configmap(namespace, "x", "1")], "everything")
    assert out["failed"] and "apply" in out["msg"] and "drift" in out["msg"]


def test_one_name_in_two_namespaces_goes_to_each(module_runner, cluster, kube):
    spaces = ["apply-twin-a", "apply-twin-b"]
    wanted = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in spaces]
    wanted += [configmap(n, "same", n) for n in spaces]
    out = run(module_runner, cluster, wanted, "missing")
    assert not out["failed"], out.get("msg")
    assert [(a["kind"], a["namespace"]) for a in out["applied"]][2:] == [("ConfigMap", n) for n in spaces]
    for n in spaces:
        assert kube.get("/api/v1/namespaces/%s/configmaps/same" % n)["data"] == {"any": n}
