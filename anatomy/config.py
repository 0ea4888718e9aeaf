"""Model configurations: one frozen dataclass per family, presets, and parameter counts.

A configuration says everything about a model's *shape* and nothing about its weights. The parameter
count of every model in the lessons' tables (BERT, DistilBERT, GPT-2) follows from these few numbers alone, which is why
`parameter_count` takes a configuration and never a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar

Activation = Literal["gelu", "gelu_tanh", "relu", "silu"]
NormPlacement = Literal["pre", "post"]
NormKind = Literal["layer", "rms"]  # LayerNorm (BERT, GPT-2) or RMSNorm (Llama, SmolLM2)
# A table added to the embeddings (learned, as GPT-2's, or the fixed sinusoids of "Attention Is All You Need",
# §3.5), or RoPE inside attention.
PositionKind = Literal["learned", "sinusoidal", "rotary"]
FeedForwardKind = Literal["plain", "gated"]  # expand-activate-contract (GPT-2), or SwiGLU's gated form (Llama)

SEQ2SEQ_MODEL_TYPE = "anatomy-seq2seq"  # config.json's model_type for the encoder-decoder trained here
# What the config.json of a model trained here holds besides the configuration (see checkpoints/saving.py).
TRAINED_CHECKPOINT_KEYS = frozenset(
    {"model_type", "bos_token_id", "eos_token_id", "pad_token_id", "anatomy_task", "anatomy_vocabulary"}
)
# Names these configurations used to have, and the name each field has now.
RENAMED_FIELDS = {"norm": "norm_placement", "key_value_heads": "num_kv_heads"}

# Hugging Face names for the feed-forward activation, mapped onto ours. BERT's "gelu" is the exact
# erf form; GPT-2's "gelu_new" is the tanh approximation it was trained with.
_HF_ACTIVATIONS: dict[str, Activation] = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
    "silu": "silu",
}


@dataclass(frozen=True, kw_only=True)
class TransformerConfig:
    """The numbers every transformer stack shares."""

    vocab_size: int = 30522  # V: rows of the token embedding table
    max_positions: int = 512  # longest sequence the learned position table covers
    width: int = 768  # D: the model width ("hidden size", "d_model")
    num_layers: int = 12  # blocks in the stack
    num_heads: int = 12  # H: attention heads per block (D must divide by H)
    ff_width: int = 3072  # F: feed-forward hidden width (4 * D by convention)
    activation: Activation = "gelu"  # feed-forward non-linearity
    norm_placement: NormPlacement = "post"  # layer norm after the residual sum (post) or before the sublayer (pre)
    layer_norm_eps: float = 1e-12  # BERT uses 1e-12, GPT-2 1e-5
    dropout: float = 0.1  # used only in training; inference runs in eval mode

    def __post_init__(self) -> None:
        if self.width % self.num_heads:
            raise ValueError(f"width {self.width} is not divisible by num_heads {self.num_heads}")

    @property
    def head_width(self) -> int:
        """d_head: the width of one attention head."""
        return self.width // self.num_heads

    @property
    def longest_input(self) -> int:
        """The most tokens one input may have."""
        return self.max_positions


@dataclass(frozen=True, kw_only=True)
class EncoderConfig(TransformerConfig):
    """A BERT-style encoder: bidirectional attention, [CLS] summary token, post-LN by default."""

    type_vocab_size: int = 2  # segment embeddings for sentence pairs (0: none, as in DistilBERT)
    embedding_layer_norm: bool = True  # BERT normalises the summed embeddings before layer 0
    pooler: bool = True  # BERT's dense + tanh on [CLS]; DistilBERT has none
    pad_token_id: int = 0
    # Where position numbers start: 0 in BERT; RoBERTa counts from pad_token_id + 1 (= 2), so its table has two
    # rows more (514) than the longest input it reads (512).
    position_offset: int = 0
    # The masked-language-model head that pre-training left (BertForMaskedLM, DistilBertForMaskedLM,
    # RobertaForMaskedLM): dense, activation, LayerNorm, then scores over the vocabulary by the token
    # embedding matrix itself, plus a bias per word. Checkpoints saved without it (MiniLM) have none.
    masked_lm_head: bool = False

    @property
    def longest_input(self) -> int:
        """The most tokens one input may have: the position table's rows past the offset (RoBERTa: 512)."""
        return self.max_positions - self.position_offset


