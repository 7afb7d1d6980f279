"""One owner per fact (issue 38 item 4): each test fails when a second owner of a fact comes back."""
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
