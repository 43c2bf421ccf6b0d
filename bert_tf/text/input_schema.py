"""The encoder's input names: the contract between the data and model floors.

`bert_tf.data_prep` writes and batches features under these names and
`bert_tf.models` reads them, so neither imports the other. Importing this
module imports nothing else (no TensorFlow).

Example:
>>> from bert_tf.text.input_schema import ENCODER_INPUT_NAMES
>>> ENCODER_INPUT_NAMES
('input_ids', 'input_mask', 'segment_ids')
"""

# int32 [batch, length]: word-piece ids, 1 at real positions, the segment
# (0: [CLS] text_a [SEP], 1: text_b [SEP]) of each position.
ENCODER_INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