@dataclass(frozen=True, kw_only=True)
class DecoderConfig(TransformerConfig):
    """A GPT-2-style decoder: causal attention, pre-LN, a final layer norm and a tied LM head.

    The fields from `norm_kind` on are the switches that turn the same modules into a modern LLM of the
    Llama family (SmolLM2, TinyLlama, Llama 2/3): RMSNorm, rotary positions, grouped-query attention, a gated
    SwiGLU feed-forward and no biases. Their defaults are GPT-2's.
    """

    vocab_size: int = 50257
    max_positions: int = 1024  # with rotary positions there is no table: the context length it was trained to
    activation: Activation = "gelu_tanh"
    norm_placement: NormPlacement = "pre"
    layer_norm_eps: float = 1e-5  # the epsilon of whichever norm `norm_kind` picks
    tie_embeddings: bool = True  # the LM head reuses the token embedding matrix
    cross_attention: bool = False  # True for the decoder half of an encoder-decoder model
    causal: bool = True  # False only for the "cheater", trained to show why the mask exists
    norm_kind: NormKind = "layer"  # LayerNorm (GPT-2) or RMSNorm (Llama)
    positions: PositionKind = "learned"  # a learned position table (GPT-2), the paper's sinusoids, or RoPE (Llama)
    rope_theta: float = 10_000.0  # rotary base: pair k turns by position · θ^(−2k/d_head) (SmolLM2: 100 000)
    # H_kv: key/value heads, each shared by num_heads / num_kv_heads query heads (grouped-query attention, Ainslie
    # et al., 2023). 1 is multi-query attention; left out, it is num_heads: the original multi-head attention.
    num_kv_heads: int = None  # type: ignore[assignment]  # filled in by __post_init__
    feed_forward: FeedForwardKind = "plain"  # "gated": down(activation(gate(x)) · up(x)), SwiGLU with silu
    bias: bool = True  # biases on the attention and feed-forward projections (Llama has none)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_kv_heads is None:  # one per query head, stored as a number: equal models get equal configs
            object.__setattr__(self, "num_kv_heads", self.num_heads)  # (how a frozen dataclass fills in a field)
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} is not divisible by num_kv_heads {self.num_kv_heads}")
        if self.positions == "rotary" and self.head_width % 2:
            raise ValueError(f"rotary positions turn pairs of coordinates: head width {self.head_width} is odd")


@dataclass(frozen=True, kw_only=True)
class Seq2SeqConfig(TransformerConfig):
    """An encoder-decoder ("Attention Is All You Need"): a bidirectional encoder reads the source, a causal
    decoder writes the target and reads the encoder's output through cross-attention.

    `num_layers` counts the encoder's blocks and `num_decoder_layers` the decoder's, as in T5's config.
    Both halves share the width, heads, feed-forward size and norm placement (pre-LN by default).
    """

    vocab_size: int = 32
    max_positions: int = 32
    width: int = 64
    num_layers: int = 2
    num_decoder_layers: int = 2
    num_heads: int = 2
    ff_width: int = 256
    activation: Activation = "gelu"
    norm_placement: NormPlacement = "pre"
    layer_norm_eps: float = 1e-5
    dropout: float = 0.0

    def _shared(self) -> dict[str, Any]:
        names = (
            "vocab_size",
            "max_positions",
            "width",
            "num_heads",
            "ff_width",
            "activation",
            "norm_placement",
            "layer_norm_eps",
            "dropout",
        )
        return {name: getattr(self, name) for name in names}

    @property
    def encoder(self) -> EncoderConfig:
        """The encoder half: no segment embeddings, no embedding LayerNorm, no pooler."""
        return EncoderConfig(
            **self._shared(), num_layers=self.num_layers, type_vocab_size=0, embedding_layer_norm=False, pooler=False
        )

    @property
    def decoder(self) -> DecoderConfig:
        """The decoder half: causal self-attention plus cross-attention, LM head tied to its embeddings."""
        return DecoderConfig(**self._shared(), num_layers=self.num_decoder_layers, cross_attention=True)


