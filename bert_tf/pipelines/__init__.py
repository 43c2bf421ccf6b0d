"""`bert_tf.pipeline`: one line from a model directory to answers on raw text.

    classify = bert_tf.pipeline("text-classification", "/tmp/mrpc_output")
    classify(["The cat sat."])            # [{"label": "1", "score": 0.93}]

Tasks (Hugging Face's names): "text-classification" (alias
"sentiment-analysis"), "token-classification" (alias "ner"),
"question-answering", "sentence-embedding" (alias "feature-extraction").

The directory may be a bert_tf output_dir or checkpoint directory (the
checkpoint with its bert_config.json, vocab.txt, run_settings.json and
label_list.json), a Hugging Face or sentence-transformers directory, or a
SavedModel that export_saved_model wrote (a version directory, or the base
directory: its highest version), or a `.tflite` file of export_litert.py
(raw-text or `--target=mediapipe`; classification and embeddings). `import bert_tf.pipelines` does not import
TensorFlow; `pipeline` does.
"""

import os

from bert_tf.errors import UserInputError
from bert_tf.serving.families import TASK_FAMILIES


def saved_model_version(path):
    """The SavedModel version directory at `path` (itself, or the highest
    numbered subdirectory holding saved_model.pb); None if neither."""
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        return path
    versions = [
        int(name)
        for name in os.listdir(path)
        if name.isdigit() and os.path.exists(os.path.join(path, name, "saved_model.pb"))
    ]
    return os.path.join(path, str(max(versions))) if versions else None


def pipeline(task, model, *, seq_length=None, batch_size=32, **options):
    """A `TextPipeline` for `task` over the model in directory `model`.

    Args:
        task: "text-classification", "token-classification" / "ner",
            "question-answering" or "sentence-embedding" (and the aliases
            "sentiment-analysis", "feature-extraction").
        model: a bert_tf output_dir or checkpoint directory, a Hugging Face
            or sentence-transformers directory, a SavedModel (version or
            base) directory, or a `.tflite` file of export_litert.py.
        seq_length: longest input in word pieces (the question-answering
            window) for a checkpoint; default: the run's max_seq_length
            (run_settings.json), else 384 for question answering and 128
            otherwise. A SavedModel has its own.
        batch_size: texts per forward pass.
        **options: for a checkpoint, `labels` (class names or IOB2 tags in
            label-id order, when the directory does not name them) and the
            `SpanOptions` fields (`doc_stride`, `max_answer_length`, ...).

    Raises:
        UserInputError: an unknown task, or a directory that holds no model
            this task can use (one line naming it).

    Example:
    >>> embed = bert_tf.pipeline("sentence-embedding", minilm_dir)
    >>> embed(["A cat.", "A dog."]).shape
    (2, 384)
    """
    from bert_tf.pipelines.text_pipeline import checked_batch_size

    checked_batch_size(batch_size)  # before a model loads
    if task not in TASK_FAMILIES:
        raise UserInputError(
            f"bert_tf.pipeline: unknown task {task!r}; known tasks: "
            f"{', '.join(sorted(TASK_FAMILIES))}"
        )
    family = TASK_FAMILIES[task]
    path = os.fspath(model)
    if os.path.isfile(path) and path.endswith(".tflite"):
        if seq_length is not None or options:
            raise UserInputError(
                f"bert_tf.pipeline: {path} is a LiteRT file, which carries its own "
                "settings; seq_length and options apply to checkpoints only"
            )
        from bert_tf.pipelines.litert_source import LiteRTSource
        from bert_tf.pipelines.text_pipeline import TextPipeline

        return TextPipeline(task, LiteRTSource(path, family), batch_size=batch_size)
    if not os.path.isdir(path):
        raise UserInputError(f"bert_tf.pipeline: {path}: no such directory")
    version = saved_model_version(path)
    if version is not None:
        if seq_length is not None or options:
            given = sorted([*options, *(["seq_length"] if seq_length else [])])
            raise UserInputError(
                f"bert_tf.pipeline: {version} is a SavedModel, which carries its "
                f"own settings; {', '.join(given)} apply to checkpoints only"
            )
        from bert_tf.pipelines.saved_model_source import SavedModelSource

        source = SavedModelSource(version, family)
    else:
        from bert_tf.pipelines.checkpoint_source import CheckpointSource

        source = CheckpointSource(path, family, seq_length, **options)
    from bert_tf.pipelines.text_pipeline import TextPipeline

    return TextPipeline(task, source, batch_size=batch_size)
