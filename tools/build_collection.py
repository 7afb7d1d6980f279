#!/usr/bin/env python3
"""Stage the collection gpu_incident.lab from the project's own sources.

What ships is one list, collection/ships.yml: modules, action plugins, roles, action groups -
and with them every module_utils (file or package, whole) a shipped file imports, transitively,
and every doc fragment a shipped module extends. Nothing is kept in git twice: the files are
copied from library/, action_plugins/, module_utils/, doc_fragments/ and roles/, the
collection's own from collection/. What changes on the way is found by parsing, never by
matching text:

- Python (ast + tokenize): `from ansible.module_utils.X[.Y] import ...`,
  `from ansible.module_utils import X`, `import ansible.module_utils.X[.Y] [as Z]` and the
  attribute chains `ansible.module_utils.X` become the collection's
  `ansible_collections.gpu_incident.lab.plugins.module_utils.X` - only for the module_utils
  that ship; ansible's own (basic, common...) stay.
- DOCUMENTATION / EXAMPLES / RETURN (ast finds the string, yaml.compose its nodes):
  extends_documentation_fragment entries, seealso modules and EXAMPLES' task actions get the
  collection's name, and M(module) references (ansible-doc's own markup pattern) too.
- Role task files (yaml.compose): the action key of each task - a key of a task mapping that
  is a shipped module's name and not a task keyword - and module_defaults keys become
  gpu_incident.lab.<module>; `action:`/`local_action:` likewise. Only that token is replaced
  (node marks give its exact place), so comments and layout stay as written.

The build refuses (exit 2, `file:line: what - the fix`) when the list and the sources disagree.
Usage: build_collection.py STAGE_DIR
"""
import ast
import io
import importlib.util
import pathlib
import re
import shutil
import sys
import tokenize

import yaml
from ansible.playbook.block import Block
from ansible.playbook.handler import Handler

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHIPS = ROOT / "collection" / "ships.yml"
FQ = "gpu_incident.lab"
PKG = "ansible_collections.gpu_incident.lab.plugins"
MU = "ansible.module_utils"
KINDS = ("modules", "action_plugins", "roles", "action_groups")
FOLLOW = ("module_utils", "doc_fragments")   # what ships because a shipped file names it
DOC_VARS = ("DOCUMENTATION", "EXAMPLES", "RETURN")
# ansible-doc's pattern for a module reference (ansible/cli/doc.py, DocCLI._MODULE)
M_REF = re.compile(r"\bM\(([^)]+)\)")
# keys of a task, handler or block that are not its action - ansible-core's own keyword lists
TASK_KEYWORDS = frozenset(Handler.fattributes) | frozenset(Block.fattributes) | {"local_action"}
NESTED_TASKS = ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers")


class BuildError(Exception):
    """What is wrong, where (a file and line), and the fix."""

    def __init__(self, path, line, message):
        where = str(path.relative_to(ROOT) if path.is_absolute() and ROOT in path.parents else path)
        super().__init__("%s%s: %s" % (where, ":%d" % line if line else "", message))


# --- the list -----------------------------------------------------------------------------

