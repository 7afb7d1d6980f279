"""Builds tests/bundle_corpus/lab-node-1-planted-secrets from lab-node-1-incident: the real bundle
with a secret of every kind issue 32 names planted where it turns up on a real node - registry
auth in containerd's config dump and crictl info, container args, a GPU-stack ConfigMap (kept
unredacted by the object rules), annotations, Pod, containerd and kubelet log lines.

    .venv/bin/python tests/bundle_corpus/plant_secrets.py      # rewrites the planted bundle

PLANTED lists every planted value (tests import it and search every byte for each). The
registry sections follow the shapes of containerd 1.6.20 (config dump: go-toml, tables indented,
keys sorted, as in lab-node-1-incident's dump; crictl info: the CRI config's json tags,
pkg/cri/config AuthConfig username/password/auth/identitytoken, Registry.Headers
map[string][]string). tests/test_redact_bundle.py::test_containerd_dumps_registry_auth_as_planted
checks the TOML shape against the real containerd 1.6.20 where it is built (make oracle).
"""
import json
import pathlib
import shutil

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE / "lab-node-1-incident"
TARGET = HERE / "lab-node-1-planted-secrets"
NODE = "nodes/lab-node-1/"

NGC_KEY = "nvapi-PLANTEDngcKey7Q2x9wLmZ0"
PEM_BODY = ["MIIEowIBAAKCAQEAplantedPEMbodyLine1xQ9v8mZrT3kYw0bN7cJdLpS2uE5hGf",
            "plantedPEMbodyLine2aB4cD6eF8gH0iJ2kL4mN6oP8qR0sT2uV4wX6yZ8aB0cD2"]
JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6InBsYW50ZWQifQ.eyJzdWIiOiJwbGFudGVkLWp3dCJ9.cGxhbnRlZC1qd3Qtc2lnbmF0dXJl"
AWS_ID = "AKIAPLANTED0EXAMPLE1"
AWS_SECRET = "pLaNtEdAwSsEcReT0123456789abcdefGHIJ/+xy"
PLANTED = {
    "registry-password": NGC_KEY,
    "registry-auth": "cGxhbnRlZC11c2VyOnBsYW50ZWQtcGFzcw==",
    "registry-identitytoken": "PLANTED-identity-token-4k8d",
    "registry-auths-user": "planted-corp-user",
    "registry-auths-password": "planted-corp-pass-91",
    "registry-header": "planted-registry-header-token-88",
    "arg-password": "planted-arg-pass-1",
    "arg-token": "planted-arg-token-2",
    "url-user": "planted_url_user",
    "url-password": "planted-url-pass-3",
    "cm-token": "planted-cm-token-5",
    "annotation-token": "planted-annotation-token-6",
    "annotation-json-password": "planted-annotation-json-pass",
    "log-bearer": "plantedBearerToken4abcdefXYZ",
    "log-password": "planted-log-pass-7",
    "kubelet-token": "planted-kubelet-token-8",
    "aws-id": AWS_ID,
    "aws-secret": AWS_SECRET,
    "pem-line-1": PEM_BODY[0],
    "pem-line-2": PEM_BODY[1],
    "jwt": JWT,
}
assert len(AWS_SECRET) == 40

REGISTRY_TOML = '''    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""

      [plugins."io.containerd.grpc.v1.cri".registry.auths]

        [plugins."io.containerd.grpc.v1.cri".registry.auths."https://registry.corp.example"]
          auth = ""
          identitytoken = ""
          password = "{auths-password}"
          username = "{auths-user}"

      [plugins."io.containerd.grpc.v1.cri".registry.configs]

        [plugins."io.containerd.grpc.v1.cri".registry.configs."nvcr.io"]

          [plugins."io.containerd.grpc.v1.cri".registry.configs."nvcr.io".auth]
            auth = "{auth}"
            identitytoken = "{identitytoken}"
            password = "{password}"
            username = "$oauthtoken"

      [plugins."io.containerd.grpc.v1.cri".registry.headers]
        Authorization = ["Bearer {header}"]

      [plugins."io.containerd.grpc.v1.cri".registry.mirrors]
'''
EMPTY_REGISTRY = '''    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""

      [plugins."io.containerd.grpc.v1.cri".registry.auths]

      [plugins."io.containerd.grpc.v1.cri".registry.configs]

      [plugins."io.containerd.grpc.v1.cri".registry.headers]

      [plugins."io.containerd.grpc.v1.cri".registry.mirrors]
'''


def registry_toml():
    return (REGISTRY_TOML.replace("{auths-password}", PLANTED["registry-auths-password"])
            .replace("{auths-user}", PLANTED["registry-auths-user"]).replace("{auth}", PLANTED["registry-auth"])
            .replace("{identitytoken}", PLANTED["registry-identitytoken"])
            .replace("{password}", PLANTED["registry-password"]).replace("{header}", PLANTED["registry-header"]))


