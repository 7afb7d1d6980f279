"""The MIG tests share the GPU stack's helpers (tests/unit/roles/gpu_stack_testing.py and the
device plugin's dp-probe fixture in tests/unit/roles/test_gpu_stack_plugin.py)."""
import sys

from lab_testing import TESTS

sys.path.insert(0, str(TESTS / "unit/roles"))
