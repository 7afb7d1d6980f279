# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small Kubernetes API client from a kubeconfig, for our modules and the grader.

Why not the ``kubernetes`` package: importing it costs about 0.9 s of CPU on the
lab machine, paid by every task that talks to the cluster; a no-op rerun of the
lab makes a dozen such calls. This client uses the standard library only (plus
PyYAML, which Ansible needs anyway), speaks JSON over one kept-alive HTTPS
connection, and returns plain dicts exactly as the API server sends them
(camelCase keys, RFC 3339 timestamps).

kubeconfig support: the context given (or current-context); server with a path
prefix; certificate-authority(-data), insecure-skip-tls-verify, tls-server-name;
client-certificate(-data)/client-key(-data), token, tokenFile, username/password,
and exec credential plugins (client.authentication.k8s.io v1 and v1beta1).
Legacy auth-provider entries and proxy-url are refused with a clear message.
"""

import base64
import concurrent.futures
import copy
import http.client
import json
import os
import ssl
import subprocess
import tempfile
import threading
import urllib.parse
from ansible.module_utils.lab.refusals import KubeconfigError, LabError

KUBE_ARGS = dict(
    kubeconfig=dict(type="path", required=True),
    context=dict(type="str"),
)


def kube_args(**options):
    """The argument spec of a module that talks to the cluster: KUBE_ARGS (the lab_kube doc
    fragment) and the module's own options."""
    spec = dict(KUBE_ARGS)
    spec.update(options)
    return spec


class KubeError(LabError):
    """An API call failed: status (int or None), reason and the server's message."""

    def __init__(self, status, reason, message=None):
        self.status, self.reason, self.message = status, reason, message
        text = "%s %s" % (status, reason) if status else str(reason)
        super().__init__(text + ((": " + message) if message else ""))


def _named(entries, name, what, path):
    if entries is not None and not isinstance(entries, list):
        raise KubeconfigError("kubeconfig %s: %ss must be a list of {name, %s} entries, found %s"
                              % (path, what, what, type(entries).__name__))
    for index, entry in enumerate(entries or []):
        if not isinstance(entry, dict):
            raise KubeconfigError("kubeconfig %s: %ss[%d] must be a mapping with name and %s"
                                  % (path, what, index, what))
        if entry.get("name") == name:
            found = entry.get(what) or {}
            if not isinstance(found, dict):
                raise KubeconfigError("kubeconfig %s: %s %r must be a mapping, found %s"
                                      % (path, what, name, type(found).__name__))
            for key, value in found.items():
                if key in _STRING_FIELDS and value is not None and not isinstance(value, str):
                    raise KubeconfigError("kubeconfig %s: %s %r field %s must be a string, found %s "
                                          "(%r); quote it" % (path, what, name, key,
                                                              type(value).__name__, value))
            return found
    raise KubeconfigError("kubeconfig %s has no %s named %r" % (path, what, name))


_STRING_FIELDS = {"server", "certificate-authority", "certificate-authority-data",
                  "tls-server-name", "proxy-url", "client-certificate", "client-certificate-data",
                  "client-key", "client-key-data", "token", "tokenFile", "username", "password",
                  "namespace", "cluster", "user"}


def _resolve(path, base):
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) else os.path.join(base, path)


def _pem(entry, key, base):
    """(bytes) of key-data or the file of key, or None."""
    if entry.get(key + "-data"):
        return base64.b64decode(entry[key + "-data"])
    if entry.get(key):
        with open(_resolve(entry[key], base), "rb") as handle:
            return handle.read()
    return None


def _exec_credential(spec, path):
    env = dict(os.environ)
    for item in spec.get("env") or []:
        env[item["name"]] = item["value"]
    env["KUBERNETES_EXEC_INFO"] = json.dumps({
        "apiVersion": spec.get("apiVersion", "client.authentication.k8s.io/v1"),
        "kind": "ExecCredential", "spec": {"interactive": False}})
    argv = [spec["command"]] + list(spec.get("args") or [])
    try:
        run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise KubeconfigError("kubeconfig %s: exec credential plugin %s cannot run: %s%s"
                              % (path, spec["command"], exc,
                                 (" (" + spec["installHint"].strip() + ")") if spec.get("installHint") else ""))
    if run.returncode != 0:
        raise KubeconfigError("kubeconfig %s: exec credential plugin %s failed (exit %s): %s"
                              % (path, spec["command"], run.returncode, run.stderr.strip()[:300]))
    try:
        status = json.loads(run.stdout).get("status") or {}
    except ValueError:
        raise KubeconfigError("kubeconfig %s: exec credential plugin %s printed no ExecCredential JSON"
                              % (path, spec["command"]))
    return status


