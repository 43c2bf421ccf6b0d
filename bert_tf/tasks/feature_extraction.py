"""What extract_features.py does: per-token layer outputs as JSON lines.

The original's flags, input format (one example per line, `A ||| B` for a
pair) and output (docs/original_bert.md §2): one JSON object per input line,
`{"linex_index": i, "features": [{"token": t, "layers": [{"index": l,
"values": [...]}]}]}` with values rounded to 6 places, real tokens only
([CLS] and [SEP] included). The key is spelled `linex_index`, as the original.
"""

import collections
import json
import re

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data_prep.strict_utf8 import decode_line
from bert_tf.errors import UserInputError
from bert_tf.models import BertEncoder
from bert_tf.options.checks import sequence_length_fits
from bert_tf.tasks.runner import load_config
from bert_tf.text import tokenization

_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")


def read_examples(input_file):
    """(unique_id, text_a, text_b) per line; `A ||| B` is a pair.

    The file must be UTF-8 (as the original's text-mode read required): a bad
    byte is an error naming the line, not dropped silently.
    """
    examples = []
    with tf.io.gfile.GFile(input_file, "rb") as reader:
        for index, raw in enumerate(reader):
            line = decode_line(raw, input_file, index + 1).strip()
            match = _PAIR.match(line)
            examples.append((index, *match.groups()) if match else (index, line, None))
    return examples


def example_tokens(tokenizer, text_a, text_b, max_seq_length):
    """[CLS] A [SEP] (B [SEP]) and the segment ids, truncated as the original."""
    tokens_a = tokenizer.tokenize(text_a)
    tokens_b = tokenizer.tokenize(text_b) if text_b else None
    if tokens_b:
        tokenization.truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        tokens_a = tokens_a[: max_seq_length - 2]
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segments = [0] * len(tokens)
    if tokens_b:
        tokens += [*tokens_b, "[SEP]"]
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments


def extract_features(encoder, tokenizer, examples, layers, max_seq_length, batch_size):
    """Yields one JSON-ready dict per example, in input order."""
    run = tf.function(lambda inputs: encoder(inputs)["encoder_outputs"])
    for start in range(0, len(examples), batch_size):
        batch = examples[start : start + batch_size]
        rows = [example_tokens(tokenizer, a, b, max_seq_length) for _, a, b in batch]
        ids = np.zeros((len(rows), max_seq_length), "int32")
        segments = np.zeros_like(ids)
        for i, (tokens, segment_ids) in enumerate(rows):
            ids[i, : len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
            segments[i, : len(tokens)] = segment_ids
        outputs = run(
            {
                "input_ids": ids,
                "input_mask": (ids > 0).astype("int32"),
                "segment_ids": segments,
            }
        )
        outputs = [outputs[layer].numpy() for layer in layers]
        for i, ((unique_id, _, _), (tokens, _)) in enumerate(
            zip(batch, rows, strict=True)
        ):
            features = []
            for position, token in enumerate(tokens):
                features.append(
                    collections.OrderedDict(
                        token=token,
                        layers=[
                            collections.OrderedDict(
                                index=layer,
                                values=[
                                    round(float(x), 6) for x in output[i, position]
                                ],
                            )
                            for layer, output in zip(layers, outputs, strict=True)
                        ],
                    )
                )
            yield collections.OrderedDict(linex_index=unique_id, features=features)


def run(options):
    """Writes the `FeatureExtractionOptions`' features; returns the line count."""
    config = load_config(options)
    layers = options.layer_indexes()
    for layer in layers:
        if not -config.num_hidden_layers <= layer < config.num_hidden_layers:
            raise UserInputError(
                f"layers={options.layers}: {layer} is not a layer of a "
                f"{config.num_hidden_layers}-layer model",
                argument="layers",
            )
    sequence_length_fits(options.max_seq_length, config)
    encoder = BertEncoder.from_checkpoint(options.init_checkpoint, config=config)
    tokenizer = tokenization.FullTokenizer(options.vocab_file, options.do_lower_case)
    examples = read_examples(options.input_file)
    count = 0
    with tf.io.gfile.GFile(options.output_file, "w") as writer:
        for record in extract_features(
            encoder,
            tokenizer,
            examples,
            layers,
            options.max_seq_length,
            options.batch_size,
        ):
            writer.write(json.dumps(record) + "\n")
            count += 1
    logging.info("Wrote features of %d examples to %s", count, options.output_file)
    return count