def registry_json():
    return {"auths": {"https://registry.corp.example": {
        "auth": "", "identitytoken": "", "password": PLANTED["registry-auths-password"],
        "username": PLANTED["registry-auths-user"]}},
        "configPath": "",
        "configs": {"nvcr.io": {"auth": {"auth": PLANTED["registry-auth"],
                                         "identitytoken": PLANTED["registry-identitytoken"],
                                         "password": PLANTED["registry-password"], "username": "$oauthtoken"},
                                "tls": None}},
        "headers": {"Authorization": ["Bearer " + PLANTED["registry-header"]]},
        "mirrors": None}


POD_LOG = """\
connecting to postgres://{url-user}:{url-password}@db.corp.example:5432/train
GET /v2/models HTTP/1.1 Authorization: Bearer {log-bearer}
exporting AWS_ACCESS_KEY_ID={aws-id} AWS_SECRET_ACCESS_KEY={aws-secret}
loaded key:
-----BEGIN RSA PRIVATE KEY-----
{pem-line-1}
{pem-line-2}
-----END RSA PRIVATE KEY-----
service account token {jwt}
"""


def fill(text):
    for key, value in PLANTED.items():
        text = text.replace("{%s}" % key, value)
    return text


def dump(doc, indent):
    return json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"


def main():
    if TARGET.exists():
        shutil.rmtree(TARGET)
    shutil.copytree(SOURCE, TARGET)
    (TARGET / "SOURCE.md").unlink()
    toml = TARGET / NODE / "containerd-config-dump.toml"
    text = toml.read_text()
    assert EMPTY_REGISTRY in text
    toml.write_text(text.replace(EMPTY_REGISTRY, registry_toml()))
    info_path = TARGET / NODE / "crictl-info.json"
    info = json.loads(info_path.read_text())
    info["config"]["registry"] = registry_json()
    info_path.write_text(dump(info, 2))

    pods_path = TARGET / "cluster/pods.json"
    pods = json.loads(pods_path.read_text())
    for pod in pods["items"]:
        meta = pod["metadata"]
        if meta["name"].startswith("nvidia-device-plugin-daemonset-k7ndp"):
            ctr = pod["spec"]["containers"][0]
            ctr["args"] = ["--fail-on-init-error=false", "--db-password=" + PLANTED["arg-password"],
                           "--api-token", PLANTED["arg-token"]]
            meta.setdefault("annotations", {})["example.com/api-token"] = PLANTED["annotation-token"]
            meta["annotations"]["example.com/settings"] = json.dumps({"password": PLANTED["annotation-json-password"]})
    pods_path.write_text(dump(pods, 4))

    cms_path = TARGET / "cluster/configmaps.json"
    cms = json.loads(cms_path.read_text())
    cms["items"].append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "plugin-settings", "namespace": "gpu-operator", "uid": "6f1c9a3e-planted"},
        "data": {"config.yaml": "version: v1\nflags:\n  migStrategy: none\nmetrics:\n  token: %s\n"
                 % PLANTED["cm-token"]}})
    cms_path.write_text(dump(cms, 4))

    log = TARGET / "logs/kube-system/nvidia-device-plugin-daemonset-k7ndp.log"
    log.write_text(log.read_text() + fill(POD_LOG))
    containerd = TARGET / NODE / "containerd.log"
    containerd.write_text(containerd.read_text() + 'time="2026-12-01T23:02:50.000000000Z" level=info '
                          'msg="pull helper environment" env="REGISTRY_PASSWORD=%s"\n' % PLANTED["log-password"])
    kubelet = TARGET / NODE / "kubelet.log"
    kubelet.write_text(kubelet.read_text() + "I1201 23:02:51.000000   26100 flags.go:64] FLAG: --bootstrap-token=%s\n"
                       % PLANTED["kubelet-token"])
    (TARGET / "SOURCE.md").write_text(
        "# lab-node-1-incident with planted secrets\n\n"
        "Written by `tests/bundle_corpus/plant_secrets.py` (read it: every change and every planted value)\n"
        "from the real bundle `lab-node-1-incident`: registry auth in `nodes/lab-node-1/containerd-config-dump.toml`\n"
        "and `crictl-info.json` (containerd 1.6.20's shapes), args and annotations of the device plugin's Pod,\n"
        "a GPU-stack ConfigMap with a token in its YAML, and log lines (Pod, containerd, kubelet) with a URL\n"
        "with credentials, a Bearer header, an AWS key pair, a PEM private key and a JWT. Everything else is\n"
        "the real bundle as collected. The values are fake; they exist to be found.\n")


if __name__ == "__main__":
    main()
