"""On every device this machine has, the models compute what transformers computes on that same device.

The parameter list is `available_devices()`: the CPU everywhere, and CUDA or Apple's MPS where present (CI's
machine has only the CPU; these tests were also run on a lent NVIDIA GPU, see the README). The other
parity suites pin the CPU on purpose; this one moves both implementations onto each device in turn, which
is what the app does when it finds an accelerator.

The tests that compare a device with the CPU run on each accelerator (`ACCELERATORS`). On a machine with the CPU
alone there is nothing to compare it with, and they are not collected there: on the CPU they would compare the
CPU with itself, which cannot fail.
"""

from __future__ import annotations

import math

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.devices import available_devices
from anatomy.training.recipes import RECIPES
from lessons.training import live as live_training
from tests.tiny_models import VOCABULARY, save_wandering_gpt2

pytestmark = pytest.mark.usefixtures("no_autograd")

DEVICES = available_devices()
ACCELERATORS = [device for device in DEVICES if device != "cpu"]
TOLERANCE = 1e-5  # float32 on one device: two implementations round differently, never by more than this
ACROSS_DEVICES = 1e-4  # float32, the same implementation on two devices (different kernels, same maths)
BATCH = ["The cat sat.", "A much longer sentence about mathematics and love.", "Hi"]


def largest_difference(left: torch.Tensor, right: torch.Tensor) -> float:
    return (left.float().cpu() - right.float().cpu()).abs().max().item()


