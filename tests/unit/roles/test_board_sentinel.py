"""The board shows each node's sentinel conditions (issue 39): RuntimeBreaksOnRestart and
RuntimeRestartPending with their status, the message of a True one; '-' where none was posted."""
import sys

from lab_testing import ROOT  # tests/lab_testing.py

from ansible.module_utils.report.render import board_body

sys.path.insert(0, str(ROOT / "roles" / "lab_board" / "files"))
from board_server import Board, Settings, sentinel_of  # noqa: E402  (roles/lab_board/files/board_server.py)

BREAKS = ("next start of containerd 1.6.20 serves no CRI: default_runtime_name runc is not among runtimes nvidia")


def test_sentinel_of_reads_only_the_sentinel_s_conditions():
    status = {"conditions": [{"type": "Ready", "status": "True"},
                             {"type": "RuntimeBreaksOnRestart", "status": "True", "message": BREAKS},
                             {"type": "RuntimeRestartPending", "status": "False", "message": "same"}]}
    assert sentinel_of(status) == {"RuntimeBreaksOnRestart": {"status": "True", "message": BREAKS},
                                   "RuntimeRestartPending": {"status": "False", "message": "same"}}
    assert sentinel_of({}) == {}


def test_the_nodes_table_shows_them(tmp_path):
    class Api(object):
        def get(self, path, params=None):
            return {"items": [
                {"metadata": {"name": "lab-node-0", "annotations": {"kwok.x-k8s.io/node": "fake"}},
                 "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                {"metadata": {"name": "lab-node-1"},
                 "status": {"conditions": [{"type": "Ready", "status": "True"},
                                           {"type": "RuntimeBreaksOnRestart", "status": "True", "message": BREAKS},
                                           {"type": "RuntimeRestartPending", "status": "True", "message": "loaded: runc"}]}}],
                "metadata": {}}

    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text("{}\n")
    board = Board(Settings(tmp_path, 1, kubeconfig=str(kubeconfig)))
    board._kube = Api()   # pylint: disable=protected-access
    html = board_body(board.context())
    row1 = html.split('data-node="lab-node-1"', 1)[1].split("</tr>", 1)[0]
    assert 'data-condition="RuntimeBreaksOnRestart" data-status="True"' in row1
    assert 'data-condition="RuntimeRestartPending" data-status="True"' in row1
    assert "default_runtime_name runc is not among" in row1 and "<th>Sentinel (next start)</th>" in html
    row0 = html.split('data-node="lab-node-0"', 1)[1].split("</tr>", 1)[0]
    assert 'data-sentinel="0">-</td>' in row0