def family(config: TransformerConfig) -> str:
    """Which shape of transformer a configuration builds: "encoder", "decoder" or "encoder-decoder"."""
    if isinstance(config, Seq2SeqConfig):
        return "encoder-decoder"
    return "decoder" if isinstance(config, DecoderConfig) else "encoder"


# HuggingFaceTB/SmolLM2-135M(-Instruct): a Llama with 9 query heads sharing 3 key/value heads (its config.json).
SMOLLM2_135M = DecoderConfig(
    vocab_size=49152,
    max_positions=8192,
    width=576,
    num_layers=30,
    num_heads=9,
    num_kv_heads=3,
    ff_width=1536,
    activation="silu",
    layer_norm_eps=1e-5,
    dropout=0.0,
    norm_kind="rms",
    positions="rotary",
    rope_theta=100_000.0,
    feed_forward="gated",
    bias=False,
)

PRESETS: dict[str, TransformerConfig] = {
    "bert-base-uncased": EncoderConfig(),
    "bert-large-uncased": EncoderConfig(width=1024, num_layers=24, num_heads=16, ff_width=4096),
    "distilbert-base-uncased": EncoderConfig(num_layers=6, type_vocab_size=0, pooler=False),
    "all-MiniLM-L6-v2": EncoderConfig(width=384, num_layers=6, num_heads=12, ff_width=1536),
    "gpt2": DecoderConfig(),
    "gpt2-medium": DecoderConfig(width=1024, num_layers=24, num_heads=16, ff_width=4096),
    "gpt2-large": DecoderConfig(width=1280, num_layers=36, num_heads=20, ff_width=5120),
    "SmolLM2-135M": SMOLLM2_135M,
}


Config = TypeVar("Config", bound=TransformerConfig)


def config_from_fields(kind: type[Config], values: Mapping[str, Any]) -> Config:
    """A configuration from its fields by name, as our own config.json writes them.

    A key that is not a field is refused, never dropped: a misspelt or renamed field would otherwise leave
    its default in place, and the model would be built in another shape than the one its weights were
    trained in."""
    for old_name, new_name in RENAMED_FIELDS.items():
        if old_name in values:
            raise ValueError(f"the config key {old_name!r} is now called {new_name!r}: rename it in the config")
    known = {field.name for field in fields(kind)}
    unknown = [name for name in values if name not in known]
    if unknown:
        raise ValueError(
            f"unknown config key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
            f"(a {kind.__name__} has {', '.join(sorted(known))})"
        )
    return kind(**values)


def _read(source: Any, *names: str, default: Any = None) -> Any:
    """First present field among `names`, from a dict or from an object's attributes."""
    for name in names:
        value = source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)
        if value is not None:
            return value
    return default


def _activation(hf_name: str) -> Activation:
    if hf_name not in _HF_ACTIVATIONS:
        raise ValueError(f"unsupported activation {hf_name!r}; known: {sorted(_HF_ACTIVATIONS)}")
    return _HF_ACTIVATIONS[hf_name]


