"""Apache Beam pipelines of bert_tf's batch jobs (the optional ``[beam]`` extra).

One pipeline per module, each reachable from a command-line tool with
``--runner`` (DirectRunner, PrismRunner, DataflowRunner, FlinkRunner,
SparkRunner) and ``--beam_options`` (see ``runner_options``):

* ``pretraining_data``: create_pretraining_data's sharded records, the same
  shards and seeds as ``--num_workers`` and ``--num_tasks``.
* ``batch_prediction``: any exported SavedModel's raw-text signature over
  TSV/JSONL/TFRecord rows, through ``RunInference``.
* ``corpus_indexing``: a BEIR corpus embedded through ``RunInference`` and
  upserted into Milvus, as ``run_retrieval.py --do_index``; a Milvus Lite
  run's embedded batches wait in ``staging`` files, so a killed run resumes.

apache-beam is imported only by these modules, never by the rest of bert_tf.
"""