class Ships:
    """collection/ships.yml, checked against the sources."""

    def __init__(self, path=SHIPS):
        self.path = path
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise BuildError(path, mark.line + 1 if mark else 0, "not YAML (%s) - fix the syntax"
                             % getattr(exc, "problem", exc)) from None
        if not isinstance(data, dict):
            raise BuildError(path, 0, "must be a mapping with the keys %s" % ", ".join(KINDS))
        for kind in FOLLOW:
            if kind in data:
                raise BuildError(path, self._line(kind), "%s are not listed: they ship because a "
                                 "shipped file imports or extends them - remove this key" % kind)
        if set(data) - set(KINDS):
            raise BuildError(path, 0, "unknown keys %s - the keys are %s" % (
                ", ".join(sorted(set(data) - set(KINDS))), ", ".join(KINDS)))
        for kind in KINDS[:-1]:
            names = data.get(kind) or []
            if not isinstance(names, list) or not all(isinstance(n, str) and n.isidentifier()
                                                      for n in names):
                raise BuildError(path, self._line(kind), "%s: a list of names (no paths, no "
                                 "extensions)" % kind)
            if len(set(names)) != len(names):
                raise BuildError(path, self._line(kind), "%s: a name listed twice" % kind)
        self.modules = list(data.get("modules") or [])
        self.action_plugins = list(data.get("action_plugins") or [])
        self.roles = list(data.get("roles") or [])
        self.action_groups = data.get("action_groups") or {}
        if not isinstance(self.action_groups, dict) or not all(
                isinstance(v, str) for v in self.action_groups.values()):
            raise BuildError(path, self._line("action_groups"),
                             "action_groups: group name -> one doc fragment name")
        for group, fragment in self.action_groups.items():
            if not (ROOT / "doc_fragments" / (fragment + ".py")).exists():
                raise BuildError(path, self._line("action_groups"), "action group %s: no "
                                 "doc_fragments/%s.py" % (group, fragment))
        self._check_sources()

    def _line(self, kind):
        for number, line in enumerate(self.path.read_text().splitlines(), 1):
            if line.startswith(kind + ":"):
                return number
        return 0

    def _check_sources(self):
        def need(kind, name, *candidates):
            if not any(c.exists() for c in candidates):
                raise BuildError(self.path, self._line(kind), "%s %s: no %s - remove it from the "
                                 "list or add the file" % (kind, name, " or ".join(
                                     str(c.relative_to(ROOT)) for c in candidates)))
        for name in self.modules:
            need("modules", name, ROOT / "library" / (name + ".py"))
        for name in self.roles:
            need("roles", name, ROOT / "roles" / name / "tasks" / "main.yml")
        for name in self.action_plugins:
            path = ROOT / "action_plugins" / (name + ".py")
            need("action_plugins", name, path)
            if path.is_symlink():
                raise BuildError(self.path, self._line("action_plugins"), "action_plugins %s: "
                                 "action_plugins/%s.py is a symlink (a module's use of a shared "
                                 "action) - list the file it points to" % (name, name))

    @staticmethod
    def module_utils_files(name):
        """(source, path inside plugins/module_utils) of the module_utils file `name`, or of
        every file of the package `name`."""
        single = ROOT / "module_utils" / (name + ".py")
        if single.exists():
            return [(single, pathlib.Path(single.name))]
        return [(path, path.relative_to(ROOT / "module_utils"))
                for path in sorted((ROOT / "module_utils" / name).rglob("*.py"))]

    def shared_actions(self):
        """{module: action plugin name} - the shipped modules whose action_plugins/<module>.py
        is a symlink to a shipped action plugin."""
        found = {}
        for module in self.modules:
            link = ROOT / "action_plugins" / (module + ".py")
            if link.is_symlink():
                target = link.resolve()
                if target.parent == (ROOT / "action_plugins").resolve() \
                        and target.stem in self.action_plugins:
                    found[module] = target.stem
                else:
                    raise BuildError(link, 0, "is a symlink to %s, which ships.yml's action_plugins "
                                     "does not list - list it or remove the link" % target)
        return found


# --- positions ----------------------------------------------------------------------------

class Source:
    """A text and the edits to make in it, by character offset."""

    def __init__(self, path, text):
        self.path, self.text = path, text
        self.starts = [0]
        for line in text.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.edits = {}

    def index(self, lineno, col_bytes):
        """Character offset of an ast position (1-based line, UTF-8 byte column)."""
        start = self.starts[lineno - 1]
        line = self.text[start:self.starts[lineno] if lineno < len(self.starts) else None]
        return start + len(line.encode("utf-8")[:col_bytes].decode("utf-8"))

    def line_of(self, index):
        return sum(1 for s in self.starts[1:] if s <= index) + 1

    def replace(self, start, end, new):
        if (start, end) in self.edits and self.edits[(start, end)] != new:
            raise BuildError(self.path, self.line_of(start), "two rewrites of one token")
        self.edits[(start, end)] = new

    def result(self):
        text, last = self.text, None
        for (start, end), new in sorted(self.edits.items(), reverse=True):
            if last is not None and end > last:
                raise BuildError(self.path, self.line_of(start), "overlapping rewrites")
            text = text[:start] + new + text[end:]
            last = start
        return text


# --- Python -------------------------------------------------------------------------------

def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


