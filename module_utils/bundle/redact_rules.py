# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The redaction rules: the built-in ones by name (what each hides), the collector's object
rules, which names are secret-named (a password, token, secret, credential or an
API/private/access key - and which words say a value is not the secret), and the user's own
rules (literal strings and regular expressions, each with a name, optionally limited to files by
glob), refused by compile_rules naming the bad one and the fix. redact.py applies them.
"""

import fnmatch
import re

from ansible.module_utils.bundle.layout import LOGS, node_file
from ansible.module_utils.lab.refusals import LabError

MARKER = "<redacted>"

BUILTIN_RULES = [
    ("registry-auth", "containerd/CRI registry credentials: every field of a registry's auth "
                      "(username, password, auth, identitytoken) and of the deprecated auths, in "
                      "config dump and crictl info, and in Go's dump of them in containerd's log "
                      "(Auths:map[...], &AuthConfig{...}); a docker config in base64 "
                      "(.dockerconfigjson, .dockercfg) wherever it stands"),
    ("registry-header", "headers containerd adds to every registry request (registry.headers; "
                        "Headers:map[...] of the config containerd logs; a hosts.toml's [host.\"...\".header])"),
    ("http-auth-header", "Authorization, Proxy-Authorization, Cookie, X-Api-Key, X-Auth-Token "
                         "header values and Bearer tokens"),
    ("secret-field", "a JSON, TOML or YAML field (or a name/value pair, in either order; a YAML "
                     "flow mapping's {key: value} in text), or a field of Go's "
                     "struct/map dump in a log (Password:...), named for a password, token, secret, "
                     "credential or an API/private/access key"),
    ("secret-flag", "the value of --flag=value and --flag value where the flag names a password, "
                    "token, secret, key or credential (also as two items of a list: args in JSON, YAML "
                    "or JSON in a log line); and -p of a registry login (docker, podman, "
                    "nerdctl, helm registry, skopeo, buildah, oras, crane) and mysql's -p<password>"),
    ("secret-assignment", "the value of KEY=value (and \"key\": value) where KEY names a password, "
                          "token, secret, credential or an API/private/access key; key: value in the "
                          "middle of a log line where key names a password, passphrase, secret or an "
                          "API/access/secret/private key"),
    ("url-credentials", "user:password in scheme://user:password@host (and scheme://:password@host, "
                        "and with JSON's escaped slashes)"),
    ("aws-access-key-id", "AWS access key ids (AKIA..., ASIA...)"),
    ("aws-secret-key", "a 40-character AWS secret key on a line with an AWS access key id"),
    ("pem-private-key", "the body of a PEM private key block (BEGIN/END lines kept; cut at its top: "
                        "the base64 lines before END)"),
    ("jwt", "JSON Web Tokens (eyJ...eyJ...signature), e.g. service account tokens"),
    ("known-token", "tokens known by their prefix wherever they stand: NVIDIA API keys (nvapi-...), "
                    "GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab (glpat-), Slack (xoxb- ...), "
                    "Hugging Face (hf_), Google API keys (AIza...), OpenAI/Anthropic keys (sk-...)"),
]
BUILTIN_NAMES = [name for name, _what in BUILTIN_RULES]
# the collector's own object rules (cluster_side.redact): reported under these names
OBJECT_RULES = [
    ("env-value", "every env value of Pods and Pod templates (names and valueFrom kept)"),
    ("configmap-value", "ConfigMap values outside the GPU stack (keys kept)"),
    ("last-applied", "the kubectl.kubernetes.io/last-applied-configuration annotation (a copy "
                     "of the whole object)"),
]
RESERVED = set(BUILTIN_NAMES) | {name for name, _what in OBJECT_RULES}


class RedactError(LabError):
    """A redaction rule that cannot be used; the text names it and the fix."""


# ----------------------------------------------------------------------------- names
SECRET_WORDS = {"password", "passwd", "pass", "passphrase", "secret", "token",
                "credential", "credentials", "creds", "apikey", "auth", "authorization",
                "identitytoken", "privatekey", "secretkey", "accesskey", "sessiontoken",
                "dockerconfigjson", "dockercfg"}
# a secret word glued to another (PGPASSWORD, dbpassword, githubtoken, clientsecret): the word's end
GLUED_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "secretkey",
                 "accesskey", "privatekey", "pass")
# words that end in "pass" and are no password
NOT_GLUED = ("bypass", "compass", "surpass", "trespass", "overpass", "underpass", "multipass")
KEY_QUALIFIERS = {"api", "access", "secret", "private", "ssh", "signing", "encryption", "client",
                  "session", "license", "master", "account", "auth", "gpg", "pgp", "admin"}
# a name ending in one of these names where a secret is, or says something about it - not the secret
NOT_THE_VALUE = {"name", "names", "ref", "file", "files", "path", "paths", "dir", "namespace",
                 "type", "kind", "mode", "id", "ids", "url", "uri", "endpoint", "seconds", "ttl",
                 "length", "size", "expiry", "expiration", "expires", "enabled", "required", "format",
                 "algorithm", "audience", "issuer", "count", "source", "provider", "policy",
                 "webhook", "mount", "location", "env", "version", "field", "selector", "template",
                 "stdin", "hash"}
_CAMEL1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")


def name_words(name):
    """The lower-case words of a name: API_TOKEN, apiToken, api-token, api.token -> api, token."""
    name = _CAMEL2.sub(r"\1_\2", _CAMEL1.sub(r"\1_\2", str(name)))
    return [w.lower() for w in _SPLIT.split(name) if w]


def secret_name(name, lone_key=False):
    """Does this key, flag or variable name a secret value? `lone_key`: a bare ``key`` counts
    (``--key``); in objects it does not (tolerations, configMapKeyRef and labels have ``key``)."""
    words = name_words(name)
    if not words or words[-1] in NOT_THE_VALUE:
        return False
    found = set(words)
    if found & SECRET_WORDS:
        return True
    if any(w.endswith(GLUED_ENDINGS) and not w.endswith(NOT_GLUED) for w in words):
        return True
    if "".join(words).endswith(("dockerconfigjson", "dockercfg")):    # dockerConfigJson, DOCKER_CFG
        return True
    if found & {"pwd", "pw"} and len(words) > 1:   # MYSQL_PWD, ADMIN_PW - a lone PWD is the shell's folder
        return True
    if "key" in found or "keys" in found:
        return (lone_key and len(words) == 1) or bool(found & KEY_QUALIFIERS)
    return False


# words that name the secret itself and nothing else (not token, auth, authorization or credentials,
# which log lines use for what they are about: "authorization: authorization failed")
STRONG_WORDS = ("password", "passwd", "passphrase", "secret", "apikey", "secretkey", "accesskey", "privatekey")
KEY_STRONG_QUALIFIERS = {"api", "access", "secret", "private"}


def strong_secret_name(name):
    """Does this name the secret itself - a password, passphrase, secret or an API/access/secret/
    private key - so that ``name: value`` anywhere in a log line is one?"""
    words = name_words(name)
    if not words or words[-1] in NOT_THE_VALUE:
        return False
    if any(w.endswith(STRONG_WORDS) for w in words):
        return True
    return any(w in ("key", "keys") and number and words[number - 1] in KEY_STRONG_QUALIFIERS
               for number, w in enumerate(words))


# ----------------------------------------------------------------------------- user rules
_RULE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
RULE_KEYS = ("name", "literal", "regex", "files")
MIN_LITERAL = 4


class Rule(object):
    def __init__(self, name, kind, pattern, files):
        self.name, self.kind, self.pattern, self.files = name, kind, pattern, files

    def applies(self, rel):
        return rel is None or any(fnmatch.fnmatchcase(rel, glob) for glob in self.files)

    def report(self):
        """What bundle.json says about the rule: never its literal or its regex."""
        return {"name": self.name, "kind": self.kind, "files": list(self.files)}


def compile_rules(rules, option="redact"):
    """The user's rules checked and compiled, or RedactError naming the first bad one and the fix.
    `option`: the option's name as the user wrote it (the role's gpu_support_bundle_redact)."""
    if rules is None:
        return []
    if not isinstance(rules, list):
        raise RedactError("%s must be a list of rules, each {name: NAME, literal: TEXT} or {name: NAME, "
                          "regex: PATTERN}; got %s" % (option, type(rules).__name__))
    compiled, seen = [], set()
    for number, rule in enumerate(rules):
        where = "%s[%d]" % (option, number)
        if not isinstance(rule, dict):
            raise RedactError("%s must be a mapping {name: NAME, literal: TEXT} or {name: NAME, regex: PATTERN}, "
                              "got %s" % (where, type(rule).__name__))
        unknown = sorted(str(k) for k in rule if k not in RULE_KEYS)
        if unknown:
            raise RedactError("%s: unknown key %s; a rule takes %s" % (where, ", ".join(unknown), ", ".join(RULE_KEYS)))
        name = rule.get("name")
        if not isinstance(name, str) or not _RULE_NAME.match(name):
            raise RedactError("%s: give the rule a name (letters, digits, '.', '_', '-'; up to 63) - the "
                              "redaction report counts its hits under it; got %r" % (where, name))
        where = "%s (rule %s)" % (where, name)
        if name in RESERVED:
            raise RedactError("%s: %s is a built-in rule's name; give yours another" % (where, name))
        if name in seen:
            raise RedactError("%s: a rule named %s comes earlier; give each rule its own name" % (where, name))
        seen.add(name)
        literal, regex = rule.get("literal"), rule.get("regex")
        if (literal is None) == (regex is None):
            raise RedactError("%s: give exactly one of literal (a fixed string) and regex (a Python regular "
                              "expression)" % where)
        files = rule.get("files")
        if files is None:
            files = ["*"]
        if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
            raise RedactError("%s: files must be a list of globs of bundle paths (e.g. ['%s/*', '%s']); "
                              "leave it out for every file" % (where, LOGS, node_file("*", "containerd.log")))
        if literal is not None:
            if not isinstance(literal, str) or len(literal) < MIN_LITERAL:
                raise RedactError("%s: literal must be a string of at least %d characters (a shorter one "
                                  "would hide ordinary words everywhere); for a short value use regex "
                                  "with its context, e.g. 'pin=(?P<mask>\\d+)'" % (where, MIN_LITERAL))
            compiled.append(Rule(name, "literal", literal, files))
            continue
        if not isinstance(regex, str) or not regex:
            raise RedactError("%s: regex must be a non-empty string" % where)
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise RedactError("%s: the regex does not compile: %s%s. Fix it (Python re syntax; escape "
                              ". * + ? ( ) [ ] { } | \\ with a backslash to match them as they are), or "
                              "give the value as literal: instead" % (
                                  where, exc.msg, " at position %d" % exc.pos if exc.pos is not None else ""))
        if pattern.search("") is not None:
            raise RedactError("%s: the regex matches the empty string, so it would hide nothing and mark "
                              "everything; make it match the value itself (e.g. + instead of *)" % where)
        compiled.append(Rule(name, "regex", pattern, files))
    return compiled
