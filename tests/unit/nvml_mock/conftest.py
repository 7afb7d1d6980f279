"""The MIG tests' fixtures (nvml_mock_testing.py) and what they share with the GPU stack's tests
(tests/unit/roles/gpu_stack_testing.py: NVIDIA's binaries, the device plugin's dp-probe)."""
import sys

from lab_testing import TESTS

sys.path.insert(0, str(TESTS / "unit/roles"))
from gpu_stack_testing import dp_probe  # noqa: E402,F401  (pytest fixtures)
from nvml_mock_testing import advertised, built, mig_parted, parted_view  # noqa: E402,F401
