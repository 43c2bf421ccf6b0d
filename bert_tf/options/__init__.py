"""Typed options of the run_* tools: what the command-line flags mean, checked once.

Each tool's flags become one `RunOptions` (output_dir, model, batches, the
`TrainingOptions`, the `DistributionOptions`, the `ExportOptions`) plus one
options object of its task (`ClassifierOptions`, `SquadOptions`, `NerOptions`,
`PretrainingOptions`). Every check runs when the object is made and names the
flag at fault, so a mistake is reported before TensorFlow loads; no module
here imports TensorFlow or absl.

Example:

```python
from bert_tf.options import RunOptions, TrainingOptions

run = RunOptions(
    output_dir="/tmp/mrpc_output",
    vocab_file="vocab.txt",
    bert_config_file="bert_config.json",
    do_train=True,
    training=TrainingOptions(train_batch_size=32, learning_rate=2e-5),
)
```
"""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "RunOptions": "bert_tf.options.run_options",
    "TrainingOptions": "bert_tf.options.training_options",
    "DistributionOptions": "bert_tf.options.distribution_options",
    "ExportOptions": "bert_tf.options.export_options",
    "ClassifierOptions": "bert_tf.options.classifier_options",
    "SquadOptions": "bert_tf.options.squad_options",
    "NerOptions": "bert_tf.options.ner_options",
    "PretrainingOptions": "bert_tf.options.pretraining_options",
    "FeatureExtractionOptions": "bert_tf.options.feature_extraction_options",
    "SavedModelExportOptions": "bert_tf.options.saved_model_export_options",
    "TfdsOptions": "bert_tf.options.tfds_options",
    "SimilarityOptions": "bert_tf.options.similarity_options",
    "RerankerOptions": "bert_tf.options.reranker_options",
    "RetrievalOptions": "bert_tf.options.retrieval_options",
    "EmbedOptions": "bert_tf.options.embed_options",
    "BatchPredictionOptions": "bert_tf.options.batch_prediction_options",
    "PretrainingDataOptions": "bert_tf.options.pretraining_data_options",
    "SearchOptions": "bert_tf.options.search_options",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
