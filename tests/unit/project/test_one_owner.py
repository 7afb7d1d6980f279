"""One owner per fact (issue 38 item 4): each test fails when a second owner of a fact comes back."""
import pathlib
import re
import subprocess

from lab_testing import ROOT, TESTS


def tracked(*patterns):
    out = subprocess.run(["git", "ls-files", "--", *patterns], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return [ROOT / name for name in out if (ROOT / name).is_file()]


def test_a_comment_naming_a_readme_section_names_one_the_readme_has():
    """Sections move to docs/ (docs/speed.md, docs/real-node.md, ...): a comment that sends the
    reader to a README section by its quoted name must find it there (a heading or a bold lead-in),
    else name the page."""
    readme = (ROOT / "README.md").read_text()
    places = set(re.findall(r"^#+ (.+)$", readme, re.M)) | set(re.findall(r"\*\*(.+?)\*\*", readme))
    stale = []
    for path in tracked("*.py", "*.sh", "*.yml", "*.yaml", "*.j2", "*.go", "Makefile", ".ci/run"):
        if "_corpus" in str(path):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for section in re.findall(r'README[:,]? "([^"]+)"', line):
                if not any(place.rstrip(".").startswith(section) for place in places):
                    stale.append("%s:%d README %r" % (path.relative_to(ROOT), number, section))
    assert stale == []


def test_the_bare_lab_reads_the_trainee_answers_not_a_copy():
    """bench/bare-lab.sh hands in the files of tests/trainee/correct (as the grader's corpus test and
    Molecule's trainee scenario do): no answer file of its own by heredoc."""
    script = (ROOT / "bench/bare-lab.sh").read_text()
    assert "answers=tests/trainee/correct" in script
    handed = re.findall(r"^answer (\S+)$", script, re.M)
    answers = sorted(str(p.relative_to(TESTS / "trainee/correct"))
                     for p in (TESTS / "trainee/correct").rglob("*") if p.is_file() and "out" not in p.parts)
    assert sorted(handed) == answers
    assert not re.search(r"<<\s*'?(TOML|YAML)", script)


def test_nvidias_releases_are_pinned_once_in_their_go_mod():
    """The device plugin's and the toolkit's versions are their go.mod pins (toolchain/build.sh
    builds and stamps them from there): roles, playbooks and tests read them - no image tag or
    version string of their own."""
    import versions
    pins = {"nvidia-device-plugin": versions.go_mod_version("nvidia-device-plugin", "github.com/NVIDIA/k8s-device-plugin"),
            "nvidia-container-toolkit": versions.go_mod_version("nvidia-container-toolkit",
                                                                "github.com/NVIDIA/nvidia-container-toolkit")}
    assert all(pins.values()), pins
    copies = []
    for path in tracked("roles", "playbooks", "inventory", "molecule", "tests/unit/roles", "tests/cluster", "lab.yml"):
        if path.suffix not in (".yml", ".yaml", ".j2", ".py", ".sh", ".json"):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for version in pins.values():
                if re.search(r"""[:"'=]v?%s\b""" % re.escape(version), line):
                    copies.append("%s:%d" % (path.relative_to(ROOT), number))
    assert copies == []


def package_imports():
    """{package: {packages its files import}} over module_utils (any import, at any depth)."""
    import ast
    graph = {}
    for path in sorted((ROOT / "module_utils").glob("*/*.py")):
        package = path.parent.name
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module + "." + a.name for a in node.names]
                     if isinstance(node, ast.ImportFrom) and node.module else [])
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["ansible", "module_utils"] and len(parts) > 2 and parts[2] != package \
                        and (ROOT / "module_utils" / parts[2]).is_dir():
                    graph.setdefault(package, set()).add(parts[2])
    return graph


def test_no_import_cycle_between_module_utils_packages():
    graph = package_imports()
    assert "diagnosis" not in graph.get("node", set())          # node's parsers: the diagnosis reads them
    assert "bundle" not in graph.get("node", set())             # ... and a bundle holds the node's files
    assert "diagnosis" not in graph.get("bundle", set())        # a bundle's layout: the diagnosis reads it
    cycles = []

    def walk(package, path):
        for nxt in sorted(graph.get(package, ())):
            if nxt in path:
                cycles.append(path[path.index(nxt):] + [nxt])
            else:
                walk(nxt, path + [nxt])
    for package in graph:
        walk(package, [package])
    assert cycles == []