def config_from_hf(hf_config: Any) -> TransformerConfig:
    """Our configuration from a Hugging Face config object or its `config.json` as a dict."""
    model_type = _read(hf_config, "model_type")
    if model_type in ("bert", "roberta"):
        # RoBERTa is BERT's architecture retrained (Liu et al., 2019): the same config keys, but its position
        # numbers start after the padding id (transformers' create_position_ids_from_input_ids).
        pad_token_id = _read(hf_config, "pad_token_id", default=0 if model_type == "bert" else 1)
        return EncoderConfig(
            vocab_size=_read(hf_config, "vocab_size"),
            max_positions=_read(hf_config, "max_position_embeddings"),
            width=_read(hf_config, "hidden_size"),
            num_layers=_read(hf_config, "num_hidden_layers"),
            num_heads=_read(hf_config, "num_attention_heads"),
            ff_width=_read(hf_config, "intermediate_size"),
            activation=_activation(_read(hf_config, "hidden_act", default="gelu")),
            layer_norm_eps=_read(hf_config, "layer_norm_eps", default=1e-12),
            dropout=_read(hf_config, "hidden_dropout_prob", default=0.1),
            type_vocab_size=_read(hf_config, "type_vocab_size", default=2),
            pad_token_id=pad_token_id,
            position_offset=pad_token_id + 1 if model_type == "roberta" else 0,
        )
    if model_type == "distilbert":
        return EncoderConfig(
            vocab_size=_read(hf_config, "vocab_size"),
            max_positions=_read(hf_config, "max_position_embeddings"),
            width=_read(hf_config, "dim"),
            num_layers=_read(hf_config, "n_layers"),
            num_heads=_read(hf_config, "n_heads"),
            ff_width=_read(hf_config, "hidden_dim"),
            activation=_activation(_read(hf_config, "activation", default="gelu")),
            layer_norm_eps=1e-12,  # not in its config: modeling_distilbert.py writes eps=1e-12 in every LayerNorm
            dropout=_read(hf_config, "dropout", default=0.1),
            type_vocab_size=0,  # DistilBERT dropped the segment embeddings (Sanh et al., 2019)
            pooler=False,
            pad_token_id=_read(hf_config, "pad_token_id", default=0),
        )
    if model_type == "gpt2":
        width = _read(hf_config, "n_embd")
        return DecoderConfig(
            vocab_size=_read(hf_config, "vocab_size"),
            max_positions=_read(hf_config, "n_positions"),
            width=width,
            num_layers=_read(hf_config, "n_layer"),
            num_heads=_read(hf_config, "n_head"),
            ff_width=_read(hf_config, "n_inner", default=4 * width),
            activation=_activation(_read(hf_config, "activation_function", default="gelu_new")),
            layer_norm_eps=_read(hf_config, "layer_norm_epsilon", default=1e-5),
            dropout=_read(hf_config, "resid_pdrop", default=0.1),
            tie_embeddings=_read(hf_config, "tie_word_embeddings", default=True),
            # Not a GPT-2 field: this project's own unmasked model records it; transformers ignores it.
            causal=_read(hf_config, "anatomy_causal", default=True),
        )
    if model_type == "llama":
        return _llama_config(hf_config)
    if model_type == SEQ2SEQ_MODEL_TYPE:
        # This project's own encoder-decoder: its config.json holds our field names as they are.
        if not isinstance(hf_config, Mapping):
            raise TypeError(f"a {SEQ2SEQ_MODEL_TYPE} config is read from its config.json, as a dict")
        values = {name: value for name, value in hf_config.items() if name not in TRAINED_CHECKPOINT_KEYS}
        return config_from_fields(Seq2SeqConfig, values)
    raise ValueError(
        f"unsupported model_type {model_type!r}: this app reads BERT, DistilBERT and RoBERTa encoders and GPT-2 "
        "and Llama-family decoders"
    )


