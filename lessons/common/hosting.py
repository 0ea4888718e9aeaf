"""Hosted mode: the settings that make one shared link safe for a room full of students.

A lecturer shares one address and forty students open it in the same minute. With `ANATOMY_HOSTED=1` the
sidebar offers only the models on an allowlist (no hub id or file path typed by a visitor ever reaches the
loader), text longer than a cap is refused with a message (and kept in its box), the model reads at most a
set number of tokens, and live training gets a time budget. Everything comes from environment variables, so
the same code runs on a laptop, in the Docker image and on Streamlit Community Cloud (whose root-level
secrets are environment variables too).

Outside hosted mode nothing is capped unless a cap's own variable is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath

from anatomy.checkpoints.pretrained import DEFAULT_MODEL_NAME

HOSTED_VARIABLE = "ANATOMY_HOSTED"
ALLOWLIST_VARIABLE = "ANATOMY_MODEL_ALLOWLIST"  # comma-separated folders or hub ids
MAX_CHARACTERS_VARIABLE = "ANATOMY_MAX_INPUT_CHARS"
MAX_TOKENS_VARIABLE = "ANATOMY_MAX_INPUT_TOKENS"
TRAINING_BUDGET_VARIABLE = "ANATOMY_TRAINING_BUDGET_SECONDS"
LANGUAGE_MODEL_VARIABLE = "ANATOMY_LANGUAGE_MODEL"  # serve SmolLM2 (lesson 9): about 540 MB more
FINGERPRINT_VARIABLE = "ANATOMY_DEBUG_FINGERPRINT"  # lets ?fingerprint=1 show the shared weights' hash

EMBEDDED = ""  # how the allowlist (and the sidebar's model field) names the embedded all-MiniLM-L6-v2
LANGUAGE_MODEL = "SmolLM2-135M-Instruct"  # how they name the embedded SmolLM2 (lesson 9's model)

# Defaults in hosted mode. 5,000 characters is two pages of prose, more than the 512 tokens MiniLM reads;
# 512 tokens is MiniLM's own limit, where one traced run holds about 42 MB.
HOSTED_MAX_CHARACTERS = 5_000
HOSTED_MAX_TOKENS = 512
HOSTED_TRAINING_BUDGET_SECONDS = 30.0

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


class HostingSettingsError(ValueError):
    """An environment variable of hosted mode holds a value that cannot be used; the message names it."""


@dataclass(frozen=True)
class HostingSettings:
    """What this server allows its visitors. A cap of None means no cap."""

    hosted: bool = False
    model_allowlist: tuple[str, ...] = (EMBEDDED,)  # the embedded model always comes first
    max_input_characters: int | None = None  # longer text is refused, not cut
    max_input_tokens: int | None = None  # the model reads at most this many tokens
    training_budget_seconds: float | None = None  # wall-clock time one "train it yourself" run may take
    # SmolLM2 takes about 540 MB once loaded (over 1 GB while it is dequantized) on top of the ~800 MB a room of
    # students already holds: more than a free tier's 700 MB. So a hosted server serves it only when told to.
    language_model: bool = True

    @classmethod
    def from_environment(cls, environment: Mapping[str, str] | None = None) -> HostingSettings:
        """The settings the environment variables describe (os.environ when none are given)."""
        environment = os.environ if environment is None else environment
        hosted = _flag(environment, HOSTED_VARIABLE)
        return cls(
            hosted=hosted,
            model_allowlist=_allowlist(environment.get(ALLOWLIST_VARIABLE, "")),
            max_input_characters=_number(
                environment, MAX_CHARACTERS_VARIABLE, int, HOSTED_MAX_CHARACTERS if hosted else None
            ),
            max_input_tokens=_number(environment, MAX_TOKENS_VARIABLE, int, HOSTED_MAX_TOKENS if hosted else None),
            training_budget_seconds=_number(
                environment, TRAINING_BUDGET_VARIABLE, float, HOSTED_TRAINING_BUDGET_SECONDS if hosted else None
            ),
            language_model=_flag(environment, LANGUAGE_MODEL_VARIABLE, default=not hosted),
        )

    @property
    def offered_models(self) -> tuple[str, ...]:
        """The models a hosted sidebar offers: the allowlist, with SmolLM2 exactly when it is served."""
        others = tuple(name for name in self.model_allowlist if name != LANGUAGE_MODEL)
        return (*others, LANGUAGE_MODEL) if self.language_model else others

    def allows_model(self, reference: str) -> bool:
        """Whether a visitor may study this model here (anything goes outside hosted mode)."""
        return not self.hosted or normalise_reference(reference) in self.offered_models

    def text_problem(self, text: str | None, what: str = "The text") -> str | None:
        """Why this text is refused, in words a student can act on; None when it may be used."""
        limit = self.max_input_characters
        if text is None or limit is None or len(text) <= limit:
            return None
        return (
            f"{what} is {len(text):,} characters long; this demo reads at most {limit:,} characters at a "
            f"time. Shorten it to see the model's work (what you typed is kept)."
        )

    def token_limit(self, model_positions: int) -> int:
        """How many tokens the model reads here: its own limit, or the cap when that is lower."""
        if self.max_input_tokens is None:
            return model_positions
        return min(model_positions, self.max_input_tokens)


def current() -> HostingSettings:
    """The settings in force now (read on every call: a handful of lookups, and tests can change them)."""
    return HostingSettings.from_environment()


def fingerprint_enabled() -> bool:
    """Whether this server may show its shared model's weight hash (for load tests; off unless set)."""
    return os.environ.get(FINGERPRINT_VARIABLE, "").strip().lower() in _TRUE  # anything else: off


def normalise_reference(reference: str | None) -> str:
    """One spelling per model: the embedded encoder is always "", SmolLM2 is `LANGUAGE_MODEL` in any case, and
    others lose surrounding blanks."""
    text = (reference or "").strip()
    if text in (EMBEDDED, DEFAULT_MODEL_NAME):
        return EMBEDDED
    return LANGUAGE_MODEL if text.lower() == LANGUAGE_MODEL.lower() else text


def model_label(reference: str) -> str:
    """How the sidebar names a model: a folder by its last part (never the server's full path)."""
    reference = normalise_reference(reference)
    if reference == EMBEDDED:
        return DEFAULT_MODEL_NAME
    return PurePath(reference).name if reference.startswith(("/", "~", ".")) else reference


def _allowlist(raw: str) -> tuple[str, ...]:
    names = [normalise_reference(part) for part in raw.split(",")]
    return tuple(dict.fromkeys([EMBEDDED, *names]))  # the embedded model first: it is everyone's fallback


def _flag(environment: Mapping[str, str], name: str, default: bool = False) -> bool:
    value = environment.get(name, "").strip().lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise HostingSettingsError(f"{name}={value!r} is neither on (1, true, yes) nor off (0, false, no).")


def _number(environment: Mapping[str, str], name: str, kind: type, default):
    raw = environment.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise HostingSettingsError(f"{name}={raw!r} is not a number.") from None
    if not value > 0 or value == float("inf"):
        raise HostingSettingsError(f"{name}={raw!r} must be a positive, finite number.")
    return value
