"""Where the model runs: CUDA, else Apple MPS, else the CPU.

Device tests replace torch's CUDA / MPS probes with monkeypatch, so they give the same answer on a
laptop, on this CPU-only machine and on a GPU server.
"""

from __future__ import annotations

import pytest
import torch

from anatomy import devices
from anatomy.devices import DeviceUnavailableError, choose_device


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


def test_numbers_for_a_learner_are_a_detached_float64_copy_on_the_cpu():
    weights = torch.tensor([[0.25, 0.75]], requires_grad=True)
    shown = devices.float64_on_the_cpu(weights * 1)
    assert shown.device.type == "cpu" and shown.dtype == torch.float64 and not shown.requires_grad
    assert shown.tolist() == [[0.25, 0.75]]