def _is_ansibles_own(name):
    try:
        return importlib.util.find_spec("%s.%s" % (MU, name)) is not None
    except (ImportError, ValueError):
        return False


class PythonRewriter:
    """Rewrite one Python file of the collection (a module, module_utils, doc fragment or
    action plugin) for the names that ship."""

    def __init__(self, modules):
        self.modules = set(modules)
        self.utils = set()       # the project's module_utils the files rewritten so far import
        self.fragments = set()   # the doc fragments they extend

    def _util_target(self, src, line, dotted, attribute=False):
        """The collection's name for ansible.module_utils.<dotted>, or None if it is ansible's
        (or, for an attribute chain, anything else of ansible.module_utils, e.g. __path__)."""
        top = dotted.split(".")[0]
        if (ROOT / "module_utils" / (top + ".py")).exists() \
                or (ROOT / "module_utils" / top / "__init__.py").exists():
            self.utils.add(top)
            return "%s.module_utils.%s" % (PKG, dotted)
        if not attribute and not _is_ansibles_own(top):
            raise BuildError(src.path, line, "imports %s.%s, which is neither ansible-core's nor "
                             "the project's module_utils - fix the import" % (MU, top))
        return None

    def rewrite(self, path, text):
        src = Source(path, text)
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError as exc:
            raise BuildError(path, exc.lineno or 0, "not Python (%s) - fix the syntax" % exc.msg) from None
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and (node.module == MU or node.module.startswith(MU + ".")):
                self._import_from(src, tokens, node)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(MU + "."):
                        new = self._util_target(src, node.lineno, alias.name[len(MU) + 1:])
                        if new:
                            start = src.index(alias.lineno, alias.col_offset)
                            src.replace(start, start + len(alias.name), new)
            elif isinstance(node, ast.Attribute):
                dotted = _dotted(node)
                if dotted and dotted.count(".") == 2 and dotted.startswith(MU + "."):
                    new = self._util_target(src, node.lineno, dotted[len(MU) + 1:], attribute=True)
                    if new:
                        src.replace(src.index(node.lineno, node.col_offset),
                                    src.index(node.end_lineno, node.end_col_offset), new)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id in DOC_VARS \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                self._doc_string(src, node.targets[0].id, node.value)
        return src.result()

    def _import_from(self, src, tokens, node):
        start = (node.lineno, src.index(node.lineno, node.col_offset) - src.starts[node.lineno - 1])
        # the dotted name: the tokens after `from`, up to `import`
        names, seen_from = [], False
        for tok in tokens:
            if tok.start < start:
                continue
            if not seen_from:
                seen_from = tok.type == tokenize.NAME and tok.string == "from"
                continue
            if tok.type == tokenize.NAME and tok.string == "import":
                break
            if tok.type in (tokenize.NAME, tokenize.OP):
                names.append(tok)
        if "".join(t.string for t in names) != node.module:
            raise BuildError(src.path, node.lineno, "cannot find the module name of this import "
                             "in its tokens - write it as `from %s import ...` on one line" % node.module)
        first = src.starts[names[0].start[0] - 1] + names[0].start[1]
        last = src.starts[names[-1].end[0] - 1] + names[-1].end[1]
        if node.module != MU:
            new = self._util_target(src, node.lineno, node.module[len(MU) + 1:])
        else:
            ours = [a.name for a in node.names if self._util_target(src, node.lineno, a.name)]
            if ours and len(ours) != len(node.names):
                raise BuildError(src.path, node.lineno, "`from %s import` mixes the project's (%s) "
                                 "with ansible-core's module_utils - split it into two imports"
                                 % (MU, ", ".join(ours)))
            new = "%s.module_utils" % PKG if ours else None
        if not new:
            return
        src.replace(first, last, new)
        # names aligned under the opening parenthesis move with it (pep8 E128)
        paren = src.text.find("(", last, src.starts[node.lineno] if node.lineno < len(src.starts) else None)
        if paren < 0 or node.end_lineno == node.lineno:
            return
        column = paren - src.starts[node.lineno - 1] + 1
        for lineno in range(node.lineno + 1, node.end_lineno + 1):
            line = src.text[src.starts[lineno - 1]:src.starts[lineno]]
            if len(line) - len(line.lstrip(" ")) == column:
                src.replace(src.starts[lineno - 1], src.starts[lineno - 1], " " * (len(new) - (last - first)))

    def _doc_string(self, src, var, const):
        start = src.index(const.lineno, const.col_offset)
        end = src.index(const.end_lineno, const.end_col_offset)
        literal = src.text[start:end]
        match = re.match(r"([rRuU]*)('''|\"\"\"|'|\")", literal)
        content_start = start + len(match.group(0)) if match else -1
        content = src.text[content_start:end - len(match.group(2))] if match else None
        if content != const.value:
            raise BuildError(src.path, const.lineno, "%s is not a plain string literal (escapes or "
                             "concatenation) - make it one r\"\"\"...\"\"\" string" % var)
        for ref in M_REF.finditer(content):
            if ref.group(1) in self.modules:
                src.replace(content_start + ref.start(1), content_start + ref.end(1),
                            "%s.%s" % (FQ, ref.group(1)))
        if var == "RETURN" or not content.strip():
            return
        try:
            root = yaml.compose(content)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise BuildError(src.path, const.lineno + (mark.line if mark else 0),
                             "%s is not YAML (%s)" % (var, getattr(exc, "problem", exc))) from None
        edits = []
        if var == "DOCUMENTATION" and isinstance(root, yaml.MappingNode):
            for key, value in root.value:
                if key.value == "seealso" and isinstance(value, yaml.SequenceNode):
                    for item in value.value:   # - module: <name> (validate-modules wants FQCN)
                        for skey, svalue in getattr(item, "value", []) if isinstance(item, yaml.MappingNode) else []:
                            if skey.value == "module" and isinstance(svalue, yaml.ScalarNode) \
                                    and svalue.value in self.modules:
                                edits += scalar_edit(svalue, content, "%s.%s" % (FQ, svalue.value))
                if key.value == "extends_documentation_fragment":
                    items = value.value if isinstance(value, yaml.SequenceNode) else [value]
                    for item in items:
                        edits += self._fragment(src, const.lineno + item.start_mark.line, item,
                                                content)
        elif var == "EXAMPLES":
            edits = task_action_edits(root, self.modules, content)
        for begin, finish, new in edits:
            src.replace(content_start + begin, content_start + finish, new)

    def _fragment(self, src, line, node, content):
        if not isinstance(node, yaml.ScalarNode):
            return []
        top = node.value.split(".")[0]
        if (ROOT / "doc_fragments" / (top + ".py")).exists():
            self.fragments.add(top)
            return scalar_edit(node, content, "%s.%s" % (FQ, node.value))
        if "." not in node.value:
            raise BuildError(src.path, line, "extends doc fragment %s, but there is no "
                             "doc_fragments/%s.py - fix the name or add the fragment" % (node.value, top))
        return []


