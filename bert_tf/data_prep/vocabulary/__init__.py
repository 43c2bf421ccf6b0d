"""WordPiece vocabularies from a prepared corpus (build_vocab).

`training` trains one with Hugging Face `tokenizers` and writes it in the
original's vocab.txt layout; `report` measures a vocabulary on held-out text
with the original's `FullTokenizer`.
"""
