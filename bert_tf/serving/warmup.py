"""TF Serving warmup requests: `assets.extra/tf_serving_warmup_requests`.

A TFRecord file of `tensorflow.serving.PredictionLog` protos (the
tensorflow-serving-api package) that the model server replays before it
serves, so the first real request does not pay for graph warmup.
"""

import os

import tensorflow as tf


def predict_request_log(signature_name, inputs):
    """Serialized PredictionLog holding a PredictRequest for `inputs`."""
    from tensorflow_serving.apis import prediction_log_pb2

    log = prediction_log_pb2.PredictionLog()
    request = log.predict_log.request
    request.model_spec.signature_name = signature_name
    for name in sorted(inputs):
        request.inputs[name].CopyFrom(tf.make_tensor_proto(inputs[name]))
    return log.SerializeToString()


def write_warmup_requests(path, requests):
    """Writes (signature_name, inputs) pairs as a TF Serving warmup file."""
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for signature_name, inputs in requests:
            values = {
                k: v.numpy() if hasattr(v, "numpy") else v for k, v in inputs.items()
            }
            writer.write(predict_request_log(signature_name, values))
