"""Every module's documentation (with its doc fragments) lists exactly the options it takes."""
import json
import os
import subprocess
import sys
from lab_testing import ROOT  # tests/lab_testing.py

import pytest

MODULES = sorted(p.stem for p in (ROOT / "library").glob("*.py"))


def documented(name):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-M",
                          str(ROOT / "library"), "--json", name], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)[name]
    assert doc["examples"].strip() and doc["return"], "%s lacks EXAMPLES or RETURN" % name
    return doc["doc"]


class _Spec(Exception):
    pass


def argument_spec(name, monkeypatch):
    """The argument_spec the module hands to AnsibleModule."""
    from ansible.module_utils import basic

    def capture(self, argument_spec, **kwargs):
        raise _Spec(argument_spec)

    monkeypatch.setattr(basic.AnsibleModule, "__init__", capture)
    with pytest.raises(_Spec) as spec:
        __import__(name).main()
    return spec.value.args[0]


@pytest.mark.parametrize("name", MODULES)
def test_documented_options_are_the_accepted_ones(name, monkeypatch):
    spec = argument_spec(name, monkeypatch)
    doc = documented(name)
    assert set(doc["options"]) == set(spec)
    for option, rules in spec.items():
        documented_type = doc["options"][option].get("type", "str")
        assert documented_type == rules.get("type", "str"), option
        assert bool(doc["options"][option].get("required")) == bool(rules.get("required")), option
        if "default" in rules and rules["default"] not in (None, [], {}):
            assert doc["options"][option].get("default") == rules["default"], option
    assert doc["attributes"]["check_mode"]["support"] in ("full", "partial")
