"""What export_saved_model.py does: a trained checkpoint to a TF Serving model.

Reads any checkpoint `from_checkpoint` reads (a run_classifier / run_squad
output_dir, a Google checkpoint or model directory, a Hugging Face directory),
builds the family's model (`bert_tf.tasks.export_models`), and writes
`export_dir/<version>/` with `bert_tf.serving.export_saved_model`.
"""

import os

from absl import logging

from bert_tf.tasks.export_models import build_for_export
from bert_tf.tasks.runner import export_model


def run(options):
    """Exports the checkpoint `SavedModelExportOptions` name; returns the
    version directory."""
    if options.model_type == "retrieval":
        # Two towers and a corpus index, not one checkpoint's model.
        from bert_tf.tasks import retrieval

        return retrieval.export_from_checkpoint(options)
    built = build_for_export(options)
    path = export_model(
        options.export,
        built.model,
        built.vocab_file,
        built.do_lower_case,
        built.max_seq_length,
        **built.tokenizer_options,
        **built.signature_options,
    )
    logging.info(
        "Serve it with: --model_base_path=%s",
        os.path.abspath(options.export.export_dir),
    )
    return path
