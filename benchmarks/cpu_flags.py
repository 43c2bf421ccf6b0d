"""The CPU a figure was measured on: model, cores and the vector extensions.

Speed figures differ between CPUs with AVX2 only, AVX-512 (VNNI, BF16) and
AMX, so every benchmark prints this line beside its figures; compare figures
only within one run.
"""

import datetime
import os

# The extensions the matrix kernels of TensorFlow, XNNPACK, oneDNN, ONNX
# Runtime and OpenVINO choose between.
VECTOR_EXTENSIONS = (
    "avx2",
    "fma",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "amx_bf16",
    "amx_int8",
)


def cpu_model_and_flags(cpuinfo="/proc/cpuinfo"):
    """(model name, the VECTOR_EXTENSIONS this CPU has); ("?", []) off Linux."""
    model, flags = "?", set()
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("model name") and model == "?":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return model, [flag for flag in VECTOR_EXTENSIONS if flag in flags]


def cpu_description():
    """One line: date, CPU model, cores and vector extensions."""
    model, flags = cpu_model_and_flags()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    extensions = " ".join(flags) or "none of " + "/".join(VECTOR_EXTENSIONS)
    return f"{when}; CPU: {model}; {os.cpu_count()} cores; flags: {extensions}"