# --- YAML tasks ---------------------------------------------------------------------------

def scalar_edit(node, text, new):
    """(start, end, new) replacing the value of a scalar node in `text` - plain or quoted, the
    quotes and everything around stay."""
    token = text[node.start_mark.index:node.end_mark.index]
    if node.value not in token:   # an escaped or folded scalar: not a name
        return []
    at = node.start_mark.index + token.index(node.value)
    return [(at, at + len(node.value), new)]


def task_action_edits(root, modules, text):
    """Edits that give the action of every task (and module_defaults keys) in a task list -
    or in the plays of a playbook - the collection's name. Only the token changes."""
    edits = []

    def scalar(node, new_value):
        edits.extend(scalar_edit(node, text, new_value))

    def walk_list(node):
        if isinstance(node, yaml.SequenceNode):
            for item in node.value:
                if isinstance(item, yaml.MappingNode):
                    walk_task(item)

    def walk_task(node):
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            name = key.value
            if name in NESTED_TASKS:
                walk_list(value)
            elif name == "module_defaults" and isinstance(value, yaml.MappingNode):
                for mkey, _mvalue in value.value:
                    if isinstance(mkey, yaml.ScalarNode) and mkey.value in modules:
                        scalar(mkey, "%s.%s" % (FQ, mkey.value))
            elif name in ("action", "local_action"):
                if isinstance(value, yaml.ScalarNode):
                    first = value.value.split(None, 1)[0] if value.value.strip() else ""
                    if first in modules:
                        token = text[value.start_mark.index:value.end_mark.index]
                        at = value.start_mark.index + token.index(first)
                        edits.append((at, at + len(first), "%s.%s" % (FQ, first)))
                elif isinstance(value, yaml.MappingNode):
                    for akey, avalue in value.value:
                        if akey.value == "module" and isinstance(avalue, yaml.ScalarNode) \
                                and avalue.value in modules:
                            scalar(avalue, "%s.%s" % (FQ, avalue.value))
            elif name in modules and name not in TASK_KEYWORDS and not name.startswith("with_"):
                scalar(key, "%s.%s" % (FQ, name))

    walk_list(root)
    return edits


