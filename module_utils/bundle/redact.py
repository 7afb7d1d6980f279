# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The redaction engine of a support bundle: every file, in its own format, one marker.

A hidden value becomes MARKER; the key, the flag, the line and the file's shape stay - a JSON
file is parsed, its values redacted and written back as JSON; a TOML file (containerd's
``config dump``) is redacted line by line inside its string literals, so it stays TOML; text
(logs, and YAML wherever it appears - a ConfigMap value, a log line) is redacted in place, and
``key: value`` stays YAML. A value that already is the marker is never counted again, so a file
can pass twice (on the node, then on the controller) and be counted once.

Built-in rules (BUILTIN_RULES names them, with what each hides) cover registry auth in
containerd configs and ``crictl info`` (every field of ``auth``/``auths``, the registry's
``headers``), fields, ``--flags`` and ``KEY=value`` assignments named for a password, token,
secret, credential or an API/private/access key, credentials in URLs, ``Authorization``
headers and Bearer tokens, AWS access key ids and secret keys, PEM private key blocks and JWTs.
User rules (literal strings and regular expressions, each with a name, optionally limited to
files by glob) come first; a bad one is refused by compile_rules naming it and the fix. The
rules themselves are redact_rules.py.

What must stay for the diagnosis stays: image names, runtime handler names and BinaryName paths,
resource names and counts, error texts, Xid lines and versions carry no secret-named key and no
credential shape (tests/unit/bundle/test_redact_bundle.py judges every bundle of tests/bundle_corpus before
and after redaction and compares).
"""

import json
import re

from ansible.module_utils.bundle.redact_rules import (
    BUILTIN_RULES, MARKER, OBJECT_RULES, compile_rules, secret_name)
from ansible.module_utils.bundle import redact_shapes
from ansible.module_utils.bundle.redact_shapes import quoted as _quoted


# ----------------------------------------------------------------------------- text rules
_PEM = re.compile(r"(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)(.*?)"
                  r"(-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S)
_HEADER = re.compile(r"(?i)(\b(?:proxy-)?authorization|\bx-api-key|\bx-auth-token|\bx-registry-auth|\b(?:set-)?cookie)"
                     r"(\\?[\"']?[ \t]*[:=][ \t]*\[?[ \t]*\\?[\"']?)"
                     r"((?:bearer|basic|digest|token|negotiate|ntlm|aws4-hmac-sha256)[ \t]+)?"
                     r"([^\s\"',\];\\]+(?:;[ \t]*[^\s\"',\];\\]+)*)")
_BEARER = re.compile(r"(?i)\b(bearer[ \t]+)([A-Za-z0-9\-._~+/]{16,}=*)")
_URL = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*:(?:\\?/){2})([^\s/:@\"'<>]*):([^\s/\"'<>]*)@")
# -p of a registry login and mysql's -p<password>: short flags that name nothing, known by the command
_LOGIN_P = re.compile(r"(\b(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|helm[ \t]+registry)"
                      r"[ \t]+login\b[^\n]*?[ \t]-p(?:=|[ \t]+))([^\s\"']+|\"[^\"\n]*\"|'[^'\n]*')")
_MYSQL_P = re.compile(r"(\bmysql(?:dump|admin|import|show|check)?\b[^\n|;&]*?[ \t]-p)([^\s\"';&|]+)")
# tokens known by their prefix, wherever they stand (no name before them): NVIDIA API keys
# (build.nvidia.com / NGC, "nvapi-"), GitHub, GitLab, Slack, Hugging Face, Google API keys,
# OpenAI/Anthropic keys - prefixes as gitleaks' rules and the vendors' docs give them
_KNOWN = re.compile(r"(?<![A-Za-z0-9_-])(?:nvapi-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}"
                    r"|github_pat_[A-Za-z0-9_]{40,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}"
                    r"|hf_[A-Za-z0-9]{30,}|AIza[0-9A-Za-z_-]{35}|sk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{32,})")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*")
_AWS_ID = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}\b")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])"
                         r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_VALUE = r"(?![={\[])(\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s\"',;&)\]}]+)"
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w.-]*)(=|[ \t]+)" + _VALUE)
_ASSIGN = re.compile(r"(?<![\w.\-/$])([A-Za-z_][\w.\-]*)([ \t]*=[ \t]*)" + _VALUE)
_QUOTED_KEY = re.compile(r"(\\?[\"'])(\.?[A-Za-z_][\w.\-]*)\1([ \t]*:[ \t]*)"
                         r"(\\\"(?:(?!\\\").)*\\\"|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|(?![{\[])[^\s,}\]\\]+)")
_YAML_KEY = re.compile(r"^([ \t]*(?:-[ \t]+)?)(\.?[A-Za-z_][\w.\-/]*|\"[^\"\n]+\"|'[^'\n]+')([ \t]*:)([ \t]+)(\S.*?)([ \t]*)$")
_LIST_FLAG = re.compile(r"(?:^[ \t]*-[ \t]+|[\"'],?[ \t]*)[\"']?-", re.M)   # a flag as a list item
_PATH = re.compile(r"/[\w.@+-]+(?:/[\w.@+-]+)+")   # an absolute path names where a secret is
_BLOCK = re.compile(r"^[|>][+-]?[0-9]?[ \t]*(#.*)?$")
_NOT_SECRET_WORDS = {"null", "~", "true", "false", "none", "nil", "yes", "no", '""', "''"}
_TRIGGER = re.compile(r"[=:]|-----BEGIN|eyJ|(?i:bearer)|A[A-Z]{3}[A-Z0-9]{16}|(?:^|[^\w-])-"
                      r"|gh[pousr]_|github_pat_|hf_|AIza|nvapi-|glpat-|xox[abposr]-|sk-|e[wy][A-Za-z0-9+/]{30}")


def _hideable_text(inner):
    inner = inner.strip()
    return bool(inner) and MARKER not in inner and inner.lower() not in _NOT_SECRET_WORDS


class Redactor(object):
    """Built-in rules plus the user's (compile_rules); :meth:`file` redacts one bundle file."""

    def __init__(self, rules=None, option="redact"):
        self.rules = compile_rules(rules, option)

    def describe(self):
        """The rules as bundle.json lists them (names, kinds, what they hide - never a value)."""
        return ([{"name": n, "kind": "built-in", "what": w} for n, w in OBJECT_RULES + BUILTIN_RULES]
                + [r.report() for r in self.rules])

    # ------------------------------------------------------------------ text
    def text(self, text, hit, rel=None, users=True):
        """Free text (a log, a string value) with every rule applied; hit(rule) counts."""
        for rule in self.rules if users else ():
            if not rule.applies(rel):
                continue
            if rule.kind == "literal":
                found = text.count(rule.pattern)
                if found:
                    text = text.replace(rule.pattern, MARKER)
                    hit(rule.name, found)
            else:
                text = rule.pattern.sub(self._user_sub(rule, hit), text)
        if not _TRIGGER.search(text):
            return text
        if "PRIVATE KEY" in text:
            text = redact_shapes.pem_cut_at_top(text, hit)
            text = _PEM.sub(lambda m: self._pem(m, hit), text)
        if ":" in text and ("{" in text or "[" in text):
            text = redact_shapes.go_dumps(text, hit)
        text = _HEADER.sub(lambda m: m.group(0) if redact_shapes.words_not_a_header(m) else
                           self._keep(m, 4, "http-auth-header", hit, minimum=1 if m.group(3) else 8), text)
        text = _BEARER.sub(lambda m: self._keep(m, 2, "http-auth-header", hit), text)
        if "://" in text or ":\\/\\/" in text:
            text = _URL.sub(lambda m: self._url(m, hit), text)
        if "eyJ" in text:
            text = _JWT.sub(lambda m: self._whole(m, "jwt", hit), text)
        text = _KNOWN.sub(lambda m: self._whole(m, "known-token", hit), text)
        if "e" in text and redact_shapes.DOCKER_B64.search(text):
            text = redact_shapes.docker_config_b64(text, hit)
        if _AWS_ID.search(text):
            lines = text.split("\n")
            for number, line in enumerate(lines):
                if _AWS_ID.search(line):
                    line = _AWS_SECRET.sub(lambda m: self._whole(m, "aws-secret-key", hit), line)
                    lines[number] = _AWS_ID.sub(lambda m: self._whole(m, "aws-access-key-id", hit), line)
            text = "\n".join(lines)
        if "-p" in text:
            text = _LOGIN_P.sub(lambda m: self._replace_value(m, 2, "secret-flag", hit), text)
            text = _MYSQL_P.sub(lambda m: self._replace_value(m, 2, "secret-flag", hit), text)
        text = _FLAG.sub(lambda m: self._flag(m, hit, rel), text)
        if _LIST_FLAG.search(text):
            text = redact_shapes.json_flag_items(redact_shapes.yaml_flag_items(text, hit), hit)
        if "=" in text:
            text = _ASSIGN.sub(lambda m: self._named(m, 1, 3, "secret-assignment", hit, rel), text)
        if ":" in text:
            text = redact_shapes.pairs_and_flows(text, hit)
            text = _QUOTED_KEY.sub(lambda m: self._named(m, 2, 4, "secret-assignment", hit, rel), text)
            if "[" in text:
                text = redact_shapes.quoted_key_lists(text, hit)
            text = self._yaml(text, hit)
            text = redact_shapes.midline_keys(text, hit)
        return text

    @staticmethod
    def _user_sub(rule, hit):
        def sub(m):
            if "mask" in rule.pattern.groupindex:
                if m.group("mask") in (None, "") or m.group("mask") == MARKER:
                    return m.group(0)
                start, end = m.span("mask")
                hit(rule.name)
                whole = m.group(0)
                return whole[:start - m.start()] + MARKER + whole[end - m.start():]
            if not m.group(0) or m.group(0) == MARKER:
                return m.group(0)
            hit(rule.name)
            return MARKER
        return sub

    @staticmethod
    def _pem(m, hit):
        inner = m.group(2)
        lines = inner.split("\n")
        if not any(_hideable_text(line) for line in lines):
            return m.group(0)
        hit("pem-private-key")
        body = "\n".join(MARKER if line.strip() else line for line in lines) if "\n" in inner else MARKER
        return m.group(1) + body + m.group(3)

    @staticmethod
    def _keep(m, group, rule, hit, minimum=1):
        value = m.group(group)
        if not _hideable_text(value) or len(value) < minimum:
            return m.group(0)
        hit(rule)
        start, end = m.span(group)
        return m.group(0)[:start - m.start()] + MARKER + m.group(0)[end - m.start():]

    @staticmethod
    def _whole(m, rule, hit):
        hit(rule)
        return MARKER

    @staticmethod
    def _url(m, hit):
        if m.group(2) == MARKER or MARKER in m.group(3) or not (m.group(2) or m.group(3)):
            return m.group(0)
        hit("url-credentials")
        return m.group(1) + MARKER + "@"

    def _flag(self, m, hit, rel):
        flag, sep, value = m.group(1), m.group(2), m.group(3)
        if not secret_name(flag.lstrip("-"), lone_key=True) or (sep.strip() == "" and value.startswith("-")):
            return self._inside(m, 3, hit, rel)
        return self._replace_value(m, 3, "secret-flag", hit)

    def _named(self, m, name_group, value_group, rule, hit, rel):
        if not secret_name(m.group(name_group)):
            return self._inside(m, value_group, hit, rel)
        return self._replace_value(m, value_group, rule, hit)

    def _inside(self, m, group, hit, rel):
        """A quoted value of a name that is not a secret's: the rules again inside the quotes
        (env="PASSWORD=..." in a log line), the quotes kept."""
        opening, inner, closing = _quoted(m.group(group))
        if not opening:
            return m.group(0)
        new = self.text(inner, hit, rel, users=False)
        if new == inner:
            return m.group(0)
        start, end = m.span(group)
        return m.group(0)[:start - m.start()] + opening + new + closing + m.group(0)[end - m.start():]

    @staticmethod
    def _replace_value(m, group, rule, hit):
        opening, inner, closing = _quoted(m.group(group))
        if not _hideable_text(inner) or _PATH.fullmatch(inner):     # --client-key=/etc/.../x.key
            return m.group(0)
        hit(rule)
        start, end = m.span(group)
        return m.group(0)[:start - m.start()] + opening + MARKER + closing + m.group(0)[end - m.start():]

    @staticmethod
    def _yaml(text, hit):
        """``key: value`` lines (YAML, and log lines shaped like it): the value of a secret-named
        key, a block scalar's lines below it, and the value of a name/value pair whose name is one."""
        if "\n" not in text and not _YAML_KEY.match(text):
            return text
        lines = text.split("\n")
        block_indent = None      # hiding a block scalar's lines, deeper than this
        changed_block = False    # ... and counted it
        pair = None              # (indent, item indent) of a `name: SECRET_NAME` line
        earlier = None           # (item indent, line, span) of a `value:` line before its name
        changed = False
        for number, line in enumerate(lines):
            body = line.rstrip("\r")
            indent = len(body) - len(body.lstrip(" \t"))
            if block_indent is not None:
                if not body.strip() or indent > block_indent:
                    if body.strip() and body.strip() != MARKER:
                        lines[number] = body[:indent] + MARKER + line[len(body):]
                        if not changed_block:
                            hit("secret-field")
                            changed_block = True
                        changed = True
                    continue
                block_indent = None
            m = _YAML_KEY.match(body)
            if not m:
                continue
            lead, key, value = m.group(1), m.group(2).strip("\"'"), m.group(5)
            item_indent = len(lead)
            hide = secret_name(key)
            if lead.strip():
                earlier = None
            if key == "name" and secret_name(value.strip("\"'"), lone_key=True):
                if earlier is not None and earlier[0] == item_indent:    # value: came first in the item
                    changed = redact_shapes.hide_in_line(lines, earlier[1], earlier[2], hit) or changed
                else:
                    pair = (indent, item_indent)
            elif key == "value" and pair is not None and item_indent == pair[1]:
                hide, pair = True, None
            elif key == "value" and not _BLOCK.match(value):
                earlier = (item_indent, number, m.span(5))
            elif pair is not None and indent <= pair[0] and lead.strip():
                pair = None
            if not hide:
                continue
            if _BLOCK.match(value):
                block_indent, changed_block = item_indent, False
                continue
            opening, inner, closing = _quoted(value)
            if not _hideable_text(inner):
                continue
            hit("secret-field")
            lines[number] = body[:m.start(5)] + opening + MARKER + closing + body[m.end(5):] + line[len(body):]
            changed = True
        return "\n".join(lines) if changed else text

    # ------------------------------------------------------------------ JSON
    def json_doc(self, doc, hit, rel=None):
        """A parsed JSON document with every value redacted (changed in place where it can be)."""
        return self._walk(doc, hit, rel, False)

    def _leaves(self, node, rule, hit):
        if isinstance(node, dict):
            return {k: self._leaves(v, rule, hit) for k, v in node.items()}
        if isinstance(node, list):
            return [self._leaves(v, rule, hit) for v in node]
        if self._hideable(node):
            hit(rule)
            return MARKER
        return node

    @staticmethod
    def _hideable(value):
        if isinstance(value, bool) or value is None:
            return False
        if isinstance(value, (int, float)):
            return True
        return isinstance(value, str) and _hideable_text(value)

    def _walk(self, node, hit, rel, registry):
        if isinstance(node, dict):
            if isinstance(node.get("name"), str) and "value" in node and secret_name(node["name"], lone_key=True) \
                    and self._hideable(node["value"]):
                node["value"] = MARKER
                hit("secret-field")
            for key in list(node):
                value = node[key]
                lower = str(key).lower()
                if lower in ("auth", "auths", "credentials", "creds") and isinstance(value, (dict, list)):
                    node[key] = self._leaves(value, "registry-auth" if registry or lower.startswith("auth")
                                             else "secret-field", hit)
                elif lower == "headers" and isinstance(value, dict):
                    for header in list(value):
                        if registry:
                            value[header] = self._leaves(value[header], "registry-header", hit)
                        elif secret_name(header) or str(header).lower() in ("cookie", "set-cookie"):
                            value[header] = self._leaves(value[header], "http-auth-header", hit)
                        else:
                            value[header] = self._walk(value[header], hit, rel, registry)
                elif secret_name(key) and self._hideable(value):
                    node[key] = MARKER
                    hit("secret-field")
                elif secret_name(key) and isinstance(value, list) and all(isinstance(v, str) for v in value):
                    node[key] = self._leaves(value, "secret-field", hit)
                else:
                    node[key] = self._walk(value, hit, rel, registry or lower == "registry")
            return node
        if isinstance(node, list):
            hide_next = login = False
            for number, item in enumerate(node):
                if hide_next and isinstance(item, str) and not item.startswith("-") and _hideable_text(item):
                    node[number] = MARKER
                    hit("secret-flag")
                    hide_next = False
                    continue
                hide_next = isinstance(item, str) and redact_shapes.secret_flag(item, login)
                login = login or item == "login"
                node[number] = self._walk(item, hit, rel, registry)
            return node
        if isinstance(node, str):
            return self.text(node, hit, rel)
        return node

    # ------------------------------------------------------------------ TOML
    def toml(self, text, hit, rel=None):
        """A TOML file (containerd's config dump) redacted inside its string literals, line by line."""
        lines = text.split("\n")
        table, pending = _cut_header(lines[0]), None
        for number, line in enumerate(lines):
            header = _TOML_HEADER.match(line)
            if header:
                table = _toml_keys(header.group(1))
                pending = None
                continue
            kv = _TOML_KV.match(line)
            if kv:
                keys = table + _toml_keys(kv.group(2))
                rule = _toml_rule(keys)
                head, value = line[:kv.start(4)], kv.group(4)
                if rule is None and value.lstrip().startswith("{"):
                    value = _TOML_INLINE.sub(lambda m: self._toml_inline(m, keys, hit), value)
                lines[number] = head + self._toml_strings(value, rule, hit, rel)
                pending = rule if _opens_array(value) else None
                continue
            lines[number] = self._toml_strings(line, pending, hit, rel)
            if pending is not None and "]" in _TOML_STR.sub("", line):
                pending = None
        return "\n".join(lines)

    def _toml_inline(self, m, keys, hit):
        rule = _toml_rule(keys + _toml_keys(m.group(1)))
        if rule is None:
            return m.group(0)
        return m.group(0)[:m.start(3) - m.start()] + self._toml_strings(m.group(3), rule, hit, None)

    def _toml_strings(self, segment, rule, hit, rel):
        """Each string literal of a TOML line: hidden whole under `rule`, else through the text rules.
        Comments go through the text rules too."""
        def one(m):
            literal = m.group(0)
            quote = literal[0]
            inner = literal[1:-1]
            if rule is not None:
                if not _hideable_text(inner):
                    return literal
                hit(rule)
                return quote + MARKER + quote
            if quote == '"':
                try:
                    inner = json.loads(literal)
                except ValueError:
                    return literal
            new = self.text(inner, hit, rel)
            if new == inner:
                return literal
            if quote == "'" and "'" not in new and "\n" not in new:
                return "'" + new + "'"
            return json.dumps(new, ensure_ascii=False)
        out, pos = [], 0
        for m in _TOML_STR.finditer(segment):
            out.append(segment[pos:m.start()])
            out.append(one(m))
            pos = m.end()
        rest = segment[pos:]
        if "#" in rest:
            cut = rest.index("#")
            rest = rest[:cut] + self.text(rest[cut:], hit, rel)
        out.append(rest)
        return "".join(out)

    # ------------------------------------------------------------------ files
    def file(self, rel, data):
        """(redacted bytes, {rule: values hidden}, note or None) of one bundle file. JSON files
        that do not parse, and everything else but TOML, go through the text rules (note says so
        for JSON); bytes that are not UTF-8 pass through unchanged around the text."""
        counts = {}

        def hit(rule, found=1):
            counts[rule] = counts.get(rule, 0) + found

        text = data.decode("utf-8", "surrogateescape")
        note = None
        lower = rel.lower()
        if lower.endswith(".json"):
            try:
                doc = json.loads(text)
            except ValueError as exc:
                note = "not JSON (%s): redacted as text" % getattr(exc, "msg", exc)
                new = self.text(text, hit, rel)
            else:
                doc = self.json_doc(doc, hit, rel)
                new = dump_like(doc, text) if counts else text
        elif lower.endswith(".toml"):
            new = self.toml(text, hit, rel)
        else:
            new = self.text(text, hit, rel)
        if not counts:
            return data, counts, note
        try:
            return new.encode("utf-8", "surrogateescape"), counts, note
        except UnicodeEncodeError:
            return new.encode("utf-8", "replace"), counts, note


