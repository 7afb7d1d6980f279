# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text shapes of secrets beyond ``key=value`` and ``key: value`` lines, for redact.py's
Redactor.text: Go's ``%+v`` struct and map dumps (containerd's "Start cri plugin with config" log
line); a flag and its value as two items of a list (YAML ``- --password`` lines, JSON
``["--password", "X"]`` in a log line, and a registry login's ``-p``); a docker config in base64;
name/value pairs and flow mappings written in text (``{"name": "DB_PASSWORD", "value": "X"}``,
``{name: DB_PASSWORD, value: X}``, ``{url: nvcr.io, password: X}``); ``password: X`` in the middle
of a log line. Each function takes the
text and hit(rule) and returns the text with the values hidden - MARKER in place of the value,
names and punctuation kept.
"""

import base64
import binascii
import re

from ansible.module_utils.bundle.redact_rules import MARKER, secret_name, strong_secret_name

_NOT_SECRET = {"", "null", "~", "true", "false", "none", "nil", "<nil>", "yes", "no", '""', "''"}


def hideable(value):
    """A value worth hiding: not empty, not the marker, not a word that says there is none."""
    value = value.strip()
    return value.lower() not in _NOT_SECRET and MARKER not in value


def quoted(value):
    """(open, inner, close) of a value as written: quotes kept around the marker."""
    for q in ('\\"', '"', "'"):
        if len(value) >= 2 * len(q) and value.startswith(q) and value.endswith(q):
            return q, value[len(q):-len(q)], q
    return "", value, ""


def _closing(text, start):
    """Where the bracket opened just before `start` closes (the line's end when it does not)."""
    depth = 1
    for pos in range(start, len(text)):
        char = text[pos]
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return pos
        elif char == "\n":
            return pos
    return len(text)


def hide_in_line(lines, number, span, hit):
    """The value at span of an earlier YAML line hidden (its quotes kept); True when it was."""
    line = lines[number]
    opening, inner, closing = quoted(line[span[0]:span[1]])
    if not hideable(inner):
        return False
    hit("secret-field")
    lines[number] = line[:span[0]] + opening + MARKER + closing + line[span[1]:]
    return True


def words_not_a_header(m):
    """"may require authorization: authorization failed" - containerd's error text, not a header
    (redact.py's _HEADER match): no scheme and a lower-case word after the colon."""
    return not m.group(3) and re.fullmatch(r"[a-z]+", m.group(4)) is not None


# ----------------------------------------------------------------------------- PEM cut at its top
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_LINE = re.compile(r"[A-Za-z0-9+/=]{16,}\r?")


def pem_cut_at_top(text, hit):
    """A private key whose BEGIN line was cut off (a file or an output keeps its end): the base64
    lines just before its END line (pem-private-key)."""
    m = _PEM_END.search(text)
    if not m or "-----BEGIN" in text[:m.start()]:
        return text
    lines = text[:m.start()].split("\n")
    number = len(lines) - 2        # the last line is what stands before END on its own line
    while number >= 0 and _PEM_LINE.fullmatch(lines[number]):
        lines[number] = MARKER + ("\r" if lines[number].endswith("\r") else "")
        number -= 1
    if number == len(lines) - 2:
        return text
    hit("pem-private-key")
    return "\n".join(lines) + text[m.start():]


# ----------------------------------------------------------------------------- Go %+v dumps
# every field of a registry's AuthConfig (cri config, CRI's AuthConfig message) but its address
_GO_AUTH_NAMES = r"Username|Password|Auth|Email|IdentityToken|RegistryToken"
_GO_AUTH_FIELD = re.compile(r"(?<=[{ ,])(" + _GO_AUTH_NAMES + r"):(.*?)"
                            r"(?=[ ,](?:" + _GO_AUTH_NAMES + r"|ServerAddress):|,?\})")
# where AuthConfig values stand: the deprecated Auths map, Auth:{...} and &AuthConfig{...}
_GO_AUTH_REGION = re.compile(r"\bAuths:map\[|\bAuth:&?[\w.]*\{|\bAuthConfig\{")
_GO_HEADERS = re.compile(r"\bHeaders:map\[")
_GO_HEADER = re.compile(r"(?<=[\[ ])([\w-]+):\[([^\]]*)\]")
# any other field or map key named for a secret: Password:X, map[password:X]
_GO_FIELD = re.compile(r"(?<=[{\[ ,])([A-Za-z]\w*):(?!map\[|[/ &{\[])([^\s,}\]]+)")
_GO_POINTER = re.compile(r"0x[0-9a-f]+")


def go_dumps(text, hit):
    """Go's %+v of containerd's CRI config (and %v of CRI's AuthConfig) in a log line: every value
    of a registry's auth (registry-auth), every header value of its Registry part
    (registry-header); elsewhere a field or map key named for a secret (secret-field)."""
    if "AuthConfig{" in text or "Auth:" in text or "Auths:map[" in text:
        text = _regions(text, _GO_AUTH_REGION, lambda body: _GO_AUTH_FIELD.sub(
            lambda m: _hide(m, 2, "registry-auth", hit), body))
    if "Registry:{" in text and "Headers:map[" in text:
        text = _regions(text, _GO_HEADERS, lambda body: _GO_HEADER.sub(
            lambda m: _hide(m, 2, "registry-header", hit), body), inside="Registry:{")
    return _GO_FIELD.sub(lambda m: m.group(0) if not secret_name(m.group(1)) or _GO_POINTER.fullmatch(m.group(2))
                         else _hide(m, 2, "secret-field", hit), text)


def _regions(text, opening, redact, inside=None):
    """The text with each bracket `opening` opens, to where it closes, passed through redact();
    `inside`: only where that text comes earlier on the same line."""
    out, pos = [], 0
    for m in opening.finditer(text):
        if m.start() < pos:
            continue
        if inside is not None and inside not in text[text.rfind("\n", 0, m.start()) + 1:m.start()]:
            continue
        end = min(_closing(text, m.end()) + 1, len(text))
        out.append(text[pos:m.end() - 1])
        out.append(redact(text[m.end() - 1:end]))     # the brackets with it: a field's end is found
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _hide(m, group, rule, hit):
    """The match with its group `group` as MARKER, its quotes kept (counted), or as it was when
    not worth hiding."""
    opening, inner, closing = quoted(m.group(group))
    if not hideable(inner):
        return m.group(0)
    hit(rule)
    start, end = m.span(group)
    return m.group(0)[:start - m.start()] + opening + MARKER + closing + m.group(0)[end - m.start():]


# ----------------------------------------------------------------------------- flags as list items
_FLAG_ITEM = re.compile(r"--?[A-Za-z][\w.-]*")
_YAML_ITEM = re.compile(r"^([ \t]*)-[ \t]+(.*?)[ \t]*$")
_LOGIN_ITEM = re.compile(r"(\\?[\"'])login\1")
# "--flag", "value" in a JSON list (or its escaped copy in a log line): the value in the lookahead,
# so that a flag followed by a flag is looked at again as the first of the next pair
_JSON_PAIR = re.compile(r"(\\?[\"'])(--?[A-Za-z][\w.-]*)\1(?=\s*,\s*(\\?[\"'])((?:(?!\3)[^\n])*)\3)")


def secret_flag(item, after_login=False):
    """Is this list item a flag whose value is the next item: one named for a secret, or -p of a
    registry login (`after_login`: the list holds "login" before it)?"""
    if not _FLAG_ITEM.fullmatch(item):
        return False
    return secret_name(item.lstrip("-"), lone_key=True) or (after_login and item == "-p")


def yaml_flag_items(text, hit):
    """YAML list items ``- --password`` then ``- VALUE`` (same indent): the value (secret-flag)."""
    lines = text.split("\n")
    flag_at = login_at = None      # indent of a secret flag's item; of a list that said "login"
    for number, line in enumerate(lines):
        body = line.rstrip("\r")
        m = _YAML_ITEM.match(body)
        if not m:
            if body.strip():
                flag_at = login_at = None
            continue
        indent = len(m.group(1))
        opening, item, closing = quoted(m.group(2))
        if login_at is not None and indent != login_at:
            login_at = None
        if flag_at == indent and not item.startswith("-"):
            flag_at = None
            if hideable(item):
                hit("secret-flag")
                lines[number] = body[:m.start(2)] + opening + MARKER + closing + body[m.end(2):] + line[len(body):]
            continue
        flag_at = indent if secret_flag(item, login_at == indent) else None
        if item == "login":
            login_at = indent
    return "\n".join(lines)


def json_flag_items(text, hit):
    """``"--password", "VALUE"`` in a JSON list written in text: the value (secret-flag)."""
    spans = []
    for m in _JSON_PAIR.finditer(text):
        value = m.group(4)
        if value.startswith("-") or not hideable(value) or (spans and spans[-1][1] > m.start()):
            continue
        after_login = bool(_LOGIN_ITEM.search(text, text.rfind("[", 0, m.start()) + 1, m.start()))
        if secret_flag(m.group(2), after_login):
            spans.append(m.span(4))
    for start, end in reversed(spans):
        hit("secret-flag")
        text = text[:start] + MARKER + text[end:]
    return text


# ----------------------------------------------------------------------------- base64 docker config
# base64 of a JSON object ('{"' or '{' and a space or a line break): .dockerconfigjson, .dockercfg
DOCKER_B64 = re.compile(r"(?<![A-Za-z0-9+/])e[wy][A-Za-z0-9+/]{30,}={0,2}(?![A-Za-z0-9+/=])")


def docker_config_b64(text, hit):
    """A docker config (.dockerconfigjson, .dockercfg) in base64: the whole run (registry-auth)
    when it decodes to JSON with registry auth in it."""
    def one(m):
        run = m.group(0).rstrip("=")
        try:
            decoded = base64.b64decode(run[:len(run) // 4 * 4])
        except (binascii.Error, ValueError):
            return m.group(0)
        if b'"auth' not in decoded:
            return m.group(0)
        hit("registry-auth")
        return MARKER
    return DOCKER_B64.sub(one, text)


# ----------------------------------------------------------------------------- pairs and flow mappings
_JSON_STR = r"((?:[^\"\\\n]|\\.)*?)"
_NAME_VALUE = [   # (pattern, group of the name, group of the value): name first, or value first
    (re.compile(r'(\\?")name\1\s*:\s*\1([^"\\\n]+)\1\s*,\s*\1value\1\s*:\s*\1' + _JSON_STR + r"\1"), 2, 3),
    (re.compile(r'(\\?")value\1\s*:\s*\1' + _JSON_STR + r'\1\s*,\s*\1name\1\s*:\s*\1([^"\\\n]+)\1'), 3, 2),
    (re.compile(r"\{[ \t]*name:[ \t]*([^,{}\n]+?)[ \t]*,[ \t]*value:[ \t]*([^,{}\n]+?)[ \t]*\}"), 1, 2),
    (re.compile(r"\{[ \t]*value:[ \t]*([^,{}\n]+?)[ \t]*,[ \t]*name:[ \t]*([^,{}\n]+?)[ \t]*\}"), 2, 1),
]
# key: value in a YAML flow mapping ({url: nvcr.io, password: X})
_FLOW_KEY = re.compile(r"(?<=[{,])[ \t]*([A-Za-z_][\w.\-]*)[ \t]*:[ \t]+([^\s,{}\[\]][^,{}\[\]\n]*?)(?=[ \t]*[,}])")


def pairs_and_flows(text, hit):
    """A name/value pair whose name is a secret's (JSON or flow mapping written in text, either
    order) and a flow mapping's value under a secret-named key: the value (secret-field)."""
    if "name" in text and "value" in text:
        for pattern, name, value in _NAME_VALUE:
            text = pattern.sub(lambda m: _hide(m, value, "secret-field", hit) if secret_name(
                quoted(m.group(name).strip())[1], lone_key=True) else m.group(0), text)
    if "{" in text:
        text = _FLOW_KEY.sub(lambda m: _hide(m, 2, "secret-field", hit) if secret_name(m.group(1)) else m.group(0), text)
    return text


# ----------------------------------------------------------------------------- "key": ["list"]
_QUOTED_KEY_LIST = re.compile(r"(\\?[\"'])(\.?[A-Za-z_][\w.\-]*)\1[ \t]*:[ \t]*\[([^\[\]{}\n]*)\]")
_LIST_STRING = re.compile(r"(\\?[\"'])((?:(?!\1)[^\n])*)\1")


def quoted_key_lists(text, hit):
    """``"token": ["X", "Y"]`` in text: each string of the list (secret-assignment)."""
    def one(m):
        if not secret_name(m.group(2)):
            return m.group(0)
        start = m.start(3) - m.start()
        items = _LIST_STRING.sub(lambda s: _hide(s, 2, "secret-assignment", hit), m.group(3))
        return m.group(0)[:start] + items + m.group(0)[start + len(m.group(3)):]
    return _QUOTED_KEY_LIST.sub(one, text)


# ----------------------------------------------------------------------------- key: value mid-line
_MIDLINE = re.compile(r"(?<![\w.\-/\"'])([A-Za-z_][\w.\-]*)[ \t]*:[ \t]+(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;)\]}]+)")


def midline_keys(text, hit):
    """``password: X`` anywhere in a line: the value (secret-assignment) - only for names of the
    secret itself (strong_secret_name), as log lines say "authorization: authorization failed"."""
    return _MIDLINE.sub(lambda m: _hide(m, 2, "secret-assignment", hit) if strong_secret_name(m.group(1))
                        else m.group(0), text)
