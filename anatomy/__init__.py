"""Transformer anatomy: small, readable torch modules that run real pretrained weights.

The transformer itself lives in this package's top-level modules (config, attention, masks, positional,
rotary, norms, embeddings, feedforward, blocks, models, seq2seq, cache, generation, trace, devices).
`anatomy.checkpoints` reads and writes weights (Hugging Face folders and llama.cpp GGUF files) through
declarative key maps; `anatomy.training` trains the small models this project ships.
Nothing here imports the app: the lessons (`lessons/`) and pages (`lesson_pages/`) build on it.

Import each name from the module that defines it (`from anatomy.checkpoints.pretrained import
load_pretrained`): this file imports nothing. Python imports a package before any of its modules, so a package
that imported its own modules here would form an import cycle with each of them; two threads importing such a
cycle at once (two Streamlit sessions on a freshly started server) can each be handed a module the other has
only half run. tests/test_import_cycles.py keeps the app's imports free of cycles.

Dimension letters used in every shape comment of this package:

    B        batch (sentences processed together)
    T        tokens in the sequence being updated (the queries)
    S        tokens being attended to (the keys and values; S == T in self-attention)
    D        model width (hidden size, "d_model")
    H        attention heads (query heads)
    H_kv     key/value heads (H in multi-head attention, fewer in grouped-query attention)
    d_head   width of one head (D // H)
    F        feed-forward hidden width ("intermediate size", usually 4 * D)
    V        vocabulary size
"""
