"""What a traced training step sends over the network: its all-reduce ops."""

# The ops tf.distribute emits for a cross-device sum (collective all-reduce,
# NCCL, and the TPU's cross-replica sum).
ALL_REDUCE_OPS = ("CollectiveReduce", "CollectiveReduceV2", "NcclAllReduce")
TPU_ALL_REDUCE_OPS = ("CrossReplicaSum",)


def all_reduces(concrete_function):
    """The all-reduce ops of a traced function, nested functions included.

    Args:
        concrete_function: a `tf.function`'s concrete function, e.g.
            `train_loop.get_concrete_function(iterator, steps)`.

    Returns:
        A list of `(device, dtype, num_elements)` for each all-reduce op, one
        entry per device taking part (so a sum over two replicas of one
        packed tensor gives two entries). `num_elements` is None for a shape
        unknown when traced.

    Example:
    >>> reduces = all_reduces(trainer.make_train_loop().get_concrete_function(
    ...     iter(dataset), tf.constant(1)))
    >>> sum(n for _, _, n in reduces)  # elements summed per step, all devices
    """
    found = []
    seen = set()

    def visit(graph):
        for op in graph.get_operations():
            if op.type in ALL_REDUCE_OPS + TPU_ALL_REDUCE_OPS:
                shape = op.inputs[0].shape
                size = shape.num_elements() if shape.is_fully_defined() else None
                found.append((op.device, op.inputs[0].dtype.name, size))
            # Nested functions: tf.function calls, loop bodies, cond branches.
            for value in op.node_def.attr.values():
                for name in [value.func.name, *(f.name for f in value.list.func)]:
                    if name and name not in seen:
                        seen.add(name)
                        function = graph._get_function(name)  # noqa: SLF001
                        if function is not None:
                            visit(_function_graph(function))

    visit(concrete_function.graph)
    return found


def _function_graph(function):
    graph = getattr(function, "graph", None)
    if graph is not None:
        return graph
    from tensorflow.python.framework import function_def_to_graph

    return function_def_to_graph.function_def_to_graph(function.definition)
