"""The merge model against the real thing: `config dump` of containerd 1.6.20 (Debian's
package) and of containerd 2.2.0 (built from toolchain/containerd2).

Every case under containerd_corpus/ is copied to a temp folder (@DIR@ becomes
that folder), then both the model and the real binary load it. They must agree
on the runtimes, on failing, and (1.6, whose dump lists them) on the files loaded.

case.yml: `error: true` - containerd fails to load it; `error_2: false` - but 2.x
does not; `dump_hides_error_2: true` - the 2.x daemon fails, yet `config dump`
succeeds (it ignores "file not found" anywhere in the import chain), so the model's
error is checked against the source, not the dump.
"""
import pathlib
import re
import shutil
import subprocess
from lab_testing import TESTS  # tests/lab_testing.py

import pytest
import yaml

from ansible.module_utils.containerd import loader as cc
from ansible.module_utils.containerd import merge as cm

CORPUS = TESTS / "containerd_corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def materialise(case, tmp_path):
    dest = tmp_path / case
    shutil.copytree(CORPUS / case, dest)
    for path in dest.rglob("*"):
        if path.is_file() and path.name != "case.yml":
            path.write_text(path.read_text().replace("@DIR@", str(dest)))
    meta = {}
    if (dest / "case.yml").exists():
        meta = yaml.safe_load((dest / "case.yml").read_text()) or {}
    return dest, meta


def test_corpus_is_big_enough():
    assert len(CASES) >= 20


ORACLES = {"1.6.20": "containerd_oracle", "2.2.0": "containerd2_oracle",
           "2.4.2": "containerd24_oracle"}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("version", sorted(ORACLES))
def test_model_matches_real_containerd(version, case, tmp_path, request):
    binary = request.getfixturevalue(ORACLES[version])
    folder, meta = materialise(case, tmp_path)
    cwd = folder / meta.get("cwd", ".")
    cwd.mkdir(parents=True, exist_ok=True)  # an empty folder does not survive git
    main = folder / "config.toml"
    real = subprocess.run([binary, "--config", str(main), "config", "dump"],
                          cwd=cwd, capture_output=True, text=True, timeout=30)
    v2 = version.startswith("2.")
    error = meta.get("error_2", meta.get("error")) if v2 else meta.get("error")
    if error:
        if v2 and meta.get("dump_hides_error_2"):
            assert real.returncode == 0, "the 2.x dump was expected to hide this error"
        else:
            assert real.returncode != 0, "the corpus says containerd fails here, but it did not"
        with pytest.raises(cc.ConfigError):
            cm.judge(str(main), version, working_dir=str(cwd))
        return
    assert real.returncode == 0, real.stderr
    model = cm.judge(str(main), version, working_dir=str(cwd))
    assert model["predicted_runtimes"] == cm.runtimes_in_dump(real.stdout)
    if v2:
        return  # 2.x's dump lists the import patterns, not the files it loaded
    imports = re.search(r"^imports = \[(.*)\]$", real.stdout, re.M).group(1)
    loaded = [p.strip().strip('"') for p in imports.split(",") if p.strip()]
    resolved = sorted(str((cwd / p).resolve()) for p in loaded)
    assert sorted(str(pathlib.Path(p).resolve()) for p in [str(main)] + model["dropin_files"]) == resolved
