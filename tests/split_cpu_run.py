"""Runs a CLI script with the CPU split into N logical devices.

    python tests/split_cpu_run.py N SCRIPT [FLAGS...]

MirroredStrategy then has N replicas on one CPU (the tests' stand-in for N
GPUs); the split must happen before TensorFlow creates its devices.
"""

import os
import runpy
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402


def main():
    count, script = int(sys.argv[1]), sys.argv[2]
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * count
    )
    sys.argv = [script, *sys.argv[3:]]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
