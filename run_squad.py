"""BERT SQuAD runner: the original run_squad.py on TF2 / Keras 3.

The original's flags keep their names, defaults and meanings; see
`bert_tf/training/flags.py` for the added ones (strategy, precision, optimizer,
gradient accumulation) and `--do_eval` to score the predictions as
evaluate-v1.1.py / evaluate-v2.0.py do (eval_results.json).

    python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True \
      --train_file=$SQUAD_DIR/train-v1.1.json --do_predict=True \
      --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 \
      --learning_rate=3e-5 --num_train_epochs=2.0 --max_seq_length=384 \
      --doc_stride=128 --output_dir=/tmp/squad_base/

The code is in bert_tf/cli/run_squad.py (installed as `bert-tf-run-squad`).
"""

from bert_tf.cli.run_squad import main

if __name__ == "__main__":
    main()
