"""Tiny checkpoints built from configs, for tests that need a model of a kind the app does not ship (no
download: each is drawn from a fixed seed and saved into a temporary folder)."""

from __future__ import annotations

from pathlib import Path

import torch

VOCABULARY = 101


def save_wandering_gpt2(folder):
    """A tiny random GPT-2 (2 layers, 4 heads, width 32) saved in `folder`, drawn with std 0.5 from seed 0."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=VOCABULARY,
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=4,
        initializer_range=0.5,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation="eager",
    )
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    return folder


GPT2_POSITIONS = 64
GPT2_TEXT = "time flies like an arrow; fruit flies like a banana"


def save_tiny_gpt2(folder: Path, positions: int = GPT2_POSITIONS) -> Path:
    """A random 2-layer, 2-head GPT-2 with a byte-level BPE tokenizer trained offline on the app's corpus.

    Weights are drawn with std 0.5 (GPT-2 uses 0.02) so that next-token distributions are far from uniform
    and a wrong ranking could not hide among near-ties."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    from lessons.tokenization.zoo import read_corpus

    end_of_text = "<|endoftext|>"
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        read_corpus(),
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=[end_of_text],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = GPT2TokenizerFast(
        tokenizer_object=bpe, bos_token=end_of_text, eos_token=end_of_text, unk_token=end_of_text
    )
    tokenizer.save_pretrained(folder)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        config = GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=positions,
            n_embd=32,
            n_layer=2,
            n_head=2,
            initializer_range=0.5,
            bos_token_id=None,
            eos_token_id=None,
        )
        GPT2LMHeadModel(config).eval().save_pretrained(folder)
    return folder


MASKED_LM_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def save_tiny_bert_for_masked_lm(folder: Path, with_head: bool = True) -> Path:
    """A random 2-layer, 4-head BertForMaskedLM of width 32 with the embedded MiniLM's WordPiece tokenizer
    (so its vocabulary, 30,522 tokens, [MASK] included), drawn with std 1.0 from seed 0: its best guesses
    get probabilities of 0.1 to 0.3 (visible bars), and mean nothing. with_head=False saves its body alone
    (a BertModel), as sentence-transformers saves MiniLM."""
    import shutil

    from transformers import BertConfig, BertForMaskedLM, BertModel

    from anatomy.checkpoints.pretrained import embedded_model_folder

    for name in MASKED_LM_TOKENIZER_FILES:
        shutil.copy(embedded_model_folder() / name, folder / name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        config = BertConfig(
            vocab_size=30522,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            initializer_range=1.0,
            attn_implementation="eager",
        )
        (BertForMaskedLM if with_head else BertModel)(config).eval().save_pretrained(folder)
    return folder


def save_tiny_roberta_for_masked_lm(folder: Path) -> Path:
    """A random 2-layer RobertaForMaskedLM of width 32 with a byte-level BPE tokenizer trained offline on the
    app's corpus, RoBERTa's special tokens (<s> <pad> </s> <unk> <mask>, ids 0 to 4) and its `<s> … </s>` frame."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

    from lessons.tokenization.zoo import read_corpus

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        read_corpus(),
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    bpe.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tokenizer = RobertaTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
    )
    tokenizer.save_pretrained(folder)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        config = RobertaConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            max_position_embeddings=66,
            initializer_range=1.0,
            attn_implementation="eager",
        )
        RobertaForMaskedLM(config).eval().save_pretrained(folder)
    return folder