def _llama_config(hf_config: Any) -> DecoderConfig:
    """A Llama-family config.json (SmolLM2, TinyLlama, Llama 2/3) as the switches of our decoder."""
    width, num_heads = _read(hf_config, "hidden_size"), _read(hf_config, "num_attention_heads")
    head_width = _read(hf_config, "head_dim", default=width // num_heads)
    if head_width != width // num_heads:
        raise ValueError(f"head_dim {head_width} differs from hidden_size / num_attention_heads; not supported")
    # transformers 5 nests the rotary settings in rope_parameters; config.json files of 4.x have rope_theta.
    rope = _read(hf_config, "rope_parameters", "rope_scaling", default={}) or {}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        raise ValueError(f"rotary scaling {rope.get('rope_type', rope.get('type'))!r} is not supported")
    if _read(hf_config, "attention_bias", default=False) or _read(hf_config, "mlp_bias", default=False):
        raise ValueError("Llama checkpoints with biases are not supported")
    return DecoderConfig(
        vocab_size=_read(hf_config, "vocab_size"),
        max_positions=_read(hf_config, "max_position_embeddings", default=2048),
        width=width,
        num_layers=_read(hf_config, "num_hidden_layers"),
        num_heads=num_heads,
        num_kv_heads=_read(hf_config, "num_key_value_heads", default=num_heads),
        ff_width=_read(hf_config, "intermediate_size"),
        activation=_activation(_read(hf_config, "hidden_act", default="silu")),
        layer_norm_eps=float(_read(hf_config, "rms_norm_eps", default=1e-6)),
        dropout=0.0,
        tie_embeddings=bool(_read(hf_config, "tie_word_embeddings", default=False)),
        norm_kind="rms",
        positions="rotary",
        rope_theta=float(rope.get("rope_theta", _read(hf_config, "rope_theta", default=10_000.0))),
        feed_forward="gated",
        bias=False,
    )


def _linear(fan_in: int, fan_out: int, bias: bool = True) -> int:
    return fan_in * fan_out + (fan_out if bias else 0)


def _layer_norm(width: int, kind: NormKind = "layer") -> int:
    return width if kind == "rms" else 2 * width  # RMSNorm has a gain and no bias


def parameter_breakdown(config: TransformerConfig) -> dict[str, int]:
    """Parameters per component, computed from the configuration alone."""
    if isinstance(config, Seq2SeqConfig):
        halves = {"encoder": config.encoder, "decoder": config.decoder}
        return {
            f"{half} {name}": count
            for half, part in halves.items()
            for name, count in parameter_breakdown(part).items()
        }
    if isinstance(config, DecoderConfig):
        return _decoder_breakdown(config)
    D, F = config.width, config.ff_width
    attention = 4 * _linear(D, D)  # W_Q, W_K, W_V and W_O, each with a bias
    feed_forward = _linear(D, F) + _linear(F, D)
    layer_norms = 2 * _layer_norm(D)  # one around each sublayer
    parts = {
        "token embeddings": config.vocab_size * D,
        "position embeddings": config.max_positions * D,
        "attention (all layers)": config.num_layers * attention,
        "feed-forward (all layers)": config.num_layers * feed_forward,
        "layer norms (all layers)": config.num_layers * layer_norms,
    }
    if isinstance(config, EncoderConfig):
        parts["token type embeddings"] = config.type_vocab_size * D
        parts["embedding layer norm"] = _layer_norm(D) if config.embedding_layer_norm else 0
        parts["pooler"] = _linear(D, D) if config.pooler else 0
        # dense D×D, its LayerNorm, one bias per word; the decoder matrix is the token embedding table, counted once
        parts["masked-LM head"] = _linear(D, D) + _layer_norm(D) + config.vocab_size if config.masked_lm_head else 0
        parts["final layer norm"] = _layer_norm(D) if config.norm_placement == "pre" else 0
    return {name: count for name, count in parts.items() if count}


def _decoder_breakdown(config: DecoderConfig) -> dict[str, int]:
    """A decoder's parameters, whichever switches it uses: with grouped-query attention W_K and W_V are
    H_kv·d_head wide instead of D, a gated feed-forward has a third matrix, RMSNorm has no bias, rotary
    positions have no table. (The component names stay those of GPT-2's table, RMSNorm included.)"""
    D, F, bias = config.width, config.ff_width, config.bias
    key_value_width = config.num_kv_heads * config.head_width
    attention = 2 * _linear(D, D, bias) + 2 * _linear(D, key_value_width, bias)  # W_Q, W_O; W_K, W_V
    feed_forward = _linear(D, F, bias) + _linear(F, D, bias)
    if config.feed_forward == "gated":
        feed_forward += _linear(D, F, bias)  # the gate
    norm = _layer_norm(D, config.norm_kind)
    cross_attention = 4 * _linear(D, D, bias) + norm if config.cross_attention else 0
    parts = {
        "token embeddings": config.vocab_size * D,
        "position embeddings": config.max_positions * D if config.positions == "learned" else 0,
        "attention (all layers)": config.num_layers * attention,
        "cross-attention (all layers)": config.num_layers * cross_attention,
        "feed-forward (all layers)": config.num_layers * feed_forward,
        "layer norms (all layers)": config.num_layers * 2 * norm,  # one before each sublayer
        "final layer norm": norm,
        "LM head": 0 if config.tie_embeddings else config.vocab_size * D,
    }
    return {name: count for name, count in parts.items() if count}


def parameter_count(config: TransformerConfig) -> int:
    """Total trainable parameters of the model this configuration describes."""
    return sum(parameter_breakdown(config).values())