def rewrite_role_yaml(path, text, ships, kind):
    """A role's YAML file: task files get their actions rewritten, meta/argument_specs.yml its
    M() references; everything else is copied as it is."""
    src = Source(path, text)
    if kind == "tasks":
        try:
            root = yaml.compose(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise BuildError(path, mark.line + 1 if mark else 0, "not YAML (%s)"
                             % getattr(exc, "problem", exc)) from None
        for start, end, new in task_action_edits(root, set(ships.modules), text):
            src.replace(start, end, new)
    elif kind == "argument_specs":
        for node in _scalars(yaml.compose(text)):
            segment = text[node.start_mark.index:node.end_mark.index]
            for ref in M_REF.finditer(segment):
                if ref.group(1) in ships.modules:
                    at = node.start_mark.index
                    src.replace(at + ref.start(1), at + ref.end(1), "%s.%s" % (FQ, ref.group(1)))
    return src.result()


def _scalars(node):
    if isinstance(node, yaml.ScalarNode):
        yield node
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _scalars(item)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield from _scalars(key)
            yield from _scalars(value)


# --- the collection's own files -----------------------------------------------------------

def action_group_members(ships):
    """{group: [modules]} - every shipped module whose DOCUMENTATION extends the group's
    doc fragment (itself or one of its parts, `fragment.part`)."""
    groups = {group: [] for group in ships.action_groups}
    for module in ships.modules:
        path = ROOT / "library" / (module + ".py")
        doc = None
        try:
            body = ast.parse(path.read_text(), filename=str(path)).body
        except SyntaxError as exc:
            raise BuildError(path, exc.lineno or 0, "not Python (%s) - fix the syntax" % exc.msg) from None
        for node in body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION" \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                try:
                    doc = yaml.safe_load(node.value.value)
                except yaml.YAMLError as exc:
                    mark = getattr(exc, "problem_mark", None)
                    raise BuildError(path, node.value.lineno + (mark.line if mark else 0),
                                     "DOCUMENTATION is not YAML (%s) - fix it (ansible-doc cannot read "
                                     "it either)" % getattr(exc, "problem", exc)) from None
        if not isinstance(doc, dict):
            raise BuildError(path, 0, "no DOCUMENTATION mapping - every shipped module documents itself")
        extends = doc.get("extends_documentation_fragment") or []
        extends = [extends] if isinstance(extends, str) else extends
        for group, fragment in ships.action_groups.items():
            if any(e.split(".")[0] == fragment for e in extends):
                groups[group].append(module)
    for group, members in groups.items():
        if not members:
            raise BuildError(ships.path, ships._line("action_groups"), "action group %s: no shipped "
                             "module extends %s" % (group, ships.action_groups[group]))
    return groups


def runtime_yml(ships):
    """collection/meta/runtime.yml with the action groups the list defines."""
    source = ROOT / "collection" / "meta" / "runtime.yml"
    text = source.read_text()
    data = yaml.safe_load(text) or {}
    if "action_groups" in data:
        raise BuildError(source, 0, "action_groups come from collection/ships.yml - remove them here")
    lines = ["", "# from collection/ships.yml (action_groups): every module that extends the doc fragment",
             "action_groups:"]
    for group, members in action_group_members(ships).items():
        lines.append("  %s:  # %s" % (group, ships.action_groups[group]))
        lines += ["    - %s" % m for m in members]
    return text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"


def table_names(text, heading):
    """The backticked names in the first column of the Markdown table whose header's first
    cell is `heading`."""
    names, inside = [], False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            inside = False
        elif cells[0] == heading:
            inside = True
        elif inside and not set(cells[0]) <= set("-: "):
            names += re.findall(r"`([A-Za-z_][\w.]*)`", cells[0])
    return names


def check_docs(ships):
    """collection/README.md's tables name exactly what ships; CHANGELOG.md names every module
    and role (its release note)."""
    readme = ROOT / "collection" / "README.md"
    text = readme.read_text()
    for heading, shipped in (("Module", ships.modules), ("Role", ships.roles)):
        listed = table_names(text, heading)
        if sorted(listed) != sorted(shipped) or len(set(listed)) != len(listed):
            raise BuildError(readme, 0, "the %s table names %s; collection/ships.yml ships %s - make "
                             "them agree" % (heading, ", ".join(sorted(listed)) or "nothing",
                                             ", ".join(sorted(shipped))))
    changelog = ROOT / "collection" / "CHANGELOG.md"
    words = set(re.findall(r"[A-Za-z_][\w]*", changelog.read_text()))
    missing = [n for n in ships.modules + ships.roles if n not in words]
    if missing:
        raise BuildError(changelog, 0, "no release note names %s - add it to the release that "
                         "ships it" % ", ".join(missing))


# --- build --------------------------------------------------------------------------------

SHIM = '''# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of module {fq}.{module}: {fq}'s shared {name} (plugins/plugin_utils/{name}.py)."""
from __future__ import annotations

from {pkg}.plugin_utils.{name} import ActionModule

__all__ = ["ActionModule"]
'''


def build(stage, ships=None):
    ships = ships or Ships()
    check_docs(ships)
    stage = pathlib.Path(stage)
    if stage.exists():
        shutil.rmtree(stage)
    shutil.copytree(ROOT / "collection", stage, ignore=shutil.ignore_patterns(SHIPS.name))
    shutil.copy(ROOT / "LICENSE", stage / "LICENSE")
    (stage / "meta" / "runtime.yml").write_text(runtime_yml(ships))
    python = PythonRewriter(ships.modules)
    todo = [(ROOT / "library" / (m + ".py"), pathlib.Path("modules") / (m + ".py")) for m in ships.modules]
    todo += [(ROOT / "action_plugins" / (a + ".py"), pathlib.Path("plugin_utils") / (a + ".py"))
             for a in ships.action_plugins]
    utils, fragments = set(), set()
    while todo:   # what the shipped files import or extend ships too, and what that imports
        for src, rel in todo:
            dest = stage / "plugins" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(python.rewrite(src, src.read_text()))
        todo = [f for u in sorted(python.utils - utils) for src, rel in ships.module_utils_files(u)
                for f in [(src, "module_utils" / rel)]]
        todo += [(ROOT / "doc_fragments" / (d + ".py"), pathlib.Path("doc_fragments") / (d + ".py"))
                 for d in sorted(python.fragments - fragments)]
        utils, fragments = set(python.utils), set(python.fragments)
    shipped = dict(modules=ships.modules, module_utils=sorted(utils), doc_fragments=sorted(fragments),
                   action_plugins=ships.action_plugins, roles=ships.roles)
    for module, name in ships.shared_actions().items():
        dest = stage / "plugins" / "action" / (module + ".py")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(SHIM.format(fq=FQ, module=module, name=name, pkg=PKG))
    for role in ships.roles:
        shutil.copytree(ROOT / "roles" / role, stage / "roles" / role, symlinks=False)
        for path in sorted((stage / "roles" / role).rglob("*.y*ml")):
            part = path.relative_to(stage / "roles" / role).parts
            kind = ("tasks" if part[0] in ("tasks", "handlers") else
                    "argument_specs" if part == ("meta", "argument_specs.yml") else None)
            if kind:
                origin = ROOT / "roles" / role / path.relative_to(stage / "roles" / role)
                path.write_text(rewrite_role_yaml(origin, path.read_text(), ships, kind))
    return stage, shipped


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: build_collection.py STAGE_DIR\n")
        return 2
    try:
        stage, shipped = build(argv[1])
        print(stage)
        for kind, names in shipped.items():
            print("  %s: %s" % (kind, ", ".join(names)))
    except BuildError as exc:
        sys.stderr.write("build_collection: %s\n" % exc)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
