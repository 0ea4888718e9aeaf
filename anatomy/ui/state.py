"""Shareable state: the choices that define a view live in the URL's query string.

A teacher copies the address bar and a student opening it sees the same text, layer, head and step.
`restore` seeds a widget's session value from the URL once; `publish` writes current values back.
"""

from __future__ import annotations

from typing import Callable, TypeVar

import streamlit as st

T = TypeVar("T")

MAX_URL_TEXT = 2000  # characters of user text carried in a link (longer text is kept in the session only)


def restore(key: str, default: T, parse: Callable[[str], T] = str, valid: Callable[[T], bool] = lambda _: True) -> T:
    """Give the widget `key` its value from the URL (if present and valid) the first time it is drawn."""
    if key not in st.session_state:
        raw = st.query_params.get(key)
        value = default
        if raw is not None:
            try:
                parsed = parse(raw)
                value = parsed if valid(parsed) else default
            except (TypeError, ValueError):
                value = default
        st.session_state[key] = value
    return st.session_state[key]


def publish(**values) -> None:
    """Write the given values into the URL (only the ones that changed, to avoid needless reruns)."""
    for key, value in values.items():
        text = str(value)
        if key == "text" and len(text) > MAX_URL_TEXT:
            st.query_params.pop(key, None)
            continue
        if st.query_params.get(key) != text:
            st.query_params[key] = text


def parse_bool(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)