@pytest.fixture(scope="module", params=DEVICES)
def device(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def embedded_on_device(device):
    return load_pretrained(device=device)


@pytest.fixture(scope="module")
def bert_on_device(embedded_on_device, device):
    from transformers import BertModel

    model = BertModel.from_pretrained(str(embedded_on_device.folder), attn_implementation="eager")
    return model.eval().requires_grad_(False).to(device)


def test_load_pretrained_puts_every_weight_on_the_device_it_was_given(embedded_on_device, device):
    assert embedded_on_device.device.type == device
    assert {parameter.device.type for parameter in embedded_on_device.model.parameters()} == {device}
    assert {buffer.device.type for buffer in embedded_on_device.model.buffers()} <= {device}


def test_the_embedded_encoder_matches_bert_in_every_layer_and_head_on_the_device(
    embedded_on_device, bert_on_device, hf_tokenizer, device
):
    encoding = hf_tokenizer(BATCH, padding=True, return_tensors="pt").to(device)
    ours = embedded_on_device.model(
        encoding["input_ids"], encoding["token_type_ids"], encoding["attention_mask"], trace=True
    )
    theirs = bert_on_device(**encoding, output_attentions=True, output_hidden_states=True)
    real_tokens = encoding["attention_mask"].bool()
    assert ours.last_hidden_state.device.type == device
    assert len(ours.hidden_states) == len(theirs.hidden_states) == 7
    for layer, (mine, reference) in enumerate(zip(ours.hidden_states, theirs.hidden_states)):
        difference = largest_difference(mine[real_tokens], reference[real_tokens])
        assert difference <= TOLERANCE, f"{device}, hidden state {layer}: max |diff| {difference:.2e}"
    for layer, (mine, reference) in enumerate(zip(ours.attentions, theirs.attentions)):
        difference = largest_difference(mine, reference)
        assert difference <= TOLERANCE, f"{device}, attention of layer {layer}: max |diff| {difference:.2e}"


def _arguments(encoding) -> dict[str, torch.Tensor]:
    return {
        "input_ids": encoding["input_ids"],
        "token_type_ids": encoding["token_type_ids"],
        "attention_mask": encoding["attention_mask"],
    }


@pytest.fixture(scope="module")
def tiny_gpt2_folder(tmp_path_factory):
    return save_wandering_gpt2(tmp_path_factory.mktemp("tiny-gpt2-every-device"))


def test_a_gpt2_decoder_matches_transformers_on_the_device(tiny_gpt2_folder, device):
    from transformers import GPT2LMHeadModel

    ours = load_pretrained(str(tiny_gpt2_folder), device=device).model
    reference = GPT2LMHeadModel.from_pretrained(str(tiny_gpt2_folder), attn_implementation="eager")
    reference = reference.eval().requires_grad_(False).to(device)
    input_ids = torch.randint(0, VOCABULARY, (2, 13), generator=torch.Generator().manual_seed(3)).to(device)
    mine = ours(input_ids, trace=True)
    theirs = reference(input_ids, output_attentions=True)
    assert largest_difference(mine.logits, theirs.logits) <= TOLERANCE
    for layer, (weights, expected) in enumerate(zip(mine.attentions, theirs.attentions)):
        assert largest_difference(weights, expected) <= TOLERANCE, f"{device}, layer {layer}"
        assert torch.all(weights.triu(diagonal=1) == 0.0), f"{device}, layer {layer} looks at a future token"


SORTER_SETTINGS = live_training.live_settings(RECIPES["sorter"], steps=30, learning_rate=3e-3, seed=0)


@pytest.mark.slow
def test_a_live_training_run_learns_on_the_device(device):
    with torch.enable_grad():
        model, run = live_training.train_fresh(RECIPES["sorter"], SORTER_SETTINGS, 0, torch.device(device))
    assert {parameter.device.type for parameter in model.parameters()} == {device}
    assert run.steps == 30 and all(math.isfinite(loss) for loss in run.losses)
    assert sum(run.losses[-5:]) / 5 < run.losses[0] - 0.3, "thirty steps lower the loss on every device"


# Comparisons of an accelerator with the CPU, defined only where the machine has one (the module's docstring).
if ACCELERATORS:

    @pytest.mark.parametrize("accelerator", ACCELERATORS)
    class TestAnAcceleratorAgainstTheCpu:
        """Each test runs on each accelerator: the same numbers, or the same words, as on the CPU."""

        def test_the_encoder_on_an_accelerator_gives_the_numbers_it_gives_on_the_cpu(
            self, embedded, hf_tokenizer, accelerator
        ):
            encoding = hf_tokenizer(BATCH, padding=True, return_tensors="pt")
            on_cpu = embedded.model(**_arguments(encoding), trace=True)
            moved = {name: tensor.to(accelerator) for name, tensor in _arguments(encoding).items()}
            on_device = load_pretrained(device=accelerator).model(**moved, trace=True)
            real_tokens = encoding["attention_mask"].bool()
            difference = largest_difference(
                on_device.last_hidden_state.cpu()[real_tokens], on_cpu.last_hidden_state[real_tokens]
            )
            assert difference <= ACROSS_DEVICES, f"{accelerator} against the CPU: max |diff| {difference:.2e}"
            assert on_cpu.last_hidden_state.abs().max() > 0.5, "real, varied activations: agreement is not on zeros"

        def test_a_gpt2_decoder_on_an_accelerator_continues_a_prompt_as_on_the_cpu(self, tiny_gpt2_folder, accelerator):
            prompt = torch.tensor([[3, 14, 15, 92]])
            on_cpu = load_pretrained(str(tiny_gpt2_folder), device="cpu").model
            on_accelerator = load_pretrained(str(tiny_gpt2_folder), device=accelerator).model
            expected = on_cpu.generate_greedy(prompt, max_new_tokens=12)
            assert (
                on_accelerator.generate_greedy(prompt.to(accelerator), max_new_tokens=12).tolist() == expected.tolist()
            )

        @pytest.mark.slow
        def test_a_live_training_run_on_an_accelerator_starts_from_the_first_loss_of_the_cpu(self, accelerator):
            with torch.enable_grad():
                _, run = live_training.train_fresh(RECIPES["sorter"], SORTER_SETTINGS, 0, torch.device(accelerator))
                _, on_cpu = live_training.train_fresh(RECIPES["sorter"], SORTER_SETTINGS, 0, torch.device("cpu"))
            assert run.losses[0] == pytest.approx(on_cpu.losses[0], abs=1e-4), "same weights, same first batch"
