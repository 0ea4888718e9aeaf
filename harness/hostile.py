"""Hostile and odd inputs: what forty students typing whatever they like will type.

Each text goes into every text field of the app (tests/test_hostile_inputs.py runs a bounded selection,
benchmarks/hostile_sweep.py all of them everywhere). None may raise, be rendered as markdown or HTML, or make
the server reach the network. NUMBER_TEXTS are what arrives where a number is expected (a link's
`?pos_d=...`), and `TEXTS["number_only"]` and its neighbours are numbers where text is expected.
"""

from __future__ import annotations

import contextlib
import re
from unittest import mock

LONG = 100_000  # characters

TEXTS: dict[str, str] = {
    # Nothing, or nothing visible
    "empty": "",
    "whitespace": "   \n\t ",
    "newlines_only": "\n" * 5_000,
    "zero_width_only": "\u200b\u200c\u200d\u2060\ufeff",
    "zero_width_inside": "zero\u200bwidth\u200cnon\u200djoiner\u2060word\ufeffjoiner",
    "nul_only": "\x00",
    "nul_inside": "before\x00after\x00",
    "control_characters": "bell\x07 backspace\x08 escape\x1b[31mred\x1b[0m form\x0cfeed vertical\x0btab \x7fdel",
    "carriage_returns": "line one\r\nline two\rline three\ttabbed",
    "line_separators": "first\u2028second\u2029third\x85fourth",
    "replacement_character": "\ufffd\ufffd broken \ufffd",
    # Length
    "long_100k_words": ("transformers read tokens " * 4_000)[:LONG],
    "long_100k_one_word": "a" * LONG,
    "long_word_1000": "pneumonoultramicroscopicsilicovolcanoconiosis" * 22,
    "many_short_lines": "a\n" * 2_500,
    "hosted_limit_tokens": "word " * 1_000,  # exactly 5,000 characters, about 1,000 tokens
    # Scripts and Unicode composition
    "emoji": "I 😍 transformers 🤖🚀",
    "emoji_zwj_family": "👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 👍🏽 thumb",
    "regional_flags": "🇫🇷🇯🇵🇧🇷 flags",
    "combining_accents": "cafe\u0301 nai\u0308ve re\u0301sume\u0301",
    "zalgo": "Z̷̢̛̭͔̳̤a̶͈̫͎͒l̸̡̰̈́g̴̖̀͠o̵̧͚̓ ̸t̵e̶x̸t̸" + "\u0336" * 300,
    "right_to_left_arabic": "الانتباه هو كل ما تحتاجه",
    "right_to_left_hebrew": "תשומת לב היא כל מה שצריך",
    "bidi_override": "\u202egnp.exe\u202c harmless.txt \u2067isolate\u2069",
    "mixed_scripts": "Ελληνικά русский हिन्दी ไทย 한국어 日本語 abc",
    "cjk": "注意力就是你所需要的一切",
    "mathematical_letters": "𝐀𝐭𝐭𝐞𝐧𝐭𝐢𝐨𝐧 𝔦𝔰 𝒶𝓁𝓁",
    "fullwidth": "ｔｉｍｅ　ｆｌｉｅｓ",
    # HTML, markdown and friends: must show literally, never render, never fetch
    "html_bold_img": "<b>bold</b> <img src=x onerror=alert(1)>",
    "script_tag": "<script>alert('x')</script>",
    "iframe": '<iframe src="http://127.0.0.1:9/frame"></iframe>',
    "style_tag": "<style>body{display:none}</style> hidden?",
    "html_entities": "&lt;b&gt; &amp; &#x41; &#0; &nbsp;",
    "markdown_image": "![pic](http://127.0.0.1:9/pixel.png)",
    "markdown_link": "[click me](http://127.0.0.1:9/) and [ref][1]\n\n[1]: http://127.0.0.1:9/ref",
    "autolinks": "<http://127.0.0.1:9/> www.example.invalid http://127.0.0.1:9/x mailto:a@b.invalid",
    "markdown_structure": "# Title\n**bold** _it_ `code`\n> quote\n- item\n---",
    "markdown_table": "| a | b |\n|---|---|\n| 1 | 2 |",
    "latex": "$x^2$ and $$\\int_0^1$$ \\(a\\)",
    "streamlit_directives": ":red[alert] :material/home: :smile: :blue-background[x]",
    "javascript_url": "javascript:alert(document.cookie)",
    "data_url": "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "svg_payload": "<svg onload=alert(1)><circle r=1 /></svg>",
    # Other injection shapes
    "sql": "'; DROP TABLE students; --",
    "path_traversal": "../../../../etc/passwd",
    "template_braces": "{{7*7}} ${7*7} {0} %s %(x)s {",
    "backslashes": "\\\\ \\n \\x00 \\u0000 \\",
    "special_tokens": "[CLS] [SEP] [MASK] [PAD] [UNK] hello [SEP]",
    "gpt_special_token": "<|endoftext|> <s></s> <pad>",
    "punctuation_storm": "!?.,;:" * 200,
    # Numbers where text is expected
    "number_only": "42",
    "float_text": "-1e308 3.14 NaN inf -0",
    "huge_number": "9" * 400,
}