def load_kubeconfig(path, context=None):
    """Everything a connection needs, as a dict; KubeconfigError names what is wrong."""
    import yaml
    try:
        with open(path, "r", encoding="utf-8") as handle:
            doc = yaml.safe_load(handle) or {}
    except UnicodeDecodeError as exc:
        raise KubeconfigError("cannot load kubeconfig %s: not UTF-8 text (byte %d)" % (path, exc.start))
    except OSError as exc:
        raise KubeconfigError("cannot load kubeconfig %s: %s" % (path, exc.strerror or exc))
    except yaml.YAMLError as exc:
        raise KubeconfigError("cannot load kubeconfig %s: not YAML (%s)" % (path, exc))
    if not isinstance(doc, dict):
        raise KubeconfigError("cannot load kubeconfig %s: not a kubeconfig mapping" % path)
    base = os.path.dirname(os.path.abspath(path))
    name = context or doc.get("current-context")
    if name is not None and not isinstance(name, str):
        raise KubeconfigError("kubeconfig %s: current-context must be a context name (a string)" % path)
    if not name:
        raise KubeconfigError("kubeconfig %s has no current-context; pass context" % path)
    ctx = _named(doc.get("contexts"), name, "context", path)
    cluster = _named(doc.get("clusters"), ctx.get("cluster"), "cluster", path)
    user = _named(doc.get("users"), ctx.get("user"), "user", path) if ctx.get("user") else {}
    if not cluster.get("server"):
        raise KubeconfigError("kubeconfig %s: cluster %r has no server" % (path, ctx.get("cluster")))
    if cluster.get("proxy-url"):
        raise KubeconfigError("kubeconfig %s: proxy-url is not supported by this client; reach the "
                              "API server directly" % path)
    if user.get("auth-provider"):
        raise KubeconfigError("kubeconfig %s: user %r uses the legacy auth-provider %r; switch it to "
                              "an exec credential plugin" % (path, ctx.get("user"),
                                                             user["auth-provider"].get("name")))
    conf = {"server": cluster["server"].rstrip("/"), "namespace": ctx.get("namespace") or "default",
            "ca": _pem(cluster, "certificate-authority", base),
            "insecure": bool(cluster.get("insecure-skip-tls-verify")),
            "server_name": cluster.get("tls-server-name"),
            "cert": _pem(user, "client-certificate", base), "key": _pem(user, "client-key", base),
            "token": user.get("token"), "basic": None}
    if user.get("tokenFile") and not conf["token"]:
        with open(_resolve(user["tokenFile"], base), "r", encoding="utf-8") as handle:
            conf["token"] = handle.read().strip()
    if user.get("username") and user.get("password"):
        conf["basic"] = base64.b64encode(("%s:%s" % (user["username"], user["password"]))
                                         .encode()).decode()
    if user.get("exec"):
        status = _exec_credential(user["exec"], path)
        conf["token"] = status.get("token") or conf["token"]
        if status.get("clientCertificateData"):
            conf["cert"] = status["clientCertificateData"].encode()
            conf["key"] = (status.get("clientKeyData") or "").encode()
    return conf


def _ssl_context(conf):
    """The TLS context client-go would build: with the kubeconfig's CA, that CA alone is trusted
    (client-go's rootCertPool of the CA data, not the system's roots - and loading the
    system's hundred-odd roots cost 50 ms of every module run); without one, the system's."""
    if conf["insecure"]:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif conf["ca"]:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)   # verifies the certificate and host name
        ctx.load_verify_locations(cadata=conf["ca"].decode("ascii", "replace"))
    else:
        ctx = ssl.create_default_context()
    if conf["cert"] and conf["key"]:
        # ssl loads a client certificate from files only: write both to a private temp dir
        with tempfile.TemporaryDirectory(prefix="kube-") as tmp:
            cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
            for dest, data in ((cert, conf["cert"]), (key, conf["key"])):
                fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
            ctx.load_cert_chain(cert, key)
    return ctx


