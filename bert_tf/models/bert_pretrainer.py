"""`BertPretrainer`: the encoder with the masked-LM and next-sentence heads."""

import keras
from keras import ops

from bert_tf.checkpoints.name_map import logits_head_variables
from bert_tf.checkpoints.name_map import masked_lm_variables
from bert_tf.layers.logits_head import LogitsHead
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.models.bert_encoder import encoder_inputs
from bert_tf.models.bert_encoder import global_dtype_policy
from bert_tf.models.bert_encoder import run_layers
from bert_tf.models.task_model import BertTaskModel
from bert_tf.models.task_model import build_encoder


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(BertTaskModel):
    """BERT with the pre-training heads of the original `run_pretraining.py`.

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.

    Inputs: the encoder's three inputs plus `masked_lm_positions`
        (int32 [batch, num_predictions]).

    Outputs: a dict with `mlm_logits` [batch, num_predictions, vocab_size]
        and `nsp_logits` [batch, 2] (index 0 = "B follows A"), both float32.

    Example:
    >>> pretrainer = bert_tf.BertPretrainer.from_checkpoint("uncased_L-12_H-768_A-12")
    >>> outputs = pretrainer({**features, "masked_lm_positions": positions})
    """

    default_name = "bert_pretrainer"

    def __init__(self, encoder, **kwargs):
        with global_dtype_policy(kwargs.get("dtype")):
            encoder = build_encoder(encoder)
            config = encoder.config

            # === Layers ===
            masked_lm = MaskedLMHead.for_encoder(encoder, name="masked_lm")
            next_sentence = LogitsHead(
                num_outputs=2,
                hidden_size=config.hidden_size,
                initializer_range=config.initializer_range,
                name="next_sentence",
            )

            # === Functional model ===
            inputs = encoder_inputs()
            inputs["masked_lm_positions"] = keras.Input(
                shape=(None,), dtype="int32", name="masked_lm_positions"
            )
            # The heads read only [CLS] and the masked positions, so the last
            # block computes just those queries (same values, ~1/num_layers less
            # work): row 0 is [CLS], rows 1.. the masked positions in order.
            positions = inputs["masked_lm_positions"]
            queries = ops.concatenate(
                [ops.zeros_like(positions[:, :1]), positions], axis=1
            )
            last = run_layers(
                encoder.embeddings,
                encoder.encoder_layers,
                inputs,
                query_positions=queries,
            )[-1]
            in_order = ops.cumsum(ops.ones_like(positions), axis=1) - 1
            outputs = {
                "mlm_logits": masked_lm(last[:, 1:, :], in_order),
                "nsp_logits": next_sentence(encoder.pooler(last[:, 0, :])),
            }
            self._init_graph(encoder, inputs, outputs, **kwargs)

        # === Config ===
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence

    def checkpoint_variables(self):
        return {
            **self.encoder.checkpoint_variables(),
            **masked_lm_variables(self.masked_lm),
            **logits_head_variables(self.next_sentence, "cls/seq_relationship"),
        }
