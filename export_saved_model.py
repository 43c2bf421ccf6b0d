"""Exports a trained BERT checkpoint as a SavedModel for TF Serving.

Raw text in (`serving_default`), predictions out; `serve_tokenized` for
int32 ids. See README.md ("Serving with TF Serving").

    python export_saved_model.py --model_type=classifier --task_name=MRPC \
      --init_checkpoint=/tmp/mrpc_output --do_lower_case=True \
      --max_seq_length=128 --export_dir=/tmp/serving/mrpc
"""

from absl import app
from absl import flags

from bert_tf.tasks import saved_model_export

saved_model_export.define_flags()


def main(_):
    print(saved_model_export.run(flags.FLAGS))


if __name__ == "__main__":
    app.run(main)