# What arrives where a number is expected (from a link): none may raise; each gives the default.
NUMBER_TEXTS: dict[str, str] = {
    "word": "abc",
    "empty": "",
    "overflow": "1e309",
    "negative": "-1",
    "nan": "NaN",
    "huge": "9" * 400,
    "script": "<script>alert(1)</script>",
    "fraction": "1.5",
    "hex": "0x10",
    "thousands": "1,000",
    "arabic_indic_digits": "٣",
    "nul": "\x00",
}

# Fragments that would do something if rendered: none may reach a markdown-rendering element unescaped.
DANGEROUS_FRAGMENTS = ("<script", "<img", "<iframe", "<style", "<svg", "![", "](http", "javascript:", ":red[")

# A small, varied selection for fields where running everything would take too long in CI.
REPRESENTATIVE = (
    "empty",
    "whitespace",
    "zero_width_only",
    "nul_inside",
    "long_100k_words",
    "long_100k_one_word",
    "emoji_zwj_family",
    "bidi_override",
    "zalgo",
    "script_tag",
    "markdown_image",
    "latex",
    "special_tokens",
    "number_only",
)


def dangerous_fragments(text: str) -> list[str]:
    """The fragments of `text` that a markdown renderer would act on."""
    return [fragment for fragment in DANGEROUS_FRAGMENTS if fragment in text]


# ---------------------------------------------------------------------------------------------------------
# Where hostile input can enter the app (the CI tests and benchmarks/hostile_sweep.py both read these)

# The lessons' own text fields: (page, link parameters that show the field, session key). The training page's
# example word appears only after a run, so tests/test_page_training.py trains first and then tries these texts.
PAGE_FIELDS = {
    "tok_pair": ("lesson_pages/tokenization.py", {}, "tok_pair"),
    "mh_sentence_a": ("lesson_pages/multihead.py", {"mh_tab": "Two sentences"}, "mh_sentence_a"),
    "mh_sentence_b": ("lesson_pages/multihead.py", {"mh_tab": "Two sentences"}, "mh_sentence_b"),
    "enc_sentence_a": ("lesson_pages/encoder.py", {"enc_tab": "A word in context"}, "enc_sentence_a"),
    "enc_sentence_b": ("lesson_pages/encoder.py", {"enc_tab": "A word in context"}, "enc_sentence_b"),
    "enc_word": ("lesson_pages/encoder.py", {"enc_tab": "A word in context"}, "enc_word"),
    "cm_word": ("lesson_pages/causal.py", {"cm_tab": "A trained decoder"}, "cm_word"),
    "dec_word": ("lesson_pages/decoder.py", {}, "dec_word"),
    "lm_message": ("lesson_pages/language_model.py", {"lm_tab": "Chat template"}, "lm_message"),
}

