"""BERT finetuning runner: the original run_classifier.py on TF2 / Keras 3.

The original's flags keep their names, defaults and meanings; see
`bert_tf/training/flags.py` for the added ones (strategy, precision, optimizer,
gradient accumulation, export) and `--task_name=custom` for your own files.

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
      --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
      --output_dir=/tmp/mrpc_output/

The code is in bert_tf/cli/run_classifier.py (installed as `bert-tf-run-classifier`).
"""

from bert_tf.cli.run_classifier import main

if __name__ == "__main__":
    main()
