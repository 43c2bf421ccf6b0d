"""Masked LM and next sentence prediction pre-training: the original
run_pretraining.py on TF2 / Keras 3.

The original's flags keep their names, defaults and meanings; see
`bert_tf/training/flags.py` for the added ones (strategy, precision, optimizer,
gradient accumulation). Records come from create_pretraining_data.py.

    python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord \
      --output_dir=/tmp/pretraining_output --do_train=True --do_eval=True \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
      --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
      --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5

The code is in bert_tf/cli/run_pretraining.py (installed as `bert-tf-run-pretraining`).
"""

from bert_tf.cli.run_pretraining import main

if __name__ == "__main__":
    main()
