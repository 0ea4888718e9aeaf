"""What the tokenization lesson says: its prose, kept apart from the widgets that show it."""

INTRO = (
    "A transformer never sees letters. A **tokenizer** first cuts the text into pieces from a fixed "
    "vocabulary and replaces each piece by its number, its **id**; the model then looks each id up in a "
    "table of vectors. This page follows the text in the sidebar through both steps."
)
NEEDS_TEXT = "Type a sentence in the sidebar (the box *Text to study*) to see how it is tokenized."
NEEDS_WORDPIECE = (
    "This lesson needs a BERT-style encoder that ships its WordPiece tokenizer. Clear the *Model* "
    "field in the sidebar to use the embedded all-MiniLM-L6-v2."
)
SPECIAL_TOKENS_SHOWN = (
    "`[CLS]` opens the input (its final vector often stands for the whole text) and `[SEP]` closes each "
    "sentence; they cover no characters."
)
SPECIAL_TOKENS_HIDDEN = "The special tokens are hidden now; switch them back on to see where the tokenizer adds them."
UNCASED = (
    " This tokenizer is *uncased*: it lowercases the text and strips accents before cutting, so "
    "`Token` and `token` get the same id."
)
NO_TOKENS = (
    "This text makes no tokens at all: the tokenizer dropped every character (control or blank "
    "characters). Type some words in the sidebar."
)
BLANK_PAIR = "The second sentence is only blank space, so the input stays a single sentence."
HIGHLIGHT_CAPTION = (
    "Each cell is one character of the text as typed (an emoji made of several characters is drawn whole, in "
    "the cell of its first; hover a cell to name its own); rows start with their character offset. "
    "Grey cells belong to no token: the tokenizer drops spaces after using them to cut words. "
    "When the text is cut at the token limit, only the part the model reads is drawn."
)
NO_UNKNOWN = "This text has no unknown token. Add an emoji such as 🤖 to the sidebar text to see one."
LOOKUP_FORMULA = (
    r"x_i = \mathrm{LayerNorm}\big(W_E[\mathrm{id}_i] + W_P[i] + W_S[\mathrm{type}_i]\big)\in \mathbb{R}^{D}"
)
LOOKUP_SPECIALS = (
    "The model always reads its special tokens, so the rows below include [CLS] and [SEP] even "
    "when the table above hides them."
)
LOOKUP_ROWS = (
    "Row names give the token and its id. The same id always gives the same token vector, "
    "wherever it stands; only the position and type vectors tell two copies apart."
)
ZOO_CAPTION = (
    "The trained Unigram may stop short of the size asked for: a small corpus offers only so many "
    "useful substrings. `<unk>` marks characters its corpus never contained."
)
ZOO = """
Every modern tokenizer cuts text into **subwords**: frequent words stay whole, rare words are spelled
from smaller pieces, so a fixed vocabulary covers any word. Three recipes dominate, and they differ in how
they *learn* the vocabulary and how they *apply* it.

* **BPE** (byte-pair encoding, used by GPT-2) learns **bottom-up**: it starts from single symbols (here
  the 256 byte values) and repeatedly merges the most frequent pair of neighbours into a new token, until
  the vocabulary is full. To tokenize, it replays those merges in the order it learned them. Working on
  bytes means nothing is ever unknown: an emoji becomes its four UTF-8 bytes. `Ġ` is how it writes a
  space that belongs to the next word.
* **WordPiece** (BERT, this model) also grows its vocabulary by merging, but ranks a pair *ab* by
  count(*ab*) / (count(*a*) · count(*b*)): it prefers pairs whose parts are seldom seen apart, not simply
  the most frequent pair. To tokenize, it takes the **longest vocabulary entry** that starts the word,
  then the longest `##` entry for what is left, and so on; if that fails anywhere the whole word
  becomes `[UNK]`.
* **Unigram** (SentencePiece: T5, ALBERT, XLNet) learns **top-down**: it starts with a large set of
  candidate substrings, gives each a probability, and repeatedly drops the pieces whose loss hurts the
  likelihood of the corpus least. To tokenize, it considers every way of spelling the word from its
  pieces and keeps the **most probable** one. `▁` marks a space.

Below, the model's own WordPiece (trained on billions of words) is set against a BPE and a Unigram
tokenizer trained just now, on the few dozen sentences of this app's corpus, with a tiny vocabulary.
Expect the small ones to cut far more often; look at *where* each one cuts.
"""


def continuation_pieces(notes: str) -> str:
    return (
        f"A **`##`** piece continues the word before it: the tokenizer found no single vocabulary entry for "
        f"the whole word, so it took the longest piece it knew from the start, then the longest `##` piece "
        f"for the rest, and so on. {notes}"
    )


def unknown_tokens(vocab_size: int) -> str:
    return (
        f"WordPiece can only output pieces that are in its vocabulary. This model's {vocab_size:,} pieces were "
        f"learned from its pre-training text (English books and Wikipedia for BERT and the embedded MiniLM), "
        f"so a character that never occurred there (most emoji, rare symbols and scripts) has no piece. "
        f"WordPiece then gives up on the **whole word** it sits in and writes a single `[UNK]`: `hello🤖` "
        f"becomes one `[UNK]`, not `hello` plus `[UNK]`. Every `[UNK]` has the same id and so the same "
        f"vector: the model cannot tell one unknown word from another."
    )


def sentence_pair(first: int, second: int) -> str:
    return (
        f"Two sentences are packed into one input as `[CLS] A [SEP] B [SEP]`. The **token type id** says "
        f"which sentence a token belongs to: {first} tokens have type 0 (sentence A, with `[CLS]` "
        f"and the first `[SEP]`) and {second} have type 1 (sentence B and the final `[SEP]`). "
        f"The model adds row 0 or row 1 of a small segment table to each token's vector. BERT learned those "
        f"two rows in pre-training, where it had to tell whether sentence B really followed sentence A."
    )


def lookup(vocab_size: int, width: int) -> str:
    return (
        f"The tokenizer's work ends with a list of integers. The model's first layer is a table "
        f"$W_E$ of **{vocab_size:,} rows** (one per vocabulary entry) and **{width} columns** "
        f"(the model width $D$). Token $i$ becomes row $\\mathrm{{id}}_i$ of that table: no arithmetic, just "
        f"indexing. (It is the same as multiplying a one-hot vector by $W_E$, only far cheaper.) The rows "
        f"were learned in pre-training like every other weight. Then vectors for the position and the "
        f"sentence are added and the sum is normalised:"
    )