_TOML_HEADER = re.compile(r"^\s*\[\[?\s*((?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')"
                          r"(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*'))*)\s*\]\]?\s*(#.*)?$")
_TOML_KEY = r"(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*'))*"
_TOML_KV = re.compile(r"^(\s*)(" + _TOML_KEY + r")(\s*=\s*)(.*)$")
_TOML_INLINE = re.compile(r"(" + _TOML_KEY + r")(\s*=\s*)(\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|\[[^\]]*\])")
_TOML_STR = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'")
_TOML_PART = re.compile(r"[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*'")


def _toml_keys(dotted):
    keys = []
    for part in _TOML_PART.findall(dotted):
        if part.startswith('"'):
            try:
                part = json.loads(part)
            except ValueError:
                part = part[1:-1]
        elif part.startswith("'"):
            part = part[1:-1]
        keys.append(part)
    return keys


def _cut_header(first):
    """The keys of a table header's end that starts a TOML text cut at its top (a failed command's
    output keeps its end): 'cri".registry.configs."nvcr.io".auth]' -> registry, configs, nvcr.io, auth."""
    m = re.match(r"^([^=\[\]]*?)\]\]?\s*(#.*)?$", first)
    if not m or _TOML_HEADER.match(first):
        return []
    dotted = m.group(1)
    if dotted.count('"') % 2:
        dotted = dotted[dotted.index('"') + 1:]
    return _toml_keys(dotted)


def _toml_rule(keys):
    """The rule that hides every string of the value at this key path, or None."""
    lower = [str(k).lower() for k in keys]
    if "registry" in lower:
        after = lower[lower.index("registry") + 1:]
        if "auth" in after or "auths" in after:
            return "registry-auth"
        if after[:1] == ["headers"]:
            return "registry-header"
    if lower[:1] == ["host"] and "header" in lower[2:3]:       # hosts.toml: [host."https://nvcr.io".header]
        return "registry-header"
    if lower and (lower[-1] in ("auth", "auths") or secret_name(lower[-1])):
        return "secret-field"
    return None


def _opens_array(value):
    bare = _TOML_STR.sub("", value)
    return bare.count("[") > bare.count("]")


def dump_like(doc, original):
    """JSON text of doc, indented as the original was (kubectl 4, crictl 2), with its final newline."""
    m = re.match(r"\s*[\[{][ \t]*\r?\n([ \t]+)\S", original)
    indent = len(m.group(1)) if m else None
    try:
        text = json.dumps(doc, indent=indent, ensure_ascii=False)
    except (TypeError, ValueError):
        text = json.dumps(doc, indent=indent)
    return text + ("\n" if original.endswith("\n") else "")
