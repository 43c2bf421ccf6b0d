"""``DualEncoderHandler``: Beam ``RunInference`` with run_retrieval's document tower."""

from apache_beam.ml.inference.base import ModelHandler
from apache_beam.ml.inference.base import PredictionResult

from bert_tf.retrieval.indexing import INDEX_CHUNK


class DualEncoderHandler(ModelHandler):
    """A Beam ``ModelHandler`` embedding ``beir.Passage``s with the towers of a
    run_retrieval run (``load_dual_encoder``: those trained in output_dir,
    else --init_checkpoint).

    Each batch is embedded as --do_index embeds a chunk: sorted by length
    (longest first) and cut into ``encode_batch_size`` forward passes, each
    padded to its own longest passage. A prediction's inference is the
    passage's float32 vector.

    Args:
      run: the `RunOptions`; options: the `RetrievalOptions`.
      max_batch_size: passages per batch (Beam's BatchElements bound).

    Example:

    ```python
    passages | RunInference(DualEncoderHandler(run_options, retrieval_options))
    ```
    """

    def __init__(self, run, options, max_batch_size=INDEX_CHUNK):
        # Whole chunks: Beam's adaptive batching starts at min_batch_size
        # and grew only to 12 passages (388 batches for 2,278 passages).
        super().__init__(min_batch_size=max_batch_size, max_batch_size=max_batch_size)
        self.run = run
        self.options = options

    def load_model(self):
        from bert_tf.tasks.retrieval import load_dual_encoder

        return load_dual_encoder(self.run, self.options)

    def run_inference(self, batch, model, inference_args=None):
        vectors = model.encode_documents(
            [passage.text for passage in batch], self.options.encode_batch_size
        )
        return [
            PredictionResult(passage, vector)
            for passage, vector in zip(batch, vectors, strict=True)
        ]

    def get_metrics_namespace(self):
        return "bert_tf_dual_encoder"
