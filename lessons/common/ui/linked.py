"""Choices that live in the address bar: the one way a widget is bound to the link.

A teacher copies the address bar and a student who opens it sees the same view: the same text, layer, head,
step and tab. Every widget that defines a view is drawn by one of the functions below, and each of them goes
through the same three steps:

1. `bind` decides the value. A link that says something new wins (a pasted link, a tour's next stop); otherwise
   the value this session already chose stands, as long as it still fits the widget (a new text can leave a
   token position that no longer exists); otherwise the default. A link value that does not fit is not
   dropped in silence: the page says what it could not use.
2. The widget is drawn under that key. When what it offers changes (another text gives a token picker other
   labels), its value is set afresh from Python, which makes the browser redraw it: Streamlit keeps a keyed
   widget's identity whatever its options, so a browser left alone would go on showing, and sending back,
   the old label.
3. `publish` writes the value into the address this run builds.

The address bar then describes exactly the view on screen, and the browser's Back button steps through the
views a learner chose. Streamlit's browser code pushes a new history entry for every change of the address it
is sent (`st.query_params[key] = ...` sends one each), so a run that wrote ten keys one by one left ten entries
behind, and the keys a run did not write (another lesson's, a closed tab's, a model that failed) stayed in the
link. So a run collects what it publishes, and app.py writes the whole address once, at its end
(`start_address`, `write_address`): one entry per view, holding only the keys this view used (a page change,
where Streamlit's own navigation pushes an entry too, is folded into one in the browser: history.py). What the learner
chose on other pages is not lost with their keys: the session remembers every published choice, and a widget
drawn again (on a lesson visited before, in a tab opened again) takes it back.

Each lesson defines its link keys once, in its `links.py`; tests import them from there.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from lessons.common.safe_text import escape_markdown

T = TypeVar("T")  # what a choice is; a widget's `parse` reads it from the link (None: the link's text is it)
Number = TypeVar("Number", int, float)  # what a number field holds

MAX_PLAIN_TEXT = 2000  # characters of text carried as they are; longer text is compressed
MAX_LINK_TEXT_CHARACTERS = 12_000  # characters a compressed text may take in the link (a browser takes far more)
COMPRESSED_PREFIX = "z:"  # marks a value written by `encode_text`
_PUBLISHED = "_linked_published"  # session state: what this session last wrote into the link, per key
_ADDRESS = "_linked_address"  # session state: the address this run builds, key -> text (None: taken out)
_REMEMBERED = "_linked_remembered"  # session state: the last value published per key, kept across pages
_CARRIED = "_linked_carried"  # session state: the keys this run keeps in the address without drawing them
_NOTICES = "_linked_notices"  # session state: link values already reported as unusable
_OFFERS = "_linked_offers"  # session state: a digest of what each widget offered when last drawn
_HELD = "_linked_held"  # session state: what each choice held at the end of the last run that published it


def parse_bool(raw: str) -> bool:
    """'1', 'true', 'yes', 'on' or their opposites, in any case."""
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


def parse_int_list(raw: str) -> list[int]:
    """'0,3,5' -> [0, 3, 5]."""
    return [int(part) for part in raw.split(",") if part.strip()]


def show_list(values: Sequence[Any]) -> str:
    return ",".join(map(str, values))


# ---------------------------------------------------------------------------------------------------------
# Text that may be long: compressed to travel in a link


def encode_text(text: str) -> str | None:
    """The text as a link value: itself when short, else compressed (zlib, URL-safe base64) after a prefix;
    None when even compressed it would not fit in a link."""
    if len(text) <= MAX_PLAIN_TEXT and not text.startswith(COMPRESSED_PREFIX):
        return text
    packed = base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), level=9)).decode("ascii")
    encoded = COMPRESSED_PREFIX + packed.rstrip("=")
    return encoded if len(encoded) <= MAX_LINK_TEXT_CHARACTERS else None


def decode_text(raw: str) -> str:
    """The inverse of `encode_text`; raises ValueError for a value that is not one of its outputs."""
    if not raw.startswith(COMPRESSED_PREFIX):
        return raw
    packed = raw[len(COMPRESSED_PREFIX) :]
    try:
        data = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))
        decompressor = zlib.decompressobj()
        text = decompressor.decompress(data, 4 * MAX_LINK_TEXT_CHARACTERS * 64)  # no zip bombs
        if decompressor.unconsumed_tail or not decompressor.eof:
            raise ValueError("incomplete or oversized compressed text")
        return text.decode("utf-8")
    except (ValueError, zlib.error, UnicodeDecodeError) as error:
        raise ValueError(f"not a text written by this app: {error}") from None


# ---------------------------------------------------------------------------------------------------------
# The three steps


def bind(
    key: str,
    default: T,
    *,
    parse: Callable[[str], T] | None = None,
    fits: Callable[[Any], bool] = lambda _: True,
    requirement: str | None = None,
    link_fits: Callable[[Any], bool] | None = None,
) -> T:
    """The value of the choice `key` for this run (see the module's docstring), stored in session state.

    `parse` reads the link's text (None: the text is the value, for choices that are strings), `fits` says
    whether a value can be shown now, and `requirement` says in a few words what a usable value is, for the note
    shown when a link carries one that is not. A link value must also pass `link_fits` when given (a field may
    keep a value typed by hand that no link should carry)."""
    raw = in_link(key)
    session = st.session_state
    published = session.setdefault(_PUBLISHED, {})
    from_outside = is_news(key) and not _moved_by_the_learner(key)
    # Streamlit forgets a widget's value after a run that does not draw it (a closed tab, another page); the
    # link, or else the session's memory of what it published last, gives it back.
    remembered = raw if raw is not None else session.get(_REMEMBERED, {}).get(key)
    if remembered is not None and (from_outside or key not in session):
        value = _from_link(
            key, remembered, parse, fits if link_fits is None else link_fits, requirement, default, report=from_outside
        )
        if raw is not None:
            published[key] = raw  # read (or reported) once
        if value is not _UNUSABLE:
            set_value(key, value)
            return value
    if key in session and _fits(fits, session[key]):
        return session[key]
    set_value(key, default)
    return default


def publish(key: str, value: Any, text: str | None = None) -> None:
    """Put `value` into the address this run builds (as `text` when given); `write_address` sends it.

    Only `write_address` counts it as published: a run cut short by the learner's next click (Streamlit stops it
    at its next element) never sends its address, so the next run starts from the address the browser still
    shows, and that address is not news from outside."""
    text = str(value) if text is None else text
    session = st.session_state
    _hold(key)
    session.setdefault(_REMEMBERED, {})[key] = text
    session.setdefault(_ADDRESS, {})[key] = text
    session.get(_CARRIED, set()).discard(key)


def unpublish(key: str) -> None:
    """Leave `key` out of the link (a value that cannot be carried, a choice that no longer applies)."""
    session = st.session_state
    session.setdefault(_REMEMBERED, {}).pop(key, None)
    session.setdefault(_ADDRESS, {})[key] = None


def keep(key: str) -> None:
    """Leave in the link the value last published for `key` (the field holds one typed by hand that no link
    may carry; the page says why)."""
    text = st.session_state.get(_REMEMBERED, {}).get(key)
    if text is not None:
        publish(key, None, text)
    else:
        _hold(key)


def carry(key: str) -> None:
    """Leave in the link the value it holds for `key` while this view does not draw that widget (a field the
    page shows only later, such as the example word under a training run's outcome): the link's value, else
    the one this session published last. Without it the address of such a view would drop the key, and a
    pasted link's value would be gone by the time the field is drawn.

    Carried is not published: the value goes on being news to `bind` (a pasted word too long for its field is
    reported once the field is drawn), unless this session published it itself before."""
    text = in_link(key)
    if text is None:
        text = st.session_state.get(_REMEMBERED, {}).get(key)
    if text is not None:
        st.session_state.setdefault(_ADDRESS, {})[key] = text
        st.session_state.setdefault(_CARRIED, set()).add(key)


def in_link(key: str) -> str | None:
    """The link's value for `key` as this run sees it: what this run published, else the address it started
    from (None when absent)."""
    address = st.session_state.get(_ADDRESS, {})
    return address[key] if key in address else st.query_params.get(key)


def is_news(key: str) -> bool:
    """Whether the link holds a value for `key` that this session did not write there itself: a pasted link,
    a tour's next stop, or an older view the Back button returned to."""
    raw = in_link(key)
    return raw is not None and not _published_by_this_run(key) and raw != st.session_state.get(_PUBLISHED, {}).get(key)


def _hold(key: str) -> None:
    """Remember what the choice `key` holds as this run shows it (see `_moved_by_the_learner`)."""
    if key in st.session_state:
        st.session_state.setdefault(_HELD, {})[key] = st.session_state[key]


def _moved_by_the_learner(key: str) -> bool:
    """Whether the browser asked for this run with another value in the widget `key` than the last run that
    drew it ended with: the learner just moved it. The address sent along may then be older than the move (the
    learner pressed again before the last run's address reached the browser), and the move wins over it.
    The Back button and a pasted link change the address alone, and stay news."""
    session = st.session_state
    held = session.get(_HELD, {})
    return key in session and key in held and session[key] != held[key]


def _published_by_this_run(key: str) -> bool:
    session = st.session_state
    return key in session.get(_ADDRESS, {}) and key not in session.get(_CARRIED, set())


def forget(key: str) -> None:
    """Forget this session's choice for `key`: its next draw takes the link's value, or else the default."""
    st.session_state.setdefault(_PUBLISHED, {}).pop(key, None)
    st.session_state.setdefault(_REMEMBERED, {}).pop(key, None)
    st.session_state.setdefault(_HELD, {}).pop(key, None)
    st.session_state.pop(key, None)


def forget_all_but(kept: set[str]) -> None:
    """Forget this session's choices, on every page, except those under the keys `kept` (a tour's stop opens
    as its link would open anew)."""
    session = st.session_state
    chosen = set(st.query_params) | set(session.get(_REMEMBERED, {})) | set(session.get(_ADDRESS, {}))
    for key in chosen - kept:
        forget(key)


def start_address() -> None:
    """Begin this run's address (app.py, first thing): empty until the sidebar and the page publish."""
    st.session_state[_ADDRESS] = {}
    st.session_state.pop(_CARRIED, None)


def write_address() -> None:
    """Make the address bar hold exactly what this run published, in one message, so that the browser keeps
    one history entry for this view (app.py calls it when the page has run; `stop` before ending a run)."""
    if _ADDRESS not in st.session_state:  # no run was started here (a page file run on its own)
        return
    address = st.session_state.pop(_ADDRESS)
    carried = st.session_state.pop(_CARRIED, set())
    wanted = {key: text for key, text in address.items() if text is not None}
    published = st.session_state.get(_PUBLISHED, {})
    # Keys left out are no longer in the link; a carried key counts as published only if it was before.
    st.session_state[_PUBLISHED] = {
        key: text for key, text in wanted.items() if key not in carried or published.get(key) == text
    }
    # Sent even when this run's copy of the address already holds it: that copy is the address the browser had
    # when it asked for this run, and a run that ended since may have changed it. (The browser adds no history
    # entry for an address it already shows.) One message; Streamlit keeps its embedding keys.
    st.query_params.from_dict(wanted)


def stop() -> NoReturn:
    """End this run here, as `st.stop()`, with the address of what it has shown so far."""
    write_address()
    st.stop()


def set_value(key: str, value: Any) -> None:
    """Change a choice from code (a Next button, a reset, a link): the widget shows it on the next draw."""
    st.session_state[key] = value


_UNUSABLE = object()


def _fits(fits: Callable[[Any], bool], value: Any) -> bool:
    try:
        return bool(fits(value))
    except (TypeError, ValueError):  # a value of another type, say text where a number belongs
        return False


def _from_link(
    key: str,
    raw: str,
    parse: Callable[[str], Any] | None,
    fits: Callable[[Any], bool],
    requirement: str | None,
    default: Any,
    report: bool = True,
) -> Any:
    """The link's value for `key`, or _UNUSABLE after saying (once per value, when `report`) why it cannot be
    used. A value this session wrote itself and that no longer fits (the text got shorter) goes unreported."""
    try:
        value = raw if parse is None else parse(raw)
    except (TypeError, ValueError):
        value = _UNUSABLE
    if value is not _UNUSABLE and _fits(fits, value):
        return value
    notices = st.session_state.setdefault(_NOTICES, set())
    if report and (key, raw) not in notices:
        notices.add((key, raw))
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        why = f" ({requirement})" if requirement else ""
        st.warning(
            escape_markdown(
                f"The link's “{key}” value “{shown}” cannot be used here{why}, so this view starts "
                f"from the default, {_readable(default)}."
            ),
            icon=":material/link_off:",
        )
    return _UNUSABLE


def _readable(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "none"
    return str(value) or "none"


# ---------------------------------------------------------------------------------------------------------
# Widgets bound to the link


def _draw(key: str, value: T, offer: tuple, draw: Callable[[], Any]) -> T:
    """Draw the widget for the choice `key` holding `value`, and return what it holds after the user's action.

    `offer` is what the widget shows (its options and their labels, its range): when it changed since the last
    draw, the value is set again from Python so that the browser redraws the widget (see the docstring)."""
    digest = hashlib.sha1(repr(offer).encode("utf-8"), usedforsecurity=False).hexdigest()
    offers = st.session_state.setdefault(_OFFERS, {})
    if offers.get(key) != digest or key not in st.session_state or st.session_state[key] != value:
        st.session_state[key] = value
        offers[key] = digest
    return draw()


def _where(container: DeltaGenerator | None) -> Any:
    return st if container is None else container


def selectbox(
    label: str,
    key: str,
    options: Sequence[T],
    default: T,
    *,
    format_func: Callable[[T], str] = str,
    parse: Callable[[str], T] | None = None,
    container: DeltaGenerator | None = None,
    **widget: Any,
) -> T:
    """A drop-down over `options`, its choice in the link under `key`."""
    options = list(options)

    def fits(value: Any) -> bool:
        return value in options

    value = bind(
        key,
        default if default in options else options[0],
        parse=parse,
        fits=fits,
        requirement="not one of the choices here",
    )
    labels = tuple(format_func(option) for option in options)
    chosen = _draw(
        key,
        value,
        (tuple(options), labels),
        lambda: _where(container).selectbox(label, options, format_func=format_func, key=key, **widget),
    )
    publish(key, chosen)
    return chosen


def segmented(
    label: str,
    key: str,
    options: Mapping[T, str],
    default: T,
    *,
    parse: Callable[[str], T] | None = None,
    container: DeltaGenerator | None = None,
    **widget: Any,
) -> T:
    """A row of buttons, one choice always made, over `options` (value -> label), in the link under `key`."""
    return _one_of(
        key,
        options,
        default,
        parse,
        lambda: _where(container).segmented_control(
            label, list(options), format_func=options.__getitem__, key=key, required=True, **widget
        ),
    )


def radio(
    label: str,
    key: str,
    options: Mapping[T, str],
    default: T,
    *,
    parse: Callable[[str], T] | None = None,
    container: DeltaGenerator | None = None,
    **widget: Any,
) -> T:
    """Round buttons over `options` (value -> label), in the link under `key`."""
    return _one_of(
        key,
        options,
        default,
        parse,
        lambda: _where(container).radio(label, list(options), format_func=options.__getitem__, key=key, **widget),
    )


def _one_of(
    key: str, options: Mapping[T, str], default: T, parse: Callable[[str], T] | None, draw: Callable[[], Any]
) -> T:
    """One value of `options`, bound to the link under `key` and drawn by `draw` (a widget keyed `key`)."""
    values = list(options)

    def fits(value: Any) -> bool:
        return value in values

    value = bind(key, default, parse=parse, fits=fits, requirement="not one of the choices here")
    chosen = _draw(key, value, (tuple(options.items()),), draw)
    publish(key, chosen)
    return chosen


def select_slider(
    label: str,
    key: str,
    options: Sequence[T],
    default: T,
    *,
    format_func: Callable[[T], str] = str,
    parse: Callable[[str], T] | None = None,
    container: DeltaGenerator | None = None,
    **widget: Any,
) -> T:
    """A slider over a list of `options`, in the link under `key`."""
    options = list(options)

    def fits(value: Any) -> bool:
        return value in options

    value = bind(key, default, parse=parse, fits=fits, requirement="not one of the choices here")
    labels = tuple(format_func(option) for option in options)
    chosen = _draw(
        key,
        value,
        (tuple(options), labels),
        lambda: _where(container).select_slider(label, options, format_func=format_func, key=key, **widget),
    )
    publish(key, chosen)
    return chosen


def slider(
    label: str,
    key: str,
    low: int,
    high: int,
    default: int,
    *,
    step: int = 1,
    container: DeltaGenerator | None = None,
    **widget: Any,
) -> int:
    """A whole-number slider over `low..high`, in the link under `key`. No slider is drawn when there is only
    one value to choose; that value is the choice. A value left outside the range (the text got shorter, the
    model has fewer layers) moves to the nearest end."""

    def fits(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high

    previous = st.session_state.get(key)
    if isinstance(previous, int) and not isinstance(previous, bool):
        default = previous
    value = bind(
        key, min(max(default, low), high), parse=int, fits=fits, requirement=f"a whole number from {low} to {high}"
    )
    if high <= low:
        publish(key, low)
        return low
    chosen = _draw(
        key, value, (low, high, step), lambda: _where(container).slider(label, low, high, step=step, key=key, **widget)
    )
    publish(key, chosen)
    return chosen


def float_slider(
    label: str,
    key: str,
    low: float,
    high: float,
    default: float,
    *,
    step: float,
    container: DeltaGenerator | None = None,
    **widget: Any,
) -> float:
    """A slider over the numbers `low..high` in steps of `step`, in the link under `key`."""

    def fits(value: Any) -> bool:
        return isinstance(value, float) and low <= value <= high

    value = bind(key, float(default), parse=float, fits=fits, requirement=f"a number from {low:g} to {high:g}")
    chosen = _draw(
        key, value, (low, high, step), lambda: _where(container).slider(label, low, high, step=step, key=key, **widget)
    )
    publish(key, chosen)
    return chosen


def number_input(
    label: str,
    key: str,
    low: int | float | None,
    high: int | float | None,
    default: Number,
    *,
    parse: Callable[[str], Number] = int,
    step: int | float = 1,
    usable: Callable[[Any], bool] | None = None,
    requirement: str | None = None,
    text: Callable[[Number], str] = str,
    container: DeltaGenerator | None = None,
    **widget: Any,
) -> Number:
    """A number field, in the link under `key` (written with `text`).

    A number typed by hand stays in the field even when it is not `usable` (the page says why), but only a
    usable number is written into the link, and a link must carry a usable one."""
    kind = type(default)

    def in_range(value: Any) -> bool:
        return (
            isinstance(value, kind)
            and not isinstance(value, bool)
            and (low is None or value >= low)
            and (high is None or value <= high)
        )

    def in_range_and_usable(value: Any) -> bool:
        return in_range(value) and (usable is None or usable(value))

    value = bind(key, default, parse=parse, fits=in_range, link_fits=in_range_and_usable, requirement=requirement)
    chosen = _draw(
        key,
        value,
        (low, high, step),
        lambda: _where(container).number_input(label, min_value=low, max_value=high, step=step, key=key, **widget),
    )
    if in_range_and_usable(chosen):
        publish(key, chosen, text(chosen))
    else:
        keep(key)
    return chosen


def toggle(
    label: str, key: str, default: bool = False, *, container: DeltaGenerator | None = None, **widget: Any
) -> bool:
    """An on/off switch, in the link under `key` as True or False (1/0, yes/no and on/off are read too)."""

    def fits(value: Any) -> bool:
        return isinstance(value, bool)

    value = bind(key, default, parse=parse_bool, fits=fits, requirement="True or False")
    chosen = _draw(key, value, (), lambda: _where(container).toggle(label, key=key, **widget))
    publish(key, chosen)
    return chosen


def multiselect(
    label: str,
    key: str,
    options: Sequence[T],
    default: Sequence[T],
    *,
    format_func: Callable[[T], str] = str,
    parse: Callable[[str], T],
    max_selections: int | None = None,
    container: DeltaGenerator | None = None,
    **widget: Any,
) -> list[T]:
    """Several choices among `options`, in the link as a comma-separated list under `key`."""
    options = list(options)

    def fits(values: Any) -> bool:
        return (
            isinstance(values, list)
            and len(set(values)) == len(values)
            and all(v in options for v in values)
            and (max_selections is None or len(values) <= max_selections)
        )

    def parse_list(raw: str) -> list[T]:
        return [parse(part) for part in raw.split(",") if part.strip()]

    kept = [value for value in default if value in options][: max_selections or None]
    value = bind(key, kept, parse=parse_list, fits=fits, requirement="choices that are not all offered here")
    labels = tuple(format_func(option) for option in options)
    chosen = _draw(
        key,
        value,
        (tuple(options), labels, max_selections),
        lambda: _where(container).multiselect(
            label, options, format_func=format_func, max_selections=max_selections, key=key, **widget
        ),
    )
    publish(key, chosen, show_list(chosen))
    return list(chosen)


def text_input(
    label: str,
    key: str,
    default: str,
    *,
    max_chars: int,
    usable: Callable[[str], bool] | None = None,
    requirement: str | None = None,
    container: DeltaGenerator | None = None,
    **widget: Any,
) -> str:
    """A one-line text field, in the link under `key` (compressed when long). Text typed by hand stays in the
    field even when it is not `usable` (the page says why), but a link must carry usable text."""

    def fits(value: Any) -> bool:
        return isinstance(value, str) and len(value) <= max_chars

    def fits_and_usable(value: Any) -> bool:
        return fits(value) and (usable is None or usable(value))

    value = bind(
        key,
        default,
        parse=decode_text,
        fits=fits,
        link_fits=fits_and_usable,
        requirement=requirement or f"text of at most {max_chars} characters",
    )
    chosen = _draw(
        key, value, (max_chars,), lambda: _where(container).text_input(label, max_chars=max_chars, key=key, **widget)
    )
    if fits_and_usable(chosen):
        publish_text(key, chosen)
    else:
        keep(key)
    return chosen


def publish_text(key: str, text: str) -> bool:
    """Write a text into the link, compressed when long; False (and the key left out) when it cannot fit."""
    encoded = encode_text(text)
    if encoded is None:
        unpublish(key)
        return False
    publish(key, text, encoded)
    return True


def layer_and_head(
    num_layers: int, num_heads: int, layer_key: str, head_key: str, head_label: str = "Head"
) -> tuple[int, int]:
    """Two pickers side by side, a layer and a head of it (both counted from 0), in the link under the keys."""
    left, right = st.columns(2)
    layer = selectbox(
        "Layer", layer_key, range(num_layers), 0, parse=int, container=left, format_func=lambda index: f"layer {index}"
    )
    head = selectbox(
        head_label, head_key, range(num_heads), 0, parse=int, container=right, format_func=lambda index: f"head {index}"
    )
    return layer, head
