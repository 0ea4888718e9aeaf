"""Where the model runs: CUDA if present, else Apple's MPS, else the CPU."""

from __future__ import annotations

import os

import torch

DEVICE_ENVIRONMENT_VARIABLE = "ANATOMY_DEVICE"


class DeviceUnavailableError(RuntimeError):
    """A device was asked for by name but this machine does not have it."""


def available_devices() -> list[str]:
    """Device names usable on this machine, best first."""
    names = []
    if torch.cuda.is_available():
        names.append("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        names.append("mps")
    names.append("cpu")
    return names


def choose_device(requested: str | None = None) -> torch.device:
    """The requested device, else $ANATOMY_DEVICE, else the best available one."""
    requested = requested or os.environ.get(DEVICE_ENVIRONMENT_VARIABLE) or None
    if requested is None or requested == "auto":
        return torch.device(available_devices()[0])
    kind = requested.split(":")[0]
    if kind not in available_devices():
        raise DeviceUnavailableError(
            f"Device {requested!r} was requested but this machine offers only "
            f"{', '.join(available_devices())}. Unset {DEVICE_ENVIRONMENT_VARIABLE} or choose one of those."
        )
    return torch.device(requested)


def float64_on_the_cpu(tensor: torch.Tensor) -> torch.Tensor:
    """A detached float64 copy on the CPU, wherever `tensor` lives: numbers for a learner to read (numpy reads
    only CPU memory). The move comes before the cast, since Apple's MPS has no float64 at all."""
    return tensor.detach().cpu().to(torch.float64)


def describe_device(device: torch.device) -> str:
    """A short human label such as 'CUDA (NVIDIA H100)' or 'CPU'."""
    if device.type == "cuda":
        return f"CUDA ({torch.cuda.get_device_name(device)})"
    if device.type == "mps":
        return "Apple MPS"
    return "CPU"
