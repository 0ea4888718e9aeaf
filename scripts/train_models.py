"""Train the models that ship in anatomy/checkpoints/trained, from their fixed seeds, and write them there.

    python scripts/train_models.py                       # all three
    python scripts/train_models.py --only sorter-cheater
    python scripts/train_models.py --out /tmp/trained    # somewhere else (e.g. to compare with the shipped files)

The same recipe gives bit-identical weights every time on the same kind of CPU with the same number of
threads (a float sum split over 1, 2 or 4 threads rounds differently, so the thread count is pinned; the
shipped files were made with the default, 2). For each model it prints the wall time, the final training loss
and the exact-sequence accuracy on held-out words (drawn from HELD_OUT_SEED).
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

import torch

from anatomy.checkpoints.saving import WEIGHTS_FILE, save_trained
from anatomy.training.recipes import HELD_OUT_SEED, RECIPES, TRAINED_FOLDER
from anatomy.training.tasks import exact_match_rate

HELD_OUT_WORDS = 2000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(RECIPES), action="append", help="train this model (repeatable)")
    parser.add_argument("--out", type=Path, default=TRAINED_FOLDER, help="folder for the model folders")
    parser.add_argument("--steps", type=int, help="steps for every recipe (a quick trial)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2, as shipped)")
    arguments = parser.parse_args()
    # CPU kernels are deterministic already; this makes any non-deterministic op an error instead of a surprise.
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(arguments.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name in arguments.only or list(RECIPES):
        recipe = RECIPES[name]
        overrides = {} if arguments.steps is None else {"steps": arguments.steps}

        start = time.perf_counter()

        def report(step: int, loss: float, name: str = name, start: float = start) -> None:
            if step % 500 == 0:
                elapsed = time.perf_counter() - start
                print(f"  {name} step {step:5d}  loss {loss:.5f}  ({elapsed:.0f} s)", flush=True)

        model, run = recipe.train(report, **overrides)
        words = recipe.task.sample_words(HELD_OUT_WORDS, torch.Generator().manual_seed(HELD_OUT_SEED))
        accuracy = exact_match_rate(recipe.task.predict(model, words), [recipe.task.answer(w) for w in words])
        folder = save_trained(model, recipe.task, arguments.out / name)
        digest = hashlib.sha256((folder / WEIGHTS_FILE).read_bytes()).hexdigest()[:16]
        parameters = sum(parameter.numel() for parameter in model.parameters())
        print(
            f"{name}: {parameters:,} parameters, {run.steps} steps in {run.seconds:.1f} s, "
            f"final loss {run.final_loss:.2e}, held-out exact-sequence accuracy {accuracy:.2%} "
            f"on {HELD_OUT_WORDS} words; wrote {folder} (sha256 {digest}...)",
            flush=True,
        )


if __name__ == "__main__":
    main()
