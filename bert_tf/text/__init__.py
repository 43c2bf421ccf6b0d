"""Text: the original's WordPiece tokenizer, in-graph preprocessing and the encoder's input schema."""