# Class mode: the Class page's start form (session keys) and the link parameters a class link carries.
CLASS_FIELDS = ("class_title",)
CLASS_LINK_PARAMETERS = ("class", "key")

# Every numeric or choice parameter a link can carry, by view: (page, link parameters that open the view, the
# parameters that view reads). A tab runs only while it is open, so each tab's own parameters are tried there.
NUMBER_PARAMETERS = {
    "positional": ("lesson_pages/positional.py", {}, ("pos_d", "pos_base", "pos_n", "pos_dims", "pos_tab")),
    "positional/similarity": (
        "lesson_pages/positional.py",
        {"pos_tab": "Similarity between positions"},
        ("pos_d", "pos_n", "pos_p", "pos_measure"),
    ),
    "positional/rotary": (
        "lesson_pages/positional.py",
        {"pos_tab": "Rotary positions"},
        ("pos_rope_layer", "pos_rope_head", "pos_rope_q", "pos_rope_k"),
    ),
    "attention": (
        "lesson_pages/attention.py",
        {},
        ("att_layer", "att_head", "att_step", "att_query", "att_key", "att_all", "att_source"),
    ),
    "multihead": (
        "lesson_pages/multihead.py",
        {},
        ("mh_layer", "mh_head", "mh_heads", "mh_threshold", "mh_token", "mh_ablate", "mh_tab"),
    ),
    "causal": ("lesson_pages/causal.py", {}, ("cm_tab",)),
    "causal/one head": (
        "lesson_pages/causal.py",
        {"cm_tab": "One head on your text"},
        ("cm_layer", "cm_head", "cm_window_start", "cm_full", "cm_top_k"),
    ),
    "causal/three masks": (
        "lesson_pages/causal.py",
        {"cm_tab": "No mask, padding, causal"},
        ("cm_layer", "cm_head", "cm_pad", "cm_window_start", "cm_pad_causal"),
    ),
    "causal/trained decoder": ("lesson_pages/causal.py", {"cm_tab": "A trained decoder"}, ("cm_step", "cm_cheater")),
    "decoder": ("lesson_pages/decoder.py", {}, ("dec_tab",)),
    "training": ("lesson_pages/training.py", {}, ("tr_model", "tr_steps", "tr_lr", "tr_seed")),
    "encoder": (
        "lesson_pages/encoder.py",
        {},
        ("enc_layer", "enc_head", "enc_labels", "enc_neurons", "enc_window", "enc_tab"),
    ),
    "encoder/hidden states": ("lesson_pages/encoder.py", {"enc_tab": "Hidden states"}, ("enc_compare",)),
    # enc_fill_k is read only with a masked-LM checkpoint, which the embedded MiniLM is not: the fill-mask tests
    # try it on one of their own (tests/lessons/encoder/test_fill_mask.py).
    "tokenization": ("lesson_pages/tokenization.py", {}, ("tok_special", "tok_line", "tok_tab")),
    "tokenization/lookup": (
        "lesson_pages/tokenization.py",
        {"tok_tab": "Tokens → vectors"},
        ("tok_dims", "tok_first", "tok_view", "tok_special"),
    ),
    "tokenization/three tokenizers": ("lesson_pages/tokenization.py", {"tok_tab": "Three tokenizers"}, ("tok_vocab",)),
    "language_model": ("lesson_pages/language_model.py", {}, ("lm_tab", "lm_top_k")),
    "language_model/writing": (
        "lesson_pages/language_model.py",
        {"lm_tab": "Writing", "lm_mode": "sampled"},
        ("lm_mode", "lm_new_tokens", "lm_temperature", "lm_sample_top_k", "lm_top_p", "lm_seed", "lm_past_end"),
    ),
    "language_model/attention": (
        "lesson_pages/language_model.py",
        {"lm_tab": "Attention"},
        ("lm_layer", "lm_head", "lm_window_start"),
    ),
    "language_model/chat": ("lesson_pages/language_model.py", {"lm_tab": "Chat template"}, ("lm_reply",)),
    "language_model/sinks": (
        "lesson_pages/language_model.py",
        {"lm_tab": "Attention sinks"},
        ("lm_sink_off", "lm_sink_layer"),
    ),
    "language_model/logit lens": ("lesson_pages/language_model.py", {"lm_tab": "Logit lens"}, ("lm_lens_end",)),
}


