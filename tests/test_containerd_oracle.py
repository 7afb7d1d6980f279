"""The merge model against the real thing: containerd 1.6.20's `config dump`.

Every case under containerd_corpus/ is copied to a temp folder (@DIR@ becomes
that folder), then both the model and the real binary load it. They must agree
on the runtimes, on the files loaded, and on failing.
"""
import pathlib
import re
import shutil
import subprocess

import pytest
import yaml

import containerd_config as cc

CORPUS = pathlib.Path(__file__).parent / "containerd_corpus"
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


@pytest.mark.parametrize("case", CASES)
def test_model_matches_containerd_1_6_20(case, tmp_path, containerd_oracle):
    folder, meta = materialise(case, tmp_path)
    cwd = folder / meta.get("cwd", ".")
    cwd.mkdir(parents=True, exist_ok=True)  # an empty folder does not survive git
    main = folder / "config.toml"
    real = subprocess.run([containerd_oracle, "--config", str(main), "config", "dump"],
                          cwd=cwd, capture_output=True, text=True, timeout=30)
    if meta.get("error"):
        assert real.returncode != 0, "the corpus says containerd fails here, but it did not"
        with pytest.raises(cc.ConfigError):
            cc.judge(str(main), "1.6.20", working_dir=str(cwd))
        return
    assert real.returncode == 0, real.stderr
    model = cc.judge(str(main), "1.6.20", working_dir=str(cwd))
    assert model["predicted_runtimes"] == cc.runtimes_in_dump(real.stdout)
    imports = re.search(r"^imports = \[(.*)\]$", real.stdout, re.M).group(1)
    loaded = [p.strip().strip('"') for p in imports.split(",") if p.strip()]
    resolved = sorted(str((cwd / p).resolve()) for p in loaded)
    assert sorted(str(pathlib.Path(p).resolve()) for p in [str(main)] + model["dropin_files"]) == resolved
