"""A real Milvus server for the tests: `milvus-lite server` (milvus-lite >= 3.2)
on 127.0.0.1 and a free port, speaking the protocol of a Milvus
standalone/cluster to the same pymilvus client. It has sparse vectors and the
BM25 function, and no INT8/BINARY vectors (as Milvus Lite files)."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def milvus_server(data_dir, timeout=60):
    """Yields the server's URI (http://127.0.0.1:P); stops it on exit."""
    command = shutil.which("milvus-lite")
    if command is None:
        pytest.skip("milvus-lite (>= 3.2, with `milvus-lite server`) is not installed")
    port = _free_port()
    log_path = os.path.join(str(data_dir), "server.log")
    os.makedirs(str(data_dir), exist_ok=True)
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [
                command,
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--data-dir",
                os.path.join(str(data_dir), "data"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if server.poll() is not None:
                raise RuntimeError(
                    f"milvus-lite server exited {server.returncode}: "
                    + open(log_path, errors="replace").read()[-2000:]
                )
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"milvus-lite server: no port {port} in {timeout} s")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
