"""The tests mirror the code (CONTRIBUTING.md, "Tests mirror the code"): every test file where the
layout puts it, basenames unique across tests/ (so `pytest tests` collects unit and cluster tests in
one run), a test file named after each module, and no test file imported by another."""
import ast
import collections

from lab_testing import ROOT, TESTS

PACKAGES = sorted(p.name for p in (ROOT / "module_utils").iterdir()
                  if p.is_dir() and (p / "__init__.py").exists())
OTHERS = ["library", "roles", "playbooks", "plugins", "tools", "toolchain", "docs", "project", "nvml_mock", "node_runner"]


def all_test_files():
    return sorted(p for p in TESTS.rglob("test_*.py") if "_corpus" not in str(p) and "trainee" not in p.parts)


def test_every_test_file_has_a_basename_of_its_own():
    seen = collections.defaultdict(list)
    for path in all_test_files():
        seen[path.name].append(str(path.relative_to(ROOT)))
    assert not {name: paths for name, paths in seen.items() if len(paths) > 1}


def test_the_unit_folders_are_module_utils_packages_and_the_named_others():
    assert PACKAGES == ["bundle", "containerd", "diagnosis", "grader", "kube", "lab", "node", "report", "sharing"]
    misplaced = [str(p.relative_to(ROOT)) for p in all_test_files()
                 if p.parent.parent != TESTS / "unit" and p.parent != TESTS / "cluster"
                 or p.parent.parent == TESTS / "unit" and p.parent.name not in PACKAGES + OTHERS]
    assert not misplaced, "tests/unit/<package or one of %s>/test_*.py, or tests/cluster/" % OTHERS


def test_every_module_has_a_test_file_named_after_it():
    tested = {p.name for p in (TESTS / "unit").rglob("test_*.py")}
    modules = sorted(p.stem for p in (ROOT / "library").glob("*.py"))
    assert len(modules) >= 16
    assert [m for m in modules if "test_%s.py" % m not in tested] == []


def test_no_test_file_imports_another():
    names = {p.stem for p in all_test_files()}
    imports = {}
    for path in all_test_files():
        for node in ast.walk(ast.parse(path.read_text())):
            found = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for name in found:
                if name.split(".")[0] in names:
                    imports.setdefault(str(path.relative_to(ROOT)), []).append(name)
    # shared fixtures go in a conftest.py, shared helpers in tests/lab_testing.py
    assert imports == {}
