"""The fixtures of the GPU stack's tests (tests/unit/roles/gpu_stack_testing.py): the mock NVML
library built once into a driver root, and a copy of it per test."""
from gpu_stack_testing import dp_probe, driver_root, mock_build  # noqa: F401  (pytest fixtures)
