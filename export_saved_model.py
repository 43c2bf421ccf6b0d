"""Exports a trained BERT checkpoint as a SavedModel for TF Serving.

Raw text in (`serving_default`), predictions out; `serve_tokenized` for
int32 ids. See README.md ("Serving with TF Serving").

    python export_saved_model.py --model_type=classifier --task_name=MRPC \
      --init_checkpoint=/tmp/mrpc_output --do_lower_case=True \
      --max_seq_length=128 --export_dir=/tmp/serving/mrpc

The code is in bert_tf/cli/export_saved_model.py (installed as `bert-tf-export-saved-model`).
"""

from bert_tf.cli.export_saved_model import main

if __name__ == "__main__":
    main()
