# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's grader: one definition of "step N is right", which playbooks/grade.yml and
Molecule's verify both run (module lab_grade).

- base.py          Result, the readers of trainee files, the common mistakes, GraderBase
- node_steps.py    steps 1-4: the node's containerd files (no cluster needed)
- cluster_steps.py steps 5-8: manifests and reports against the live cluster
- drills.py        the diagnosis drills and the fix after the real reboot
- reporting.py     the text report, JUnit XML, the guide's sections, step numbers as typed

Each check reads the lab folder and, for steps 5-8, the live cluster, and returns reasons
(empty = passed) and advice (never fails a step). Nothing is written to the lab folder or the
cluster. Every expected value the lab could set differently is a setting the caller gives
(lab_grade's options, from ``lab_grade_settings`` in inventory/group_vars/all/lab.yml).
"""

from ansible.module_utils.lab.refusals import LabError
from ansible.module_utils.grader.cluster_steps import ClusterSteps
from ansible.module_utils.grader.base import Result
from ansible.module_utils.grader.drills import Drills
from ansible.module_utils.grader.node_steps import NodeSteps
from ansible.module_utils.grader.reporting import add_guide_advice, junit_xml, parse_steps, report_text

# lab_grade's options that are lab settings the checks compare against (not where to look)
SETTINGS = ("observed_runtimes", "containerd_version", "nvidia_dropin", "physical_gpus",
            "vram_per_gpu_gib", "replicas", "gpu_node", "gpu_amount", "timeslicing_node",
            "nodes", "rollout")


class Grader(NodeSteps, ClusterSteps, Drills):
    """Grader(lab_root, kubeconfig=None, context=None, **settings): grade(steps) ->
    {"N": {"passed", "reasons", "advice"}}; drill() and reboot_fix() grade the drills."""

    STEPS = {1: "step1", 2: "step2", 3: "step3", 4: "step4",
             5: "step5", 6: "step6", 7: "step7", 8: "step8"}

    def grade(self, steps):
        out = {}
        for step in steps:
            check = getattr(self, self.STEPS[int(step)])
            missing = self.missing_settings(check)
            if missing:
                result = Result()
                result.fail("step %s compares against the lab's setting(s) %s, which lab_grade "
                            "was not given: pass them (playbooks/grade.yml passes "
                            "lab_grade_settings from inventory/group_vars/all/lab.yml)"
                            % (step, ", ".join(missing)))
                out[str(step)] = result.as_dict()
                continue
            try:
                result = check()
            except Exception as exc:  # a check must report, not crash the grader
                result = Result()
                result.fail("the grader could not judge this step's files (%s); check them "
                            "against the guide and report this as a grader bug" % exc)
            out[str(step)] = result.as_dict()
        return out


def grade_lab(params):
    """What lab_grade returns for its parameters (the module's options): the steps and the
    drill graded, the text and JUnit reports. Raises LabError for a request it cannot grade."""
    drill = params.get("drill")
    steps, problem = parse_steps(params.get("steps"), default=[] if drill else list(range(1, 9)))
    if problem:
        raise LabError(problem)
    if not steps and not drill:
        raise LabError("nothing to grade: steps is empty; give step numbers 1-8 (e.g. "
                       "grade_steps=1,2) or leave them out for all eight")
    grader = Grader(params["lab_root"], params.get("kubeconfig"), params.get("context"),
                    **{name: params.get(name) for name in SETTINGS})
    results = grader.grade(steps)
    if params.get("guide"):
        add_guide_advice(results, params["guide"])
    if drill == "reboot":
        results["drill reboot"] = grader.reboot_fix(params.get("real_node"),
                                                    params.get("real_node_crictl")).as_dict()
    elif drill:
        if not params.get("drill_state_file"):
            raise LabError("drill needs drill_state_file (where playbooks/drill.yml records the "
                           "drill in place)")
        results["drill " + drill] = grader.drill(drill, params["drill_state_file"],
                                                 params.get("node_facts_file")).as_dict()
    failed = [k for k, v in results.items() if not v["passed"]]
    return {"steps": results, "passed": not failed,
            "failed_steps": [int(k) if k.isdigit() else k for k in failed],
            "text": report_text(results, params.get("report_path"), params.get("junit_path")),
            "junit": junit_xml(results)}
