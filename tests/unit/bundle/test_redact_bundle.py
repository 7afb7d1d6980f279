"""Redaction of a support bundle, tested as an attacker would: planted secrets of every kind of
issue 32 are searched in every byte of the bundle and its archive; the files keep their format;
the diagnosis of every bundle in tests/bundle_corpus is the same before and after redaction; bad
rules are refused before anything is collected; archives are written and read safely.

The planted bundle (tests/bundle_corpus/lab-node-1-planted-secrets) is the real lab-node-1 bundle
with secrets planted by tests/bundle_corpus/plant_secrets.py (PLANTED lists them). The live
version - a cluster, a Pod printing them, a node with registry auth - is
tests/cluster/test_support_bundle.py.
"""
import base64
import copy
import gzip
import io
import json
import os
import pathlib
import shutil
import stat
import sys
import tarfile
from lab_testing import ROOT  # tests/lab_testing.py

import pytest
import yaml

import gpu_bundle_collect
import gpu_bundle_node
import gpu_diagnose
from ansible.module_utils.bundle import contents
from ansible.module_utils.node import commands as node_commands
from ansible.module_utils.bundle import redact as br
from ansible.module_utils.bundle import redact_rules

try:
    import tomllib
except ImportError:  # pragma: no cover - the venv is Python 3.11
    tomllib = None

CORPUS = ROOT / "tests/bundle_corpus"
sys.path.insert(0, str(CORPUS))
import plant_secrets  # noqa: E402

PLANTED = plant_secrets.PLANTED
PLANTED_DIR = CORPUS / "lab-node-1-planted-secrets"
BUNDLES = sorted(p.name for p in CORPUS.iterdir() if (p / "bundle.json").is_file())
M = redact_rules.MARKER