def test_the_label_selector_parser_is_kubes():
    """One parser of label selectors (kube/label_selector.py); the diagnosis and the bundle wrap it
    only to name their own refusal."""
    owners = [str(p.relative_to(ROOT)) for p in (ROOT / "module_utils").rglob("*.py")
              if r"(in|notin)\s+" in p.read_text()]
    assert owners == ["module_utils/kube/label_selector.py"]


def test_the_node_file_names_are_listed_once():
    """node/artefacts.py NODE_FILES: the collector, a bundle's nodes/<node>/ and the diagnosis read it;
    no other list of them in module_utils or library."""
    import ast

    from ansible.module_utils.node.artefacts import ARTEFACTS, NODE_FILES
    assert set(ARTEFACTS) < set(NODE_FILES)
    lists = []
    for path in sorted((ROOT / "module_utils").rglob("*.py")) + sorted((ROOT / "library").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
                names = {e.value for e in node.elts if isinstance(e, ast.Constant)} & set(NODE_FILES)
                if len(names) > 4:
                    lists.append("%s:%d" % (path.relative_to(ROOT), node.lineno))
    assert lists == ["module_utils/node/artefacts.py:%d" % next(
        n for n, line in enumerate((ROOT / "module_utils/node/artefacts.py").read_text().splitlines(), 1)
        if line.startswith("NODE_FILES = "))]


def code_strings(path):
    """(line, text) of every string constant of a Python file that is not a docstring or a module's
    DOCUMENTATION / EXAMPLES / RETURN (words for readers, which may show a layout)."""
    import ast
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            docs.add(id(body[0].value))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in ("DOCUMENTATION", "EXAMPLES", "RETURN")
                                                for t in node.targets):
            docs.add(id(node.value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs]


def test_the_bundle_layout_is_named_once():
    """bundle/layout.py names a support bundle's folders, files and index: contents.py and the two
    halves write a bundle with those names, diagnosis/bundle_source.py reads one back with them -
    no name of the layout (bundle.json, cluster/<kind>.json, logs/..., nodes/<node>/...) written
    anywhere else in module_utils or library."""
    from ansible.module_utils.bundle import contents, layout
    assert [rel for rel, *_rest in contents.CLUSTER_FILES] == list(layout.KIND_FILES.values())
    assert layout.log_file("ns", "pod").startswith(layout.LOGS + "/")
    assert layout.node_file("n", "x").startswith(layout.NODES + "/")
    files = [layout.INDEX] + [rel.rsplit("/", 1)[1] for rel in layout.KIND_FILES.values()]
    folders = re.compile(r"(^|[^\w./-])(%s)/" % "|".join(map(re.escape, (layout.CLUSTER, layout.NODES, layout.LOGS))))
    copies = []
    for path in sorted((ROOT / "module_utils").rglob("*.py")) + sorted((ROOT / "library").glob("*.py")):
        if path == ROOT / "module_utils/bundle/layout.py":
            continue
        for line, text in code_strings(path):
            if folders.search(text) or any(name in text for name in files):
                copies.append("%s:%d %r" % (path.relative_to(ROOT), line, text[:60]))
        # a folder of the layout joined on its own: os.path.join(root, "cluster")
        source = path.read_text()
        for folder in (layout.CLUSTER, layout.NODES, layout.LOGS):
            for match in re.finditer(r"os\.path\.join\([^)]*[\"']%s[\"']" % folder, source):
                copies.append("%s:%d os.path.join(..., %r)" % (path.relative_to(ROOT),
                                                             source.count("\n", 0, match.start()) + 1, folder))
    assert copies == []


def test_module_utils_hold_only_what_the_modules_run():
    """module_utils is module code: every file in it is imported, at some depth, by a module of
    library/ (and so ships with it). What no module runs lives with what runs it - the live board's
    HTTP server and its start and stop are the lab_board role's files (roles/lab_board/files/), not
    a second home of the board in module_utils."""
    import ast

    def imported(path):
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] + [node.module + "." + a.name for a in node.names]
                     if isinstance(node, ast.ImportFrom) and node.module else [])
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["ansible", "module_utils"] and len(parts) > 2:
                    out |= {p for p in (ROOT / "module_utils" / ("/".join(parts[2:4]) + ".py"),
                                        ROOT / "module_utils" / (parts[2] + ".py")) if p.is_file()}
        return out

    reached, todo = set(), sorted((ROOT / "library").glob("*.py"))
    while todo:
        for path in imported(todo.pop()) - reached:
            reached.add(path)
            todo.append(path)
    files = {p for p in (ROOT / "module_utils").rglob("*.py") if p.name != "__init__.py"}
    assert sorted(str(p.relative_to(ROOT)) for p in files - reached) == []
    board = ROOT / "roles/lab_board/files"
    assert {"lab_board.py", "board_control.py", "board_server.py"} <= {p.name for p in board.glob("*.py")}


