"""Runs the original BERT's own TF1 graph, saved in a `.meta` file, as a reference.

The tiny Google-format checkpoint in BERT_TF_DATA ships the `bert_model.ckpt.meta`
that the original `run_pretraining.py` (TF 1.11) wrote. Its graph is the
original `modeling.py` + pre-training heads, op for op. To run it without its
tf.data input pipeline and in inference mode, the graph is rewritten:

- the iterator's seven outputs become placeholders (features in sorted order:
  input_ids, input_mask, masked_lm_ids, masked_lm_positions, masked_lm_weights,
  next_sentence_labels, segment_ids);
- every variable becomes a constant holding its checkpoint value;
- every dropout `keep_prob` becomes 1.0, so `x / keep_prob * floor(keep_prob +
  U[0, 1))` is the identity: what `is_training=False` computes.
"""

import numpy as np
import tensorflow as tf

FEATURES = (
    "input_ids",
    "input_mask",
    "masked_lm_ids",
    "masked_lm_positions",
    "masked_lm_weights",
    "next_sentence_labels",
    "segment_ids",
)
OUTPUTS = {
    "sequence_output": "bert/encoder/Reshape_{last}:0",
    "pooled_output": "bert/pooler/dense/Tanh:0",
    "mlm_logits": "cls/predictions/BiasAdd:0",
    "nsp_logits": "cls/seq_relationship/BiasAdd:0",
}


def run_original_graph(meta_file, checkpoint_prefix, features, num_layers):
    """Returns {output name: array} of the original graph on `features`."""
    meta = tf.compat.v1.MetaGraphDef()
    with open(meta_file, "rb") as f:
        meta.ParseFromString(f.read())
    reader = tf.train.load_checkpoint(checkpoint_prefix)
    iterator = next(n for n in meta.graph_def.node if n.op == "IteratorGetNext")
    shapes = iterator.attr["output_shapes"].list.shape
    types = iterator.attr["output_types"].list.type

    graph_def = tf.compat.v1.GraphDef()
    for i, name in enumerate(FEATURES):
        node = graph_def.node.add(name=f"feature/{name}", op="Placeholder")
        node.attr["dtype"].type = types[i]
        node.attr["shape"].shape.CopyFrom(shapes[i])
    for node in meta.graph_def.node:
        if node.op in ("VariableV2",):
            value = reader.get_tensor(node.name)
            const = graph_def.node.add(name=node.name, op="Const")
            const.attr["dtype"].type = node.attr["dtype"].type
            const.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
            continue
        if node.name.endswith("/dropout/keep_prob"):
            const = graph_def.node.add()
            const.CopyFrom(node)
            const.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(np.float32(1.0)))
            continue
        copy = graph_def.node.add()
        copy.CopyFrom(node)
        del copy.input[:]
        for inp in node.input:
            if inp.startswith("IteratorGetNext"):
                index = int(inp.split(":")[1]) if ":" in inp else 0
                inp = f"feature/{FEATURES[index]}"
            copy.input.append(inp)

    outputs = {k: v.format(last=num_layers + 1) for k, v in OUTPUTS.items()}
    destinations = sorted({o.split(":")[0] for o in outputs.values()})
    graph_def = tf.compat.v1.graph_util.extract_sub_graph(graph_def, destinations)
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    kept = {node.name for node in graph_def.node}
    feed = {f"feature/{n}:0": features[n] for n in FEATURES if f"feature/{n}" in kept}
    # Grappler is off: on CPU its oneDNN remapper fuses this LayerNorm pattern
    # into one op that does not keep the 1e-12 epsilon, which changes outputs
    # wherever the variance is small. The reference must run the ops as saved.
    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        return session.run(outputs, feed_dict=feed)