class Kube(object):
    """client = Kube(kubeconfig); client.get('/api/v1/nodes') -> dict."""

    def __init__(self, kubeconfig, context=None, timeout=15):
        self.kubeconfig = kubeconfig
        self.conf = load_kubeconfig(kubeconfig, context)
        url = urllib.parse.urlsplit(self.conf["server"])
        if url.scheme not in ("https", "http"):
            raise KubeconfigError("kubeconfig %s: server %s is not an http(s) URL" % (kubeconfig, url))
        self._scheme, self._host, self._port = url.scheme, url.hostname, url.port
        self._prefix = url.path.rstrip("/")
        self._timeout = timeout
        self._ssl = _ssl_context(self.conf) if url.scheme == "https" else None
        self._conn = None
        self._resources = {}

    # ------------------------------------------------------------------ wire
    def _headers(self, accept="application/json"):
        headers = {"Accept": accept, "User-Agent": "gpu-incident-lab"}
        if self.conf.get("token"):
            headers["Authorization"] = "Bearer " + self.conf["token"]
        elif self.conf.get("basic"):
            headers["Authorization"] = "Basic " + self.conf["basic"]
        return headers

    def _connect(self):
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port or 443, timeout=self._timeout,
                                               context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port or 80, timeout=self._timeout)

    def request(self, method, path, body=None, params=None, content_type="application/json"):
        """One API call; the decoded JSON body, or KubeError."""
        url = self._prefix + path
        if params:
            url += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        headers = self._headers()
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for attempt in (1, 2):  # a kept-alive connection the server closed is retried once
            if self._conn is None:
                self._conn = self._connect()
            try:
                self._conn.request(method, url, body=data, headers=headers)
                response = self._conn.getresponse()
                raw = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                    ssl.SSLEOFError, ssl.SSLZeroReturnError) as exc:
                # the server closed a kept-alive connection (idle timeout): reconnect once
                self._conn.close()
                self._conn = None
                if attempt == 2:
                    raise KubeError(None, "cannot reach the API server %s (kubeconfig %s): %s"
                                    % (self.conf["server"], self.kubeconfig, exc))
            except (OSError, http.client.HTTPException) as exc:
                self._conn.close()
                self._conn = None
                raise KubeError(None, "cannot reach the API server %s (kubeconfig %s): %s"
                                % (self.conf["server"], self.kubeconfig, exc))
        try:
            decoded = json.loads(raw) if raw else {}
        except ValueError:
            decoded = {"message": raw[:200].decode("utf-8", "replace")}
        if response.status >= 400:
            message = decoded.get("message") if isinstance(decoded, dict) else None
            raise KubeError(response.status, response.reason, message)
        return decoded

    def get_text(self, path, params=None):
        """A plain-text GET (a Pod's log) on a connection of its own: the raw bytes, or
        KubeError (status None: not reachable)."""
        url = self._prefix + path
        if params:
            url += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        conn = self._connect()
        try:
            conn.request("GET", url, headers=self._headers("*/*"))
            response = conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise KubeError(None, "cannot reach the API server %s: %s" % (self.conf["server"], exc))
        finally:
            conn.close()
        if response.status >= 400:
            try:
                message = json.loads(raw).get("message")
            except (ValueError, AttributeError):
                message = raw[:300].decode("utf-8", "replace")
            raise KubeError(response.status, response.reason, message)
        return raw

    def get(self, path, params=None, missing_ok=False):
        try:
            return self.request("GET", path, params=params)
        except KubeError as exc:
            if missing_ok and exc.status == 404:
                return None
            raise

    def items(self, path, page_size=500, **params):
        """All items of a list call, page by page (continue tokens)."""
        return self.listing(path, page_size, **params)[0]

    def listing(self, path, page_size=500, **params):
        """(items, resourceVersion) of a list call, page by page: the version to watch from."""
        found, token, version = [], None, None
        while True:
            page = self.get(path, params=dict(params, limit=page_size, **{"continue": token}))
            found.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            version = version or meta.get("resourceVersion")
            token = meta.get("continue")
            if not token:
                return found, version

    def watch(self, path, version, seconds):
        """The events (type, object) of a watch on a list path from resourceVersion `version`,
        for at most `seconds`; ends early when the server ends it. Runs on a connection of its
        own. A watch the server refuses (410: the version is gone) raises KubeError(410)."""
        watcher = self.clone()
        conn = watcher._connect()
        conn.timeout = seconds + 10
        params = {"watch": "1", "resourceVersion": version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(max(1, int(seconds)))}
        headers = self._headers()
        try:
            conn.request("GET", self._prefix + path + "?" + urllib.parse.urlencode(params), headers=headers)
            response = conn.getresponse()
            if response.status >= 400:
                raw = response.read()
                try:
                    message = json.loads(raw).get("message")
                except ValueError:
                    message = raw[:200].decode("utf-8", "replace")
                raise KubeError(response.status, response.reason, message)
            while True:
                line = response.readline()
                if not line:
                    return
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise KubeError(status.get("code"), status.get("reason"), status.get("message"))
                yield event.get("type"), event.get("object") or {}
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise KubeError(None, "watch of %s on %s ended: %s" % (path, self.conf["server"], exc))
        finally:
            conn.close()

    def create(self, path, body):
        return self.request("POST", path, body=body)

    def clone(self):
        """Another client of the same API server and credentials, with its own connection
        (one connection carries one request at a time)."""
        other = copy.copy(self)
        other._conn = None
        other._resources = dict(self._resources)
        return other

    def each(self, work, items, workers=8):
        """work(client, item) for every item, on up to `workers` connections at once; a
        fleet's thousands of calls are bound by round trips, not by this process.
        Returns [(item, answer or None, KubeError or None)] in the order of items."""
        items = list(items)
        if workers <= 1 or len(items) <= 1:
            return [self._one(work, self, item) for item in items]
        local = threading.local()

        def run(item):
            if getattr(local, "kube", None) is None:
                local.kube = self.clone()
            return self._one(work, local.kube, item)

        with concurrent.futures.ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
            return list(pool.map(run, items))

    @staticmethod
    def _one(work, kube, item):
        try:
            return item, work(kube, item), None
        except KubeError as exc:
            return item, None, exc

    def patch(self, path, body, kind="strategic"):
        types = {"strategic": "application/strategic-merge-patch+json",
                 "merge": "application/merge-patch+json"}
        return self.request("PATCH", path, body=body, content_type=types[kind])

    # ------------------------------------------------------------- resources
    def resource(self, api_version, kind):
        """(plural, namespaced) of a kind, by the API server's discovery."""
        key = (api_version, kind)
        if key not in self._resources:
            base = "/api/v1" if api_version == "v1" else "/apis/" + api_version
            try:
                listing = self.get(base)
            except KubeError as exc:
                if exc.status == 404:
                    raise KubeError(404, "Not Found", "the cluster serves no API %s" % api_version)
                raise
            for entry in listing.get("resources") or []:
                if "/" not in entry["name"]:
                    self._resources[(api_version, entry["kind"])] = (entry["name"], entry["namespaced"])
            if key not in self._resources:
                raise KubeError(404, "Not Found", "the cluster serves no kind %s in %s"
                                % (kind, api_version))
        return self._resources[key]

    def path(self, api_version, kind, name=None, namespace=None):
        plural, namespaced = self.resource(api_version, kind)
        base = "/api/v1" if api_version == "v1" else "/apis/" + api_version
        if namespaced:
            base += "/namespaces/" + urllib.parse.quote(namespace or self.conf["namespace"])
        base += "/" + plural
        return base + ("/" + urllib.parse.quote(name) if name else "")


def client(kubeconfig, context=None):
    """Kube(...), with every setup failure as a KubeconfigError carrying the reason."""
    try:
        return Kube(kubeconfig, context)
    except KubeconfigError:
        raise
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise KubeconfigError("cannot use kubeconfig %s: %s" % (kubeconfig, exc)) from None


def condition(obj, kind):
    """The status condition of that type, or {}."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return {}


_SUFFIXES = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
             "n": "1e-9", "u": "1e-6", "m": "1e-3", "": 1, "k": "1e3", "M": "1e6", "G": "1e9",
             "T": "1e12", "P": "1e15", "E": "1e18"}


def parse_quantity(text):
    """A Kubernetes quantity (8, 500m, 32Gi, 1e3) as a Decimal; ValueError otherwise."""
    import decimal
    import re
    match = re.fullmatch(r"\s*([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                         r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?\s*", str(text))
    if not match:
        raise ValueError("%r is not a Kubernetes quantity" % (text,))
    number, suffix = decimal.Decimal(match.group(1)), match.group(2) or ""
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number * (decimal.Decimal(10) ** int(suffix[1:]))
    return number * decimal.Decimal(_SUFFIXES[suffix])
