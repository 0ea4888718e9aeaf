"""The tokenization lesson's exercises: how many pieces a word of the text becomes, and how many tokens the
model reads for the whole text. Both are counted by the model's own tokenizer on the learner's text."""

from __future__ import annotations

from lessons.common.exercises import Exercise, Offer
from lessons.common.runs import TokenizedText, tokenize
from lessons.common.safe_text import code_span, visible
from lessons.tokenization.figures import highlight_rows, token_highlight
from lessons.tokenization.zoo import TokenRow, describe_tokens

WHOLE_TEXT_LINES = 24  # lines of the text the reveal's figure draws


def words_of(rows: tuple[TokenRow, ...]) -> list[list[TokenRow]]:
    """The tokens grouped by word: a token that starts a word, then the ## pieces that continue it."""
    words: list[list[TokenRow]] = []
    for row in rows:
        if row.special:
            continue
        if row.continuation and words:
            words[-1].append(row)
        else:
            words.append([row])
    return words


def _highlight(text: str, marked: list[TokenRow], title: str):
    """The text with the characters of the `marked` tokens coloured (every other character left grey)."""
    kinds = ["unknown" if row.unknown else "continuation" if row.continuation else "word" for row in marked]
    spans = [(0, row.start, row.end) for row in marked]
    lines = [row for row in highlight_rows((text,)) if row is not None]  # one text: no blank row between two
    first_line = next((line for line, (_, start, end) in enumerate(lines) if start <= marked[0].start < end), 0)
    return token_highlight(
        (text,),
        [row.token for row in marked],
        spans,
        kinds,
        title=title,
        first_row=first_line,
        max_rows=WHOLE_TEXT_LINES,
    )


def _read(tokenizer, text: str, max_tokens: int) -> tuple[TokenizedText, tuple[TokenRow, ...]]:
    tokenized = tokenize(tokenizer, text, max_tokens=max_tokens)
    return tokenized, describe_tokens(tokenized, (text,), tokenizer.unk_token)


def pieces_of_a_word(tokenizer, text: str, max_tokens: int) -> Exercise | None:
    """Into how many tokens the tokenizer cuts the word of the text that it cuts the most (the first of them)."""
    _, rows = _read(tokenizer, text, max_tokens)
    words = words_of(rows)
    if not words:
        return None
    word = max(words, key=len)  # max keeps the first of equals
    typed = text[word[0].start : word[-1].end]
    pieces = ", ".join(code_span(row.token) for row in word)
    return Exercise(
        question=(
            f"Into how many tokens does the tokenizer cut the word “{visible(typed)}” of your text? "
            "Count the pieces that continue a word too."
        ),
        answer=len(word),
        explanation=(
            f"“{visible(typed)}” becomes {len(word)} token{'s' if len(word) > 1 else ''}: {pieces}. WordPiece "
            "keeps a word whole when its vocabulary holds it, and otherwise cuts it into the longest pieces it "
            "has, left to right; a piece marked `##` continues the word before it. Of all the words in your "
            "text, this one is cut into the most pieces."
        ),
        figure=lambda: _highlight(text, word, f"“{typed}”: {len(word)} tokens"),
    )


def tokens_read(tokenizer, text: str, max_tokens: int) -> Exercise | None:
    """How many tokens the model reads for the whole text, the special tokens included."""
    tokenized, rows = _read(tokenizer, text, max_tokens)
    words = words_of(rows)
    if not words:
        return None
    special = sum(tokenized.special)
    cut = (
        f" Your text makes {tokenized.untruncated_length:,} tokens; the model reads only its first {max_tokens:,}."
        if tokenized.truncated
        else ""
    )
    return Exercise(
        question=(
            f"Your text has {len(text.split()):,} words separated by spaces. How many tokens does the model read "
            "for it, the special tokens `[CLS]` and `[SEP]` included?"
        ),
        answer=len(tokenized),
        explanation=(
            f"The model reads {len(tokenized):,} tokens: {len(words):,} words and punctuation marks, "
            f"{len(tokenized) - special - len(words):,} `##` pieces that continue them, and {special} special "
            f"tokens around them.{cut} Punctuation is cut off as a token of its own, and a word missing from the "
            "vocabulary costs more than one token."
        ),
        figure=lambda: _highlight(text, [row for row in rows if not row.special], "Every token of your text"),
    )


OFFERS = {
    "pieces": Offer("Pieces of a word", pieces_of_a_word),
    "count": Offer("Tokens in the text", tokens_read),
}
