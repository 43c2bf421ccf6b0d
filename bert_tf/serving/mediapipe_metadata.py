"""The TFLite metadata MediaPipe Tasks reads from a BERT text model.

MediaPipe's `TextEmbedder` and `TextClassifier` tokenize in their own C++
(`BertPreprocessorCalculator`) from the model's metadata:

* a `TFLITE_METADATA` entry of the model: a `ModelMetadata` flatbuffer
  (file identifier "M001", schema mediapipe/tasks/metadata/metadata_schema.fbs)
  whose one subgraph names its three int32 inputs "ids", "mask" and
  "segment_ids" (in the model's input order) and carries one input process
  unit, `BertTokenizerOptions`, pointing at the vocabulary file;
* for a classifier, the output tensor's `TENSOR_AXIS_LABELS` file (a label a
  line, in class order);
* those files, zipped (stored, uncompressed) after the flatbuffer, as
  the metadata populator of tflite-support and MediaPipe packs them.

Only the tables MediaPipe reads are written, with the `flatbuffers` package
(the `mediapipe` package is not needed to export). Field slots follow the
schema's field order, a union taking two slots (its type, then its value).

Example:
>>> blob = with_mediapipe_metadata(blob, input_names, vocab_bytes, labels=["neg", "pos"])
"""

import io
import zipfile

import flatbuffers

METADATA_FIELD_NAME = "TFLITE_METADATA"
METADATA_FILE_IDENTIFIER = b"M001"
# What BertPreprocessorCalculator looks the inputs up by.
INPUT_NAMES = ("ids", "mask", "segment_ids")
VOCAB_FILE = "vocab.txt"
LABELS_FILE = "labels.txt"
# The oldest metadata parser that reads BertTokenizerOptions and input
# process units (mediapipe/tasks/cc/metadata/metadata_version.cc).
MIN_PARSER_VERSION = "1.1.0"

# metadata_schema.fbs: enum AssociatedFileType, union ProcessUnitOptions.
_VOCABULARY = 5
_TENSOR_AXIS_LABELS = 2
_BERT_TOKENIZER_OPTIONS = 4
_DESCRIPTIONS = {
    "ids": "Tokenized ids of the input text.",
    "mask": "Mask with 1 for real tokens and 0 for padding tokens.",
    "segment_ids": "0 for the first sequence, 1 for the second sequence if exists.",
}


def metadata_flatbuffer(input_names, output_name, model_name, description, labels=None):
    """The `ModelMetadata` flatbuffer (bytes) of a BERT text model.

    Args:
        input_names: the model's inputs in subgraph order, each one of
            `INPUT_NAMES`.
        output_name: the output tensor's metadata name (TextEmbedder's head
            name).
        model_name, description: the model's general information.
        labels: a classifier's class names: the output gets `LABELS_FILE`.
    """
    if sorted(input_names) != sorted(INPUT_NAMES):
        raise ValueError(f"input_names must order {INPUT_NAMES}, got {input_names}")
    b = flatbuffers.Builder(1024)

    def table(fields):
        """fields: (slot, kind, value) with kind "offset" or "ubyte"."""
        b.StartObject(max(slot for slot, _, _ in fields) + 1)
        for slot, kind, value in fields:
            if kind == "offset":
                b.PrependUOffsetTRelativeSlot(slot, value, 0)
            else:
                b.PrependUint8Slot(slot, value, 0)
        return b.EndObject()

    def vector(offsets):
        b.StartVector(4, len(offsets), 4)
        for offset in reversed(offsets):
            b.PrependUOffsetTRelative(offset)
        return b.EndVector()

    def associated_file(name, description, file_type):
        name, description = b.CreateString(name), b.CreateString(description)
        return table(
            [(0, "offset", name), (1, "offset", description), (2, "ubyte", file_type)]
        )

    def tensor(name, description, files=()):
        name, description = b.CreateString(name), b.CreateString(description)
        fields = [(0, "offset", name), (1, "offset", description)]
        if files:
            fields.append((6, "offset", vector(list(files))))
        return table(fields)

    inputs = vector([tensor(n, _DESCRIPTIONS[n]) for n in input_names])
    output_files = []
    if labels is not None:
        output_files = [
            associated_file(LABELS_FILE, "Labels of the classes.", _TENSOR_AXIS_LABELS)
        ]
    output = vector([tensor(output_name, description, output_files)])
    vocab = associated_file(VOCAB_FILE, "Vocabulary of the tokenizer.", _VOCABULARY)
    tokenizer_options = table([(0, "offset", vector([vocab]))])
    process_unit = table(
        [(0, "ubyte", _BERT_TOKENIZER_OPTIONS), (1, "offset", tokenizer_options)]
    )
    subgraph = table(
        [
            (2, "offset", inputs),
            (3, "offset", output),
            (5, "offset", vector([process_unit])),
        ]
    )
    name, text = b.CreateString(model_name), b.CreateString(description)
    version = b.CreateString(MIN_PARSER_VERSION)
    root = table(
        [
            (0, "offset", name),
            (1, "offset", text),
            (3, "offset", vector([subgraph])),
            (7, "offset", version),
        ]
    )
    b.Finish(root, METADATA_FILE_IDENTIFIER)
    return bytes(b.Output())


def with_associated_files(blob, files):
    """`blob` followed by a zip (stored) of `files` {name: bytes}: where
    MediaPipe's metadata extractor finds a model's associated files."""
    out = io.BytesIO(bytes(blob))
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_STORED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()