# ---------------------------------------------------------------------------------------------------------
# What surviving an input means, checked on a finished AppTest run


# The st.html the app draws: <style> blocks of its own (lessons/common/ui/charts.py), which have no "<" inside,
# and the fixed script that adds the SVG button to every chart's toolbar (lessons/common/ui/charts.py).
STYLE_SHEET_ONLY = re.compile(r"<style>[^<]*</style>")


def problems_after(app, text: str) -> list[str]:
    """Everything wrong with a page after it ran on `text`: exceptions, rendered markup, raw HTML."""
    from harness.apptest import all_markdown

    problems = [f"exception: {item.value[:200]}" for item in app.exception]
    shown = all_markdown(app)
    problems += [
        f"{fragment!r} reached markdown unescaped"
        for fragment in dangerous_fragments(text)
        if re.search(r"(?<!\\)" + re.escape(fragment), shown)
    ]  # "\<script" is shown as text
    if len(text.strip()) >= 4 and any(char in "<>[]()!*_`#$&|~\\" for char in text) and text in shown:
        problems.append("the whole text reached markdown unescaped")
    problems += [
        "an st.html element other than a style sheet or the app's own scripts was drawn"
        for element in app.get("html")
        if not STYLE_SHEET_ONLY.fullmatch(element.proto.body) and not only_the_apps_own_scripts(element.proto.body)
    ]
    problems += ["a markdown element allows HTML" for element in app.markdown if element.proto.allow_html]
    return problems


def only_the_apps_own_scripts(body: str) -> bool:
    """Whether an st.html element holds nothing but scripts the app itself writes (frame.add_browser_scripts
    puts several in one element)."""
    from lessons.common.ui import charts, classroom, history, presentation, theme

    if classroom.is_student_script(body):
        return True
    for script in (charts.SVG_BUTTON_SCRIPT, theme.SCRIPT, history.SCRIPT, *presentation.REMEMBER.values()):
        body = body.replace(script.strip(), "")
    return not body.strip()


class OutboundConnections:
    """Records (and refuses) every attempt of this process to reach a host other than loopback.

    Used as a context manager around AppTest runs, which execute the app in this very process: a fetched
    image, a hub download or any other request a page made on the server side would show up here.
    """

    LOOPBACK = ("127.0.0.1", "::1", "localhost", "0.0.0.0")

    def __init__(self):
        self.attempts: list[str] = []
        self._patches = contextlib.ExitStack()

    def __enter__(self):
        import socket

        real_connect, real_connect_ex, real_getaddrinfo = (
            socket.socket.connect,
            socket.socket.connect_ex,
            socket.getaddrinfo,
        )

        def connect(sock, address):
            self._check(address)
            return real_connect(sock, address)

        def connect_ex(sock, address):
            self._check(address)
            return real_connect_ex(sock, address)

        def getaddrinfo(host, *args, **kwargs):
            self._check((host,))
            return real_getaddrinfo(host, *args, **kwargs)

        self._patches.enter_context(mock.patch.object(socket.socket, "connect", connect))
        self._patches.enter_context(mock.patch.object(socket.socket, "connect_ex", connect_ex))
        self._patches.enter_context(mock.patch.object(socket, "getaddrinfo", getaddrinfo))
        return self

    def __exit__(self, *exc):
        self._patches.close()
        return False

    def _check(self, address) -> None:
        if isinstance(address, (str, bytes)):  # a Unix socket path: local by definition
            return
        host = address[0].decode() if isinstance(address[0], bytes) else str(address[0])
        if host not in self.LOOPBACK and not host.startswith("127."):
            self.attempts.append(host)
            raise OSError(f"outbound connection to {host} refused by the hostile-input tests")
