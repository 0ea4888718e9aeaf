"""How long does "Train it yourself" take on each device this machine has?

    python benchmarks/training_speed.py                 # every recipe, its full steps, every device
    python benchmarks/training_speed.py --steps 300     # a shorter run of each
    python benchmarks/training_speed.py --json results.json

Each recipe is trained from the same seed on the CPU and then on every accelerator present (CUDA, MPS), the
way the training page does it (`live_training.train_fresh`). The CPU run is the reference measured in the same
run: the table gives seconds, steps per second, the speed-up over the CPU, the final loss and the held-out
exact-match rate, so a faster device that learned less would show. Informational: exits 0 unless it fails.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from anatomy.devices import available_devices, describe_device
from anatomy.training.recipes import RECIPES
from lessons.training import live as live_training


def train_once(name: str, device: torch.device, steps: int | None) -> dict:
    recipe = RECIPES[name]
    settings = live_training.live_settings(
        recipe, steps or recipe.settings.steps, recipe.settings.learning_rate, seed=0
    )
    model, run = live_training.train_fresh(recipe, settings, 0, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return {
        "recipe": name,
        "device": describe_device(device),
        "steps": run.steps,
        "seconds": run.seconds,
        "steps_per_second": run.steps / run.seconds,
        "final_loss": run.final_loss,
        "held_out_accuracy": live_training.held_out_accuracy(model, recipe.task),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, help="steps per run (default: each recipe's own)")
    parser.add_argument("--only", choices=sorted(RECIPES), action="append", help="this recipe (repeatable)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows to this JSON file")
    arguments = parser.parse_args()
    print(
        f"torch {torch.__version__}; devices: {', '.join(available_devices())}; {torch.get_num_threads()} CPU threads"
    )
    header = (
        f"{'recipe':<15} {'device':<34} {'steps':>5} {'seconds':>8} {'steps/s':>8} {'vs CPU':>7} "
        f"{'final loss':>10} {'held-out':>8}"
    )
    print(header)
    print("-" * len(header))
    devices = ["cpu"] + [device for device in available_devices() if device != "cpu"]  # the reference first
    rows = []
    for name in arguments.only or sorted(RECIPES):
        on_cpu = None
        for device in devices:
            row = train_once(name, torch.device(device), arguments.steps)
            on_cpu = on_cpu or row
            row["speed_up_over_cpu"] = row["steps_per_second"] / on_cpu["steps_per_second"]
            rows.append(row)
            print(
                f"{name:<15} {row['device']:<34} {row['steps']:>5} {row['seconds']:>8.1f} "
                f"{row['steps_per_second']:>8.1f} {row['speed_up_over_cpu']:>6.2f}x "
                f"{row['final_loss']:>10.2e} {row['held_out_accuracy']:>8.1%}",
                flush=True,
            )
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
