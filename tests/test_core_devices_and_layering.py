"""Where the model runs, and the rule that the model core never imports the user interface.

Device tests replace torch's CUDA / MPS probes with monkeypatch, so they give the same answer on a
laptop, on this CPU-only machine and on a GPU server.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from anatomy import devices
from anatomy.devices import DeviceUnavailableError, choose_device

PACKAGE = Path(devices.__file__).parent


@pytest.fixture
def machine(monkeypatch):
    """A pretend machine: `machine(cuda=..., mps=...)` fixes what torch reports as available."""
    monkeypatch.delenv(devices.DEVICE_ENVIRONMENT_VARIABLE, raising=False)

    def configure(cuda: bool = False, mps: bool = False) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)

    return configure


def test_a_machine_without_accelerators_runs_on_the_cpu(machine):
    machine(cuda=False, mps=False)
    assert devices.available_devices() == ["cpu"]
    assert choose_device() == torch.device("cpu")
    assert choose_device("auto") == torch.device("cpu")


def test_without_a_request_the_best_device_of_this_machine_is_chosen(monkeypatch):
    monkeypatch.delenv(devices.DEVICE_ENVIRONMENT_VARIABLE, raising=False)
    assert choose_device() == torch.device(devices.available_devices()[0])
    assert devices.available_devices()[-1] == "cpu"


def test_cpu_can_always_be_asked_for_by_name(machine):
    machine(cuda=True, mps=True)
    assert choose_device("cpu") == torch.device("cpu")


def test_auto_prefers_cuda_then_mps_then_cpu(machine):
    machine(cuda=True, mps=True)
    assert choose_device("auto") == torch.device("cuda")
    machine(cuda=False, mps=True)
    assert choose_device("auto") == torch.device("mps")
    assert devices.available_devices() == ["mps", "cpu"]


def test_the_environment_variable_overrides_the_automatic_choice(machine, monkeypatch):
    machine(cuda=True)
    monkeypatch.setenv("ANATOMY_DEVICE", "cpu")
    assert choose_device() == torch.device("cpu")
    assert choose_device("cuda") == torch.device("cuda")  # an explicit argument still wins


@pytest.mark.parametrize("requested", ["cuda", "cuda:0", "mps"])
def test_asking_for_a_missing_accelerator_raises_and_lists_what_exists(machine, requested):
    machine(cuda=False, mps=False)
    with pytest.raises(DeviceUnavailableError, match=r"offers only cpu"):
        choose_device(requested)


def test_a_missing_accelerator_named_in_the_environment_raises_too(machine, monkeypatch):
    machine(cuda=False)
    monkeypatch.setenv("ANATOMY_DEVICE", "cuda")
    with pytest.raises(DeviceUnavailableError, match="ANATOMY_DEVICE"):
        choose_device()


UI_IMPORT = re.compile(r"^\s*(import|from)\s+(streamlit|plotly)\b", re.MULTILINE)


def test_ui_import_pattern_catches_what_it_should():
    caught = ["import streamlit as st", "from plotly import graph_objects", "    import plotly.express as px"]
    assert all(UI_IMPORT.search(line) for line in caught)
    assert not UI_IMPORT.search("import torch\nfrom anatomy.trace import ModelTrace")


def test_model_core_source_never_imports_streamlit_or_plotly():
    core_files = sorted(PACKAGE.glob("*.py"))                # anatomy/*.py; anatomy/ui and anatomy/viz are apart
    assert {"attention.py", "models.py", "pretrained.py"} <= {path.name for path in core_files}
    offenders = [f"{path.name}: {match.group(0).strip()}" for path in core_files
                 for match in UI_IMPORT.finditer(path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_importing_every_core_module_loads_no_ui_library():
    modules = [f"anatomy.{path.stem}" for path in sorted(PACKAGE.glob("*.py")) if path.stem != "__init__"]
    script = (
        "import importlib, sys\n"
        f"for name in ['anatomy', *{modules!r}]: importlib.import_module(name)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('streamlit', 'plotly')))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_numbers_for_a_learner_are_a_detached_float64_copy_on_the_cpu():
    weights = torch.tensor([[0.25, 0.75]], requires_grad=True)
    shown = devices.float64_on_the_cpu(weights * 1)
    assert shown.device.type == "cpu" and shown.dtype == torch.float64 and not shown.requires_grad
    assert shown.tolist() == [[0.25, 0.75]]