def test_the_drills_plugin_image_is_written_once():
    """The drills' device-plugin DaemonSet runs gpu_drills_plugin_image (roles/gpu_drills/defaults,
    its one definition); the real node imports a stand-in of that name (real_node_stand_in_images)
    by reading it there - no second copy of the tag in the roles, playbooks, inventory, Molecule,
    bench or tools (tests build objects of their own with whatever image they like)."""
    import yaml
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    from ansible.template import Templar, trust_as_template

    image = yaml.safe_load((ROOT / "roles/gpu_drills/defaults/main.yml").read_text())["gpu_drills_plugin_image"]
    copies = []
    for path in tracked("roles", "playbooks", "inventory", "molecule", "lab.yml", "bench", "tools"):
        if path.suffix not in (".yml", ".yaml", ".j2", ".py", ".sh", ".json", ".md"):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if image in line:
                copies.append("%s:%d" % (path.relative_to(ROOT), number))
    assert copies == ["roles/gpu_drills/defaults/main.yml:%d" % next(
        n for n, line in enumerate((ROOT / "roles/gpu_drills/defaults/main.yml").read_text().splitlines(), 1)
        if line.startswith("gpu_drills_plugin_image:"))]

    # the real node's list names it: read from the drills' defaults, or the play's value
    init_plugin_loader()
    stand_ins = yaml.safe_load((ROOT / "roles/real_node/defaults/main.yml").read_text())["real_node_stand_in_images"]
    for play, expected in (({}, image), ({"gpu_drills_plugin_image": "registry.example/plugin:test"},
                                         "registry.example/plugin:test")):
        templar = Templar(loader=DataLoader(), variables=dict(play, role_path=str(ROOT / "roles/real_node")))
        names = [templar.template(trust_as_template(name)) for name in stand_ins]
        assert expected in names and image not in stand_ins


def test_go_builds_of_what_the_lab_runs_are_build_shs():
    """Every binary the lab or the oracles run is built by toolchain/build.sh (its flags, its
    version check); the Makefile and the real node's script call it instead of `go build`. The
    tests' own probe (dp-probe, a test tool, not a component) is the one other go build."""
    found = []
    for path in tracked("Makefile", "roles", "playbooks", "bench", "tools", "nvml_mock", "node_runner", "tests", ".ci"):
        if path.suffix in (".md", ".json", ".txt") or path.name == "build.sh" and path.parent.name == "toolchain" \
                or path == pathlib.Path(__file__):
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if re.search(r'\bgo build\b|"go", "build"', line) and not line.lstrip().startswith("#"):
                found.append(str(path.relative_to(ROOT)))
    assert found == ["tests/unit/roles/gpu_stack_testing.py"], found


def test_the_drill_catalog_is_the_one_list_the_docs_follow():
    """The drills are the catalog's (roles/gpu_drills/vars/main.yml): each has its anchor in both
    guides and its row, with its layer, in docs/diagnosis.md's table; neither names a drill the
    catalog lacks."""
    import yaml
    catalog = yaml.safe_load((ROOT / "roles/gpu_drills/vars/main.yml").read_text())["gpu_drills_catalog"]
    for guide in ("docs/steps.md", "docs/steps.zh-CN.md"):
        anchors = re.findall(r'<a id="drill-([^"]+)"></a>', (ROOT / guide).read_text())
        assert sorted(anchors) == sorted(catalog), guide
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)` \| ([a-z-]+) \|", (ROOT / "docs/diagnosis.md").read_text(), re.M))
    assert rows == {name: drill["layer"] for name, drill in catalog.items()}
