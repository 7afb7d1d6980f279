# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's strategy: Mitogen's ``mitogen_linear`` when the mitogen package is installed,
Ansible's own ``linear`` otherwise.

Why: on the lab machine (2 cores) every Python module task costs about 0.65 s with the
standard executor - a fresh interpreter that recompiles ansible.module_utils from the
AnsiballZ zip each time - and a no-op rerun of the lab runs about twenty of them. Mitogen
(https://mitogen.networkgenomics.com, BSD licence, pinned in requirements.txt) keeps one
interpreter per target and runs each module in it: the same modules, arguments and
results, a fraction of the start-up cost. The README has both timings.

Turn it off for one run with ``ANSIBLE_STRATEGY=linear``; without the package installed
this file falls back to ``linear`` and says so once.
"""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: mitogen_linear
short_description: Mitogen's linear strategy, or Ansible's linear when mitogen is missing
description:
  - Runs tasks exactly like the C(linear) strategy (all hosts finish a task before the next
    starts); with the mitogen package installed, modules run in persistent interpreters.
author: gpu-incident-lab contributors
"""

try:
    import ansible_mitogen.loaders  # noqa: F401  (mitogen checks the Ansible version here)
    import ansible_mitogen.strategy
except ImportError as exc:
    from ansible.plugins.strategy.linear import StrategyModule as _Base
    from ansible.utils.display import Display

    _WHY = str(exc)

    class StrategyModule(_Base):
        def __init__(self, tqm):
            Display().warning("mitogen is not installed (%s): running Ansible's linear strategy, "
                              "which is slower; `make venv` installs it" % _WHY)
            super().__init__(tqm)
else:
    class StrategyModule(ansible_mitogen.strategy.StrategyMixin,
                         ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)):
        pass