def files_of(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def leaks(blob):
    """The planted values found in these bytes - as they are, and as base64 (registry auth is base64)."""
    found = []
    for key, value in PLANTED.items():
        if value.encode() in blob or base64.b64encode(value.encode()) in blob:
            found.append(key)
    return found


def redact_folder(engine, src, dest):
    """What the collector does to its files, applied to a bundle on disk; the report per file."""
    shutil.copytree(src, dest)
    report = {}
    for rel, data in files_of(dest).items():
        new, counts, note = engine.file(rel, data)
        assert note is None, (rel, note)
        (dest / rel).write_bytes(new)
        if counts:
            report[rel] = counts
    return report


# ----------------------------------------------------------------------------- the corpus
def test_every_planted_secret_is_hidden_and_each_file_keeps_its_format(tmp_path):
    before = b"".join(files_of(PLANTED_DIR).values())
    assert sorted(leaks(before)) == sorted(PLANTED)          # all planted, every one findable
    report = redact_folder(br.Redactor(), PLANTED_DIR, tmp_path / "b")
    after = files_of(tmp_path / "b")
    assert leaks(b"".join(after.values())) == []
    for rel, data in after.items():
        if rel.endswith(".json"):
            json.loads(data)
    node = "nodes/lab-node-1/"
    # TOML stays TOML: the same tables and keys, the registry's values the marker
    dump_before = tomllib.loads((PLANTED_DIR / node / "containerd-config-dump.toml").read_text())
    dump_after = tomllib.loads(after[node + "containerd-config-dump.toml"].decode())
    registry = dump_after["plugins"]["io.containerd.grpc.v1.cri"]["registry"]
    assert registry["configs"]["nvcr.io"]["auth"] == {"auth": M, "identitytoken": M, "password": M, "username": M}
    assert registry["auths"]["https://registry.corp.example"] == {"auth": "", "identitytoken": "", "password": M,
                                                                  "username": M}
    assert registry["headers"] == {"Authorization": [M]}
    del dump_before["plugins"]["io.containerd.grpc.v1.cri"]["registry"]
    del dump_after["plugins"]["io.containerd.grpc.v1.cri"]["registry"]
    assert dump_after == dump_before                        # runtimes, BinaryName, everything else kept
    info = json.loads(after[node + "crictl-info.json"])["config"]["registry"]
    assert info["configs"]["nvcr.io"]["auth"] == {"auth": M, "identitytoken": M, "password": M, "username": M}
    assert info["headers"] == {"Authorization": [M]}
    # YAML inside a ConfigMap stays YAML, the token hidden, the rest as it was
    cms = json.loads(after["cluster/configmaps.json"])["items"]
    settings = [c for c in cms if c["metadata"]["name"] == "plugin-settings"][0]["data"]["config.yaml"]
    assert yaml.safe_load(settings) == {"version": "v1", "flags": {"migStrategy": "none"}, "metrics": {"token": M}}
    # the flag keeps its name, the line its shape
    pods = json.loads(after["cluster/pods.json"])["items"]
    plugin = [p for p in pods if p["metadata"]["name"] == "nvidia-device-plugin-daemonset-k7ndp"][0]
    assert plugin["spec"]["containers"][0]["args"] == ["--fail-on-init-error=false", "--db-password=" + M,
                                                       "--api-token", M]
    assert plugin["spec"]["containers"][0]["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    log = after["logs/kube-system/nvidia-device-plugin-daemonset-k7ndp.log"].decode()
    assert "connecting to postgres://%s@db.corp.example:5432/train\n" % M in log
    assert "-----BEGIN RSA PRIVATE KEY-----\n%s\n%s\n-----END RSA PRIVATE KEY-----\n" % (M, M) in log
    assert report[node + "containerd-config-dump.toml"] == {"registry-auth": 6, "registry-header": 1}
    assert report["logs/kube-system/nvidia-device-plugin-daemonset-k7ndp.log"] == {
        "url-credentials": 1, "http-auth-header": 1, "aws-access-key-id": 1, "aws-secret-key": 1,
        "pem-private-key": 1, "jwt": 1}


@pytest.mark.parametrize("name", BUNDLES)
def test_the_diagnosis_reads_a_redacted_bundle_as_the_unredacted_one(name, tmp_path, module_runner):
    """Every bundle of the corpus, each node and the Pod asked for: the whole result is the same."""
    src = CORPUS / name
    redact_folder(br.Redactor(), src, tmp_path / name)
    index = json.loads((src / "bundle.json").read_text())
    asked = [k[len("logs/"):-len(".log")] for k, v in index["files"].items()
             if k.startswith("logs/") and v.get("why") == "asked for"]
    targets = [{"node": n} for n in index["nodes"]] + [{"pod": p} for p in asked]
    assert targets
    for target in targets:
        results = []
        for folder in (src, tmp_path / name):
            out = module_runner(gpu_diagnose.main, dict(target, bundle=str(folder)))
            assert not out["failed"], out.get("msg")
            results.append(json.dumps(out, sort_keys=True).replace(str(folder), "BUNDLE"))
        assert results[0] == results[1], target


def test_what_the_diagnosis_reads_is_never_touched():
    """Every real artefact the diagnosis corpus holds (containerd 1.6/1.7/2.x dumps and crictl
    info, their logs, nvidia-smi, dmesg with Xid lines, device plugin logs, events): no rule fires."""
    engine = br.Redactor()
    seen = 0
    for path in sorted((ROOT / "tests/diagnosis_corpus").rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            assert engine.file(path.name, data) == (data, {}, None), path
            seen += 1
    assert seen > 20


def test_a_second_pass_hides_nothing_more(tmp_path):
    engine = br.Redactor()
    redact_folder(engine, PLANTED_DIR, tmp_path / "once")
    assert redact_folder(engine, tmp_path / "once", tmp_path / "twice") == {}
    assert files_of(tmp_path / "once") == files_of(tmp_path / "twice")


# ----------------------------------------------------------------------------- the rules, one by one
# containerd 1.6.20's own "Start cri plugin with config %+v" line (the corpus' containerd.log), its
# Registry part as it reads with registry auth set: Auths values and Configs' AuthConfig in Go's %+v
CRI_LINE = [line for line in (CORPUS / "lab-node-1-incident/nodes/lab-node-1/containerd.log").read_text().splitlines()
            if "Start cri plugin with config" in line][0]
EMPTY_REGISTRY = "Registry:{ConfigPath: Mirrors:map[] Configs:map[] Auths:map[] Headers:map[]}"
assert EMPTY_REGISTRY in CRI_LINE
GO_REGISTRY = ("Registry:{ConfigPath: Mirrors:map[] Configs:map[nvcr.io:{Auth:0xc0001a2b40 TLS:<nil>}] "
               "Auths:map[https://registry.corp:{Username:gouser1 Password:GO PW1 Auth:R09BVVRIMQ== "
               "IdentityToken:GOIDTOK1}] Headers:map[Authorization:[Basic R09IRFIx] X-Custom:[GOHDR1]]}")
GO_REGISTRY_HIDDEN = ("Registry:{ConfigPath: Mirrors:map[] Configs:map[nvcr.io:{Auth:0xc0001a2b40 TLS:<nil>}] "
                      "Auths:map[https://registry.corp:{Username:%s Password:%s Auth:%s IdentityToken:%s}] "
                      "Headers:map[Authorization:[%s] X-Custom:[%s]]}" % ((M,) * 6))


DOCKER_B64 = "eyJhdXRocyI6eyJudmNyLmlvIjp7ImF1dGgiOiJKRzloZFhSb2RHOXJaVzQ2UWpZMFVGY3gifX19"   # {"auths":...}
DOCKER_B64_PRETTY = ("ewogICJhdXRocyI6IHsKICAgICJudmNyLmlvIjogewogICAgICAiYXV0aCI6ICJKRzloZFhSb2RHOXJaVzQ2"
                     "UWpZMFVGY3kiCiAgICB9CiAgfQp9")                                          # indented


@pytest.mark.parametrize("text,expected,rule", [
    (CRI_LINE.replace(EMPTY_REGISTRY, GO_REGISTRY), CRI_LINE.replace(EMPTY_REGISTRY, GO_REGISTRY_HIDDEN),
     {"registry-auth": 4, "registry-header": 2}),
    ("I0101 remote_image.go:1] PullImage &AuthConfig{Username:u1,Password:HUNTER2PW,Auth:dXNl,"
     "ServerAddress:nvcr.io,IdentityToken:IDTOK,RegistryToken:,}",
     "I0101 remote_image.go:1] PullImage &AuthConfig{Username:%s,Password:%s,Auth:%s,"
     "ServerAddress:nvcr.io,IdentityToken:%s,RegistryToken:,}" % (M, M, M, M), {"registry-auth": 4}),
    ("auth config {Username:$oauthtoken Password:HUNTER2PW Auth: ServerAddress:nvcr.io}",
     "auth config {Username:$oauthtoken Password:%s Auth: ServerAddress:nvcr.io}" % M, "secret-field"),
    ("creds map[password:HUNTER2PW username:bob]", "creds map[password:%s username:bob]" % M, "secret-field"),
    ("DOCKER_CONFIG_JSON=" + DOCKER_B64 + " run", "DOCKER_CONFIG_JSON=%s run" % M, "registry-auth"),
    ("I0101 loaded " + DOCKER_B64_PRETTY + " from env", "I0101 loaded %s from env" % M, "registry-auth"),
    ("data:\n  .dockerconfigjson: " + DOCKER_B64 + "\n", "data:\n  .dockerconfigjson: %s\n" % M, "registry-auth"),
    ("data:\n  .dockercfg: not-base64-at-all\n", "data:\n  .dockercfg: %s\n" % M, "secret-field"),
    ('{".dockerconfigjson": "plain-value-1"}', '{".dockerconfigjson": "%s"}' % M, "secret-assignment"),
    ('"dockercfg.b64": "xyzvalue"', '"dockercfg.b64": "%s"' % M, "secret-assignment"),
    ('{"level":"info","env":[{"name":"DB_PASSWORD","value":"HUNTER2PW"},{"name":"MODE","value":"fast"}]}',
     '{"level":"info","env":[{"name":"DB_PASSWORD","value":"%s"},{"name":"MODE","value":"fast"}]}' % M, "secret-field"),
    ('{"value": "HUNTER3PW", "name": "API_TOKEN"}', '{"value": "%s", "name": "API_TOKEN"}' % M, "secret-field"),
    ('env="[{\\"name\\":\\"API_TOKEN\\",\\"value\\":\\"ESCTOK1\\"}]"',
     'env="[{\\"name\\":\\"API_TOKEN\\",\\"value\\":\\"%s\\"}]"' % M, "secret-field"),
    ("  env: [{name: DB_PASSWORD, value: HUNTER2PW}, {name: MODE, value: fast}]\nx: 1",
     "  env: [{name: DB_PASSWORD, value: %s}, {name: MODE, value: fast}]\nx: 1" % M, "secret-field"),
    ("env:\n- value: HUNTER2PW\n  name: DB_PASSWORD\n- value: fast\n  name: MODE\n",
     "env:\n- value: %s\n  name: DB_PASSWORD\n- value: fast\n  name: MODE\n" % M, "secret-field"),
    ("I0101 12:00:00.1 main.go:12] connecting with password: HUNTER2PW",
     "I0101 12:00:00.1 main.go:12] connecting with password: %s" % M, "secret-assignment"),
    ("login failed, db_password: 'two words' given", "login failed, db_password: '%s' given" % M, "secret-assignment"),
    ("2024-01-01 INFO using client secret: CS123 for sso", "2024-01-01 INFO using client secret: %s for sso" % M,
     "secret-assignment"),
    ("W main.go:1] ngc apiKey:  NGCKEY1, org: nv", "W main.go:1] ngc apiKey:  %s, org: nv" % M, "secret-assignment"),
    ("DBPASS=HUNTER2PW run", "DBPASS=%s run" % M, "secret-assignment"),
    ("ADMIN_PW=HUNTER3PW run", "ADMIN_PW=%s run" % M, "secret-assignment"),
    ('log {"token": ["TOKLIST1", "TOKLIST2"], "mode": ["a"]}', 'log {"token": ["%s", "%s"], "mode": ["a"]}' % (M, M),
     {"secret-assignment": 2}),
    ('req headers={\\"Authorization\\":[\\"Basic ESCHDR1\\"]}', 'req headers={\\"Authorization\\":[\\"Basic %s\\"]}' % M,
     "http-auth-header"),
    ('{"dsn":"postgres:\\/\\/bob:HUNTER2PW@db:5432\\/x"}', '{"dsn":"postgres:\\/\\/%s@db:5432\\/x"}' % M,
     "url-credentials"),
    ("registry: {url: nvcr.io, password: FLOWPW1}", "registry: {url: nvcr.io, password: %s}" % M, "secret-field"),
    ("a: 1\nngc: {apiKey: 'FLOW KEY2', org: nv}\n", "a: 1\nngc: {apiKey: '%s', org: nv}\n" % M, "secret-field"),
    ('args:\n  - --password\n  - LISTYAMLPW\n  - "--api-key"\n  - "LISTYAMLPW2"\n  - --mode\n  - fast\n',
     'args:\n  - --password\n  - %s\n  - "--api-key"\n  - "%s"\n  - --mode\n  - fast\n' % (M, M), {"secret-flag": 2}),
    ("command:\n- docker\n- login\n- -u\n- $oauthtoken\n- -p\n- YAMLLOGINPW\n- nvcr.io\n",
     "command:\n- docker\n- login\n- -u\n- $oauthtoken\n- -p\n- %s\n- nvcr.io\n" % M, "secret-flag"),
    ('"args": ["--password", "JSONTXTPW", "--mode", "--token", "JSONTXTPW2"]',
     '"args": ["--password", "%s", "--mode", "--token", "%s"]' % (M, M), {"secret-flag": 2}),
    ('"command": ["docker","login","-u","$oauthtoken","-p","LISTPW1","nvcr.io"]',
     '"command": ["docker","login","-u","$oauthtoken","-p","%s","nvcr.io"]' % M, "secret-flag"),
    ('msg="spec" args="[\\"--db-password\\", \\"ESCPW1\\"]"', 'msg="spec" args="[\\"--db-password\\", \\"%s\\"]"' % M,
     "secret-flag"),
    ("--password=hunter22 -v", "--password=%s -v" % M, "secret-flag"),
    ("--api-token abc123xyz --debug", "--api-token %s --debug" % M, "secret-flag"),
    ('--db-password "two words"', '--db-password "%s"' % M, "secret-flag"),
    ("--key k3y-v4lue", "--key %s" % M, "secret-flag"),
    ("DB_PASSWORD=s3cret run", "DB_PASSWORD=%s run" % M, "secret-assignment"),
    ("GET /x?access_token=abc123&page=2", "GET /x?access_token=%s&page=2" % M, "secret-assignment"),
    ('level=info env="MY_SECRET=xyz987"', 'level=info env="MY_SECRET=%s"' % M, "secret-assignment"),
    ('{"clientSecret": "cs-123456"}', '{"clientSecret": "%s"}' % M, "secret-assignment"),
    ('{"db": {"password": "nested-1"}}', '{"db": {"password": "%s"}}' % M, "secret-assignment"),
    ('cfg={"api_token":"nested-2"}', 'cfg={"api_token":"%s"}' % M, "secret-assignment"),
    ('log {\\"password\\":\\"esc-pass\\"} end', 'log {\\"password\\":\\"%s\\"} end' % M, "secret-assignment"),
    ("api_key = 'abc-123'", "api_key = '%s'" % M, "secret-assignment"),
    ("password: yaml-pass\nuser: bob\n", "password: %s\nuser: bob\n" % M, "secret-field"),
    ("token: |\n  line-one\n  line-two\nnext: kept\n", "token: |\n  %s\n  %s\nnext: kept\n" % (M, M), "secret-field"),
    ("env:\n- name: API_TOKEN\n  value: env-tok-1\n- name: MODE\n  value: fast\n",
     "env:\n- name: API_TOKEN\n  value: %s\n- name: MODE\n  value: fast\n" % M, "secret-field"),
    ("mysql://root:pw-9@db:3306/x", "mysql://%s@db:3306/x" % M, "url-credentials"),
    ("redis://:only-pw-1@cache:6379/0", "redis://%s@cache:6379/0" % M, "url-credentials"),
    ("PGPASSWORD='two words' psql -h db", "PGPASSWORD='%s' psql -h db" % M, "secret-assignment"),
    ("MYSQL_PWD=pw-77 mysql", "MYSQL_PWD=%s mysql" % M, "secret-assignment"),
    ('{"githubToken": "ghp_x1"}', '{"githubToken": "%s"}' % M, "secret-assignment"),
    ("docker login -u me -p hunter33 nvcr.io", "docker login -u me -p %s nvcr.io" % M, "secret-flag"),
    ("helm registry login reg.example --username u -p=pw-5", "helm registry login reg.example --username u -p=%s" % M,
     "secret-flag"),
    ("mysql -u root -pMyPass123 app", "mysql -u root -p%s app" % M, "secret-flag"),
    ("pulling with key nvapi-" + "A2p0J7jEUTGOyxcj20NMsKZs6vv_5pQBNvPpAxtrgnw" + " now",
     "pulling with key %s now" % M, "known-token"),
    ("cloned with ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + " ok", "cloned with %s ok" % M, "known-token"),
    ("hf_" + "abcdefghijklmnopqrstuvwxyzABCDEFGH", M, "known-token"),
    ("slack xoxb-" + "123456789012-1234567890123-AbCdEfGh" + " posted", "slack %s posted" % M, "known-token"),
    ("https://u:p%40ss@host/path", "https://%s@host/path" % M, "url-credentials"),
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic %s" % M, "http-auth-header"),
    ("curl -H 'authorization: Bearer tok-abcdefghijklmnop'", "curl -H 'authorization: Bearer %s'" % M,
     "http-auth-header"),
    ("sent bearer abcdefghijklmnopqrstuv", "sent bearer %s" % M, "http-auth-header"),
    ("Cookie: session=abc123; theme=dark", "Cookie: %s" % M, "http-auth-header"),
    ("id AKIAIOSFODNN7EXAMPLE", "id %s" % M, "aws-access-key-id"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-part_1", M, "jwt"),
    ("-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBg\\n-----END PRIVATE KEY-----",
     "-----BEGIN PRIVATE KEY-----%s-----END PRIVATE KEY-----" % M, "pem-private-key"),
    ("I0101 key follows\nEAHUNTERPEMBODY1xxxxxxxxxxxxxxxx\nHUNTERPEMBODY2yyyyyyyyyyyy==\n-----END RSA PRIVATE KEY-----\nnext\n",
     "I0101 key follows\n%s\n%s\n-----END RSA PRIVATE KEY-----\nnext\n" % (M, M), "pem-private-key"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\ncut here", "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n%s" % (M, M),
     "pem-private-key"),
])
def test_a_built_in_rule_hides_the_value_and_keeps_the_rest(text, expected, rule):
    counts = {}
    out = br.Redactor().text(text, lambda r, n=1: counts.__setitem__(r, counts.get(r, 0) + n))
    assert (out, counts) == (expected, rule if isinstance(rule, dict) else {rule: 1})
    again = {}
    assert br.Redactor().text(out, lambda r, n=1: again.__setitem__(r, 1)) == out and again == {}   # a second pass


@pytest.mark.parametrize("text", [
    'time="2026-12-01T22:00:00Z" level=error msg="failed to load plugin io.containerd.grpc.v1.cri" '
    'error="invalid plugin config: no corresponding runtime configured in containerd.runtimes for containerd '
    'default_runtime_name = \\"runc\\""',
    'Warning  FailedCreatePodSandBox  failed to get sandbox runtime: no runtime for "nvidia" is configured',
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
    "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available",
    'BinaryName = "/usr/bin/nvidia-container-runtime"',
    "image: nvcr.io/nvidia/k8s-device-plugin:v0.20.0@sha256:" + "ab12" * 16,
    "tolerations:\n- key: nvidia.com/gpu\n  operator: Exists\n",
    "secretKeyRef: {name: creds, key: token}",
    "Failed to initialize NVML: Driver/library version mismatch",
    "key_model = \"node\"\ntls_key_file = \"\"\nburstTokens=10",
    "git commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "PWD=/root HOME=/root",
    "mysql -u root -p app",
    "kubectl port-forward -p 8080 svc/x",
    "https://user@registry.example/v2/",
    "automountServiceAccountToken: false",
    "mkfs on /dev/disk-by-id/nvme-Samsung_SSD_980_PRO_1TB_S5GXNX0T123456",
    "container gpu-burn-sk-test started",
    "args:\n- --password-file\n- /etc/pw\n- --token\n- --verbose\n",
    '"args": ["--mode", "fast", "--token-file", "/run/t", "-p", "8080"]',
    "command:\n- kubectl\n- port-forward\n- -p\n- '8080'\n",
    "type: kubernetes.io/dockerconfigjson",
    '[{"name":"MODE","value":"fast"},{"value":"x","name":"TOKEN_FILE"}]',
    "env:\n- value: fast\n  name: MODE\n- name: TOKEN_PATH\n  value: /run/t\n",
    "limits: {nvidia.com/gpu: 1, memory: 2Gi}",
    "I0501 gpu-operator validator: driver-validation: token: auth token missing, retrying",
    "W0501 reading credentials: every node, auth: none, password-file: /etc/pw",
    "I0501 password: <redacted>",
    "cat ~/ngc.key | docker login --password-stdin nvcr.io -u $oauthtoken",
    "--kubelet-client-key=/etc/kubernetes/pki/apiserver-kubelet-client.key",
    '--image-credential-provider-config="/etc/kubernetes/credential-provider.yaml"',
    "kubeadm join 10.0.0.1:6443 --discovery-token-ca-cert-hash sha256:" + "12ab" * 16,
    "GPU_BYPASS=on COMPASS=north",
    # containerd's own words for an NGC pull without credentials (containerd.log, events, Pod status)
    'time="2024-05-01T10:00:00Z" level=error msg="PullImage failed" error="failed to resolve reference: pull access '
    'denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials"',
    "Failed to pull image: pull access denied, repository does not exist or may require authorization: server "
    "message: insufficient_scope: authorization failed",
    "data: eyJhcGlWZXJzaW9uIjoidjEiLCJraW5kIjoiQ29uZmlnTWFwIiwiZGF0YSI6e319",   # base64 JSON, no auths
])
def test_what_the_diagnosis_needs_stays(text):
    counts = {}
    assert br.Redactor().text(text, lambda r, n=1: counts.__setitem__(r, 1)) == text and counts == {}


def test_json_objects_keep_references_and_hide_secret_fields():
    doc = {"env": [{"name": "A_TOKEN", "value": "t-1"}, {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}}}],
           "volumes": [{"secret": {"secretName": "creds"}}], "automountServiceAccountToken": True,
           "imagePullSecrets": [{"name": "regcred"}], "tolerations": [{"key": "nvidia.com/gpu"}],
           "command": ["app", "--password", "pw-2", "--mode", "x"], "headers": {"X-Api-Key": "k-3", "Accept": "json"},
           "annotations": {"vault.example.com/client-secret": "cs-4"}}
    counts = {}
    out = br.Redactor().json_doc(copy.deepcopy(doc), lambda r, n=1: counts.__setitem__(r, counts.get(r, 0) + n))
    expected = copy.deepcopy(doc)
    expected["env"][0]["value"] = M
    expected["command"][2] = M
    expected["headers"]["X-Api-Key"] = M
    expected["annotations"]["vault.example.com/client-secret"] = M
    assert out == expected
    assert counts == {"secret-field": 2, "secret-flag": 1, "http-auth-header": 1}


def test_a_secret_named_json_key_with_a_list_of_strings_is_hidden():
    counts = {}
    doc = {"token": ["t-1", "t-2"], "imagePullSecrets": [{"name": "regcred"}], "keys": ["a"]}
    out = br.Redactor().json_doc(doc, lambda r, n=1: counts.__setitem__(r, counts.get(r, 0) + n))
    assert out == {"token": [M, M], "imagePullSecrets": [{"name": "regcred"}], "keys": ["a"]}
    assert counts == {"secret-field": 2}


def test_a_registry_login_in_a_json_list_hides_its_password():
    counts = {}
    doc = {"command": ["docker", "login", "-u", "$oauthtoken", "-p", "LISTPW1", "nvcr.io"], "args": ["-p", "8080"]}
    out = br.Redactor().json_doc(doc, lambda r, n=1: counts.__setitem__(r, counts.get(r, 0) + n))
    assert out == {"command": ["docker", "login", "-u", "$oauthtoken", "-p", M, "nvcr.io"], "args": ["-p", "8080"]}
    assert counts == {"secret-flag": 1}


def test_toml_inline_tables_and_arrays_stay_toml():
    text = ('[plugins."io.containerd.grpc.v1.cri".registry.configs."r.example"]\n'
            '  auth = { username = "u-1", password = "p-2" }\n'
            '[plugins."io.containerd.grpc.v1.cri".registry.headers]\n'
            '  Authorization = [\n    "Bearer h-3",\n  ]\n  X-Trace = [\'lit-4\']\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
            '  BinaryName = "/usr/bin/nvidia-container-runtime"\n  Env = ["HTTPS_PROXY=http://pu:pp-5@proxy:3128"]\n')
    counts = {}
    out = br.Redactor().toml(text, lambda r, n=1: counts.__setitem__(r, counts.get(r, 0) + n))
    doc = tomllib.loads(out)["plugins"]["io.containerd.grpc.v1.cri"]
    assert doc["registry"]["configs"]["r.example"]["auth"] == {"username": M, "password": M}
    assert doc["registry"]["headers"] == {"Authorization": [M], "X-Trace": [M]}
    assert doc["containerd"]["runtimes"]["nvidia"]["options"] == {
        "BinaryName": "/usr/bin/nvidia-container-runtime", "Env": ["HTTPS_PROXY=http://%s@proxy:3128" % M]}
    assert counts == {"registry-auth": 2, "registry-header": 2, "url-credentials": 1}


def test_hosts_toml_headers_are_registry_headers():
    text = ('server = "https://nvcr.io"\n[host."https://nvcr.io"]\n  capabilities = ["pull", "resolve"]\n'
            '  [host."https://nvcr.io".header]\n    Authorization = ["Basic SEFTSA=="]\n    x-custom = "CUSTOMHDRVAL"\n')
    data, counts, _note = br.Redactor().file("nodes/n/hosts.toml", text.encode())
    doc = tomllib.loads(data.decode())
    assert doc["host"]["https://nvcr.io"] == {"capabilities": ["pull", "resolve"],
                                              "header": {"Authorization": [M], "x-custom": M}}
    assert doc["server"] == "https://nvcr.io" and counts == {"registry-header": 2}


# ----------------------------------------------------------------------------- user rules
def test_user_rules_add_to_the_built_in_ones_and_never_show_their_values():
    engine = br.Redactor([{"name": "license", "literal": "lic-7f3a9c2e1b"},
                          {"name": "ticket", "regex": r"TICKET-(?P<mask>[0-9]+)", "files": ["logs/*"]}])
    data, counts, _note = engine.file("logs/ns/p.log", b"lic-7f3a9c2e1b TICKET-42 TICKET-x\n")
    assert data == ("%s TICKET-%s TICKET-x\n" % (M, M)).encode() and counts == {"license": 1, "ticket": 1}
    data, counts, _note = engine.file("nodes/n/kubelet.log", b"TICKET-42 lic-7f3a9c2e1b\n")
    assert data == ("TICKET-42 %s\n" % M).encode() and counts == {"license": 1}     # ticket: logs/* only
    data, counts, _note = engine.file("cluster/pods.json", b'{"a": ["lic-7f3a9c2e1b"]}\n')
    assert json.loads(data) == {"a": [M]}
    described = json.dumps(engine.describe())
    assert "lic-7f3a9c2e1b" not in described and "TICKET" not in described
    assert {"name": "ticket", "kind": "regex", "files": ["logs/*"]} in engine.describe()


@pytest.mark.parametrize("rules,words", [
    ([{"name": "bad-re", "regex": "TICKET-["}], "redact[0] (rule bad-re): the regex does not compile: unterminated character set at position 7"),
    ([{"name": "ok", "literal": "abcd"}, {"name": "empty", "regex": "x*"}], "redact[1] (rule empty): the regex matches the empty string"),
    ([{"name": "short", "literal": "ab"}], "redact[0] (rule short): literal must be a string of at least 4"),
    ([{"name": "both", "literal": "abcd", "regex": "ab"}], "give exactly one of literal"),
    ([{"name": "neither"}], "give exactly one of literal"),
    ([{"literal": "abcd"}], "redact[0]: give the rule a name"),
    ([{"name": "a", "literal": "abcd"}, {"name": "a", "literal": "efgh"}], "a rule named a comes earlier"),
    ([{"name": "jwt", "literal": "abcd"}], "jwt is a built-in rule's name"),
    ([{"name": "x", "pattern": "abcd"}], "unknown key pattern"),
    ([{"name": "x", "literal": "abcd", "files": "logs/*"}], "files must be a list of globs"),
    (["abcd"], "redact[0] must be a mapping"),
])
def test_a_bad_rule_is_refused_naming_it_and_the_fix(rules, words):
    with pytest.raises(redact_rules.RedactError) as refused:
        br.Redactor(rules)
    assert words in refused.value.message


def test_a_bad_rule_stops_the_node_side_before_any_command_runs(tmp_path, monkeypatch, module_runner):
    ran = tmp_path / "ran"
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("crictl", "containerd", "dmesg", "nvidia-smi", "systemctl", "journalctl"):
        (tools / name).write_text("#!/bin/sh\necho %s >> %s\n" % (name, ran))
        (tools / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.setattr(node_commands, "which", lambda n: str(tools / n) if (tools / n).exists() else None)
    out = module_runner(gpu_bundle_node.main, {"redact": [{"name": "t", "regex": "(unclosed"}], "driver_root": ""})
    assert out["failed"] and "rule t" in out["msg"] and "does not compile" in out["msg"]
    assert "nothing was collected" in out["msg"] and "gpu_support_bundle_redact" in out["msg"]
    assert not ran.exists()
    out = module_runner(gpu_bundle_node.main, {"driver_root": "", "socket_dir": str(tmp_path / "none")})
    assert not out["failed"] and ran.read_text()          # the same tools run when the rules are good


def test_a_failed_toml_or_json_commands_output_in_the_index_is_redacted_in_its_format(monkeypatch):
    """A failed `containerd config dump` keeps its output's end in bundle.json: cut at the top, the
    registry's auth and headers hidden as in the file itself."""
    from ansible.module_utils.bundle import node_side
    toml_out = ('io.containerd.grpc.v1.cri".registry.configs."nvcr.io".auth]\n  username = "IDXUSER"\n'
                '  password = "IDXPW"\n[plugins."io.containerd.grpc.v1.cri".registry.headers]\n'
                '  Authorization = [\n    "Basic IDXHDR"\n  ]\n  X-Org = ["IDXORG"]\n\ncontainerd: exit status 1')
    json_out = '{"config": {"registry": {"configs": {"nvcr.io": {"auth": {"username": "IDXUSER2", "password": "IDXPW2"}}}}}}'
    index = {"containerd-config-dump.toml": {"status": "failed", "rc": 1, "output": toml_out},
             "crictl-info.json": {"status": "failed", "rc": 1, "output": json_out},
             "containerd.log": {"status": "collected", "rc": 0}}
    monkeypatch.setattr(node_side, "collect", lambda options: {"files": {}, "index": copy.deepcopy(index)})
    out = node_side.node_result({"node_name": "n"})
    text = json.dumps(out["index"])
    assert [v for v in ("IDXUSER", "IDXPW", "IDXHDR", "IDXORG") if v in text] == []
    dump = out["index"]["containerd-config-dump.toml"]["output"]
    assert dump == toml_out.replace("IDXUSER", M).replace("IDXPW", M).replace("Basic IDXHDR", M).replace("IDXORG", M)
    assert json.loads(out["index"]["crictl-info.json"]["output"])["config"]["registry"]["configs"]["nvcr.io"] == \
        {"auth": {"username": M, "password": M}}
    assert out["redactions"]["index"] == {"registry-auth": 4, "registry-header": 2}


def test_a_bad_rule_stops_the_collector_before_the_cluster_is_read(tmp_path, module_runner):
    for args in ({}, {"validate_only": True}):
        out = module_runner(gpu_bundle_collect.main, dict(args, kubeconfig=str(tmp_path / "none"),
                                                          dest=str(tmp_path / "b"),
                                                          redact=[{"name": "x", "regex": "a**"}]))
        assert out["failed"] and "rule x" in out["msg"] and "kubeconfig" not in out["msg"], out["msg"]
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- the collector, whole
class FakeKube(object):
    """The API server's answers for the collector: lists and Pod logs, from a dict."""

    def __init__(self, lists, logs):
        self.lists, self.logs, self.conf = lists, logs, {"server": "https://127.0.0.1:6443"}

    def items(self, path):
        return copy.deepcopy(self.lists.get(path, []))

    def get_text(self, path, params):
        return self.logs.get(path.split("/")[-2], "").encode()


def planted_cluster():
    pods = json.loads((PLANTED_DIR / "cluster/pods.json").read_text())["items"]
    for pod in pods:
        if pod["metadata"]["name"] == "nvidia-device-plugin-daemonset-k7ndp":
            pod["spec"]["containers"][0]["env"] = [{"name": "HF_TOKEN", "value": "planted-env-token-9"}]
            pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = \
                json.dumps({"env": "planted-last-applied-10"})
    lists = {"/api/v1/pods": pods}
    for rel, path, _v, _k, _c in contents.CLUSTER_FILES:
        if path not in lists:
            # the corpus was collected before bundles held DRA's kinds: that cluster had none
            lists[path] = json.loads((PLANTED_DIR / rel).read_text())["items"] if (PLANTED_DIR / rel).exists() else []
    log = (PLANTED_DIR / "logs/kube-system/nvidia-device-plugin-daemonset-k7ndp.log").read_text()
    return FakeKube(lists, {"nvidia-device-plugin-daemonset-k7ndp": log + "license lic-7f3a9c2e1b\n"})


def node_side(module_runner, tmp_path, monkeypatch, rules):
    """gpu_bundle_node over fake tools that print the planted node files (crictl info, config dump, logs)."""
    node = PLANTED_DIR / "nodes/lab-node-1"
    tools = tmp_path / "tools"
    tools.mkdir()
    for name, source in (("crictl", "crictl-info.json"), ("containerd", "containerd-config-dump.toml")):
        (tools / name).write_text("#!/bin/sh\ncat %s\n" % (node / source))
        (tools / name).chmod(0o755)
    monkeypatch.setattr(node_commands, "which", lambda n: str(tools / n) if (tools / n).exists() else None)
    out = module_runner(gpu_bundle_node.main, {"driver_root": "", "socket_dir": str(tmp_path / "none"), "kubelet_log":
                                               str(node / "kubelet.log"), "containerd_log": str(node / "containerd.log"),
                                               "node_name": "lab-node-1", "redact": rules}, check_mode=True)
    assert not out["failed"], out.get("msg")
    return out


def test_a_bundle_from_the_collector_holds_no_planted_value_in_any_byte(tmp_path, monkeypatch, module_runner):
    rules = [{"name": "license", "literal": "lic-7f3a9c2e1b"}]
    extra = ["planted-env-token-9", "planted-last-applied-10", "lic-7f3a9c2e1b"]
    node = node_side(module_runner, tmp_path, monkeypatch, rules)
    travelled = json.dumps(node).encode() + b"".join(base64.b64decode(v) for v in node["files"].values())
    assert leaks(travelled) == [], "the node side sends secrets to the controller"
    assert node["redactions"]["files"]["crictl-info.json"] == {"registry-auth": 6, "registry-header": 1}
    monkeypatch.setattr("ansible.module_utils.kube.client.client", lambda kubeconfig, context=None: planted_cluster())
    dest = tmp_path / "bundle"
    out = module_runner(gpu_bundle_collect.main, {
        "kubeconfig": "unused", "dest": str(dest), "archive": True, "redact": rules,
        "pods": ["kube-system/nvidia-device-plugin-daemonset-k7ndp"],
        "nodes": {"lab-node-1": {"files": node["files"], "index": node["index"], "redactions": node["redactions"]}}})
    assert not out["failed"], out.get("msg")
    archive = pathlib.Path(str(dest) + ".tar.gz")
    assert out["archive"] == str(archive)
    # every byte: the folder, the archive as sent, the archive unpacked (names and headers too)
    everything = b"".join(files_of(dest).values()) + archive.read_bytes() + gzip.decompress(archive.read_bytes())
    for value in list(PLANTED.values()) + extra:
        assert value.encode() not in everything, value
    assert leaks(everything) == []
    assert "lic-7f3a9c2e1b" not in json.dumps(out)
    # the report: per file, which rule hid how many; never a value; one line to say it
    report = json.loads((dest / "bundle.json").read_text())["redactions"]
    files = report["files"]
    assert files["nodes/lab-node-1/containerd-config-dump.toml"] == {"registry-auth": 6, "registry-header": 1}
    assert files["logs/kube-system/nvidia-device-plugin-daemonset-k7ndp.log"] == {
        "url-credentials": 1, "http-auth-header": 1, "aws-access-key-id": 1, "aws-secret-key": 1,
        "pem-private-key": 1, "jwt": 1, "license": 1}
    assert files["cluster/pods.json"]["env-value"] >= 1 and files["cluster/pods.json"]["last-applied"] == 1
    assert files["cluster/pods.json"]["secret-flag"] == 2
    assert report["values"] == sum(sum(c.values()) for c in files.values())
    assert report["files_with_values"] == len(files)
    assert {"name": "license", "kind": "literal", "files": ["*"]} in report["rules"]
    assert out["redacted"] == "%d values hidden in %d files (which rule hid how many, per file: %s, redactions)" % (
        report["values"], report["files_with_values"], dest / "bundle.json")
    # the archive: 0600, one relative folder, regular files and folders only, what the folder holds
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        assert all(m.name.split("/")[0] == "bundle" and not m.name.startswith("/") and ".." not in m.name.split("/")
                   for m in members)
        assert all(m.isfile() or m.isdir() for m in members) and all(m.uname == "" and m.uid == 0 for m in members)
        packed = {m.name[len("bundle/"):]: tar.extractfile(m).read() for m in members if m.isfile()}
    assert packed == files_of(dest)
    # gpu_diagnose reads the archive as it reads the folder
    results = []
    for given in (dest, archive):
        res = module_runner(gpu_diagnose.main, {"bundle": str(given), "node": "lab-node-1"})
        assert not res["failed"], res.get("msg")
        results.append(res)
    assert results[0]["layers"] == results[1]["layers"] and results[0]["first_broken"] == "container-runtime"
    assert results[0]["report"] == results[1]["report"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_archive_is_kept_like_the_folder(tmp_path, monkeypatch, module_runner):
    monkeypatch.setattr("ansible.module_utils.kube.client.client", lambda kubeconfig, context=None: planted_cluster())
    dest = tmp_path / "b"
    archive = tmp_path / "b.tar.gz"
    archive.write_bytes(b"mine")
    args = {"kubeconfig": "unused", "dest": str(dest), "archive": True, "logs": False}
    out = module_runner(gpu_bundle_collect.main, args)
    assert out["failed"] and "b.tar.gz already exists" in out["msg"] and "force" in out["msg"]
    assert archive.read_bytes() == b"mine" and not dest.exists()
    out = module_runner(gpu_bundle_collect.main, dict(args, validate_only=True))
    assert out["failed"] and "already exists" in out["msg"]
    out = module_runner(gpu_bundle_collect.main, dict(args, force=True))
    assert not out["failed"] and tarfile.is_tarfile(str(archive))
    out = module_runner(gpu_bundle_collect.main, args)                     # a bundle there: kept, both
    assert not out["failed"] and out["kept"] and not out["changed"] and "and %s" % archive in out["msg"]
    out = module_runner(gpu_bundle_collect.main, dict(args, validate_only=True, dest=str(tmp_path / "new")))
    assert not out["failed"] and not out["changed"] and "is free" in out["msg"] and not (tmp_path / "new").exists()


# ----------------------------------------------------------------------------- reading archives safely
def evil_archive(path, kind):
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("b/bundle.json")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
        if kind == "absolute":
            info = tarfile.TarInfo("/tmp/evil-abs")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
        elif kind == "dotdot":
            info = tarfile.TarInfo("b/../../evil-dotdot")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
        elif kind in ("symlink", "hardlink"):
            info = tarfile.TarInfo("b/cluster")
            info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
            info.linkname = "/etc"
            tar.addfile(info)
        elif kind == "fifo":
            info = tarfile.TarInfo("b/pipe")
            info.type = tarfile.FIFOTYPE
            tar.addfile(info)


@pytest.mark.parametrize("kind,words", [("absolute", "an absolute name"), ("dotdot", "'..' in its name"),
                                        ("symlink", "a link (to /etc)"), ("hardlink", "a link (to /etc)"),
                                        ("fifo", "not a file or folder")])
def test_an_archive_with_a_way_out_is_refused(tmp_path, module_runner, kind, words):
    path = tmp_path / ("evil-%s.tar.gz" % kind)
    evil_archive(path, kind)
    out = module_runner(gpu_diagnose.main, {"bundle": str(path), "node": "n"})
    assert out["failed"] and words in out["msg"] and str(path) in out["msg"]
    assert not os.path.lexists("/tmp/evil-abs") and not (tmp_path.parent / "evil-dotdot").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_file_that_is_no_archive_is_named(tmp_path, module_runner):
    path = tmp_path / "notes.txt"
    path.write_text("not a bundle")
    out = module_runner(gpu_diagnose.main, {"bundle": str(path), "node": "n"})
    assert out["failed"] and "is not a tar archive" in out["msg"] and str(path) in out["msg"]


# ----------------------------------------------------------------------------- containerd's own dump
def test_containerd_dumps_registry_auth_as_planted(containerd_oracle, tmp_path):
    """The real containerd 1.6.20 `config dump` of a config with registry auth: the planted
    bundle's registry section has its shape, and redacting the real dump hides every value."""
    import subprocess
    config = tmp_path / "config.toml"
    config.write_text('version = 2\nroot = "%s/root"\nstate = "%s/state"\n'
                      '[plugins."io.containerd.grpc.v1.cri".registry.configs."nvcr.io".auth]\n'
                      '  username = "$oauthtoken"\n  password = "%s"\n  auth = "%s"\n  identitytoken = "%s"\n'
                      '[plugins."io.containerd.grpc.v1.cri".registry.auths."https://registry.corp.example"]\n'
                      '  username = "%s"\n  password = "%s"\n'
                      '[plugins."io.containerd.grpc.v1.cri".registry.headers]\n  Authorization = ["Bearer %s"]\n'
                      % (tmp_path, tmp_path, PLANTED["registry-password"], PLANTED["registry-auth"],
                         PLANTED["registry-identitytoken"], PLANTED["registry-auths-user"],
                         PLANTED["registry-auths-password"], PLANTED["registry-header"]))
    dump = subprocess.run([containerd_oracle, "--config", str(config), "config", "dump"], capture_output=True,
                          text=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    real = [line.rstrip() for line in dump.stdout.splitlines()]
    planted = [line.rstrip() for line in plant_secrets.registry_toml().splitlines()]
    assert [line for line in planted if line and line not in real] == []
    data, counts, _note = br.Redactor().file("nodes/n/containerd-config-dump.toml", dump.stdout.encode())
    assert leaks(data) == [] and counts == {"registry-auth": 6, "registry-header": 1}
    assert tomllib.loads(data.decode())["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["headers"] == \
        {"Authorization": [M]}
