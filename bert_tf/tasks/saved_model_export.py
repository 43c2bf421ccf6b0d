"""What export_saved_model.py does: a trained checkpoint to a TF Serving model.

Reads any checkpoint `from_checkpoint` reads (a run_classifier / run_squad
output_dir, a Google checkpoint or model directory, a Hugging Face directory),
builds the family's model (`bert_tf.tasks.export_models`), and writes
`export_dir/<version>/` with `bert_tf.serving.export_saved_model`; a family
with its own exporter (`Family.exporter`: retrieval) exports itself.
"""

import os

from absl import logging

from bert_tf.serving.families import family_named
from bert_tf.serving.registry import resolve
from bert_tf.tasks.export_models import build_for_export
from bert_tf.tasks.runner import export_model


def run(options):
    """Exports the checkpoint `SavedModelExportOptions` name; returns the
    version directory."""
    family = family_named(options.model_type)
    if family.exporter:
        return resolve(family.exporter)(options)
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
