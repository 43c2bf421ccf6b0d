"""TF Serving's PredictionLog without tensorflow-serving-api: message classes
built here from the field numbers of tensorflow_serving/apis (prediction_log,
predict, model .proto), to decode an export's warmup requests
(tests/test_export.py).
"""


def serving_message_classes():
    from google.protobuf import descriptor_pb2
    from google.protobuf import descriptor_pool
    from google.protobuf import message_factory
    from tensorflow.core.framework import tensor_pb2

    pool = descriptor_pool.DescriptorPool()
    tensor_file = descriptor_pb2.FileDescriptorProto()
    tensor_pb2.DESCRIPTOR.CopyToProto(tensor_file)
    for dependency in tensor_pb2.DESCRIPTOR.dependencies:
        _add_with_dependencies(pool, dependency)
    pool.Add(tensor_file)

    serving = descriptor_pb2.FileDescriptorProto(
        name="serving_test.proto",
        package="tensorflow.serving",
        dependency=[tensor_file.name],
        syntax="proto3",
    )
    label = descriptor_pb2.FieldDescriptorProto
    string, message = label.TYPE_STRING, label.TYPE_MESSAGE
    optional, repeated = label.LABEL_OPTIONAL, label.LABEL_REPEATED

    def add(name, fields, options=None):
        msg = serving.message_type.add(name=name)
        for field_name, number, field_type, type_name, field_label in fields:
            msg.field.add(
                name=field_name,
                number=number,
                type=field_type,
                type_name=type_name,
                label=field_label,
            )
        if options:
            msg.options.map_entry = True
        return msg

    add(
        "ModelSpec",
        [
            ("name", 1, string, None, optional),
            ("signature_name", 3, string, None, optional),
        ],
    )
    add(
        "InputsEntry",
        [
            ("key", 1, string, None, optional),
            ("value", 2, message, ".tensorflow.TensorProto", optional),
        ],
    )
    add(
        "PredictRequest",
        [
            ("model_spec", 1, message, ".tensorflow.serving.ModelSpec", optional),
            ("inputs", 2, message, ".tensorflow.serving.InputsEntry", repeated),
        ],
    )
    add(
        "PredictLog",
        [("request", 1, message, ".tensorflow.serving.PredictRequest", optional)],
    )
    add(
        "PredictionLog",
        [("predict_log", 6, message, ".tensorflow.serving.PredictLog", optional)],
    )
    pool.Add(serving)
    descriptor = pool.FindMessageTypeByName("tensorflow.serving.PredictionLog")
    log_class = message_factory.GetMessageClass(descriptor)

    class Log:
        @staticmethod
        def FromString(data):
            parsed = log_class.FromString(data)
            return _LogView(parsed)

    return Log


class _LogView:
    """PredictionLog with request.inputs as a dict (the map field is declared
    as repeated key/value entries above)."""

    def __init__(self, parsed):
        self.predict_log = self
        self.request = self
        self.model_spec = parsed.predict_log.request.model_spec
        self.inputs = {
            entry.key: entry.value for entry in parsed.predict_log.request.inputs
        }


def _add_with_dependencies(pool, file_descriptor):
    from google.protobuf import descriptor_pb2

    for dependency in file_descriptor.dependencies:
        _add_with_dependencies(pool, dependency)
    proto = descriptor_pb2.FileDescriptorProto()
    file_descriptor.CopyToProto(proto)
    try:
        pool.Add(proto)
    except TypeError:
        pass  # already added through another path
