"""How `MilvusStore` reaches Milvus: the URI's kind, its check and the client.

A URI is a Milvus Lite file (``<path>.db``, embedded) or a server
(``http://host:19530``); these need neither TensorFlow nor (but for `connect`)
pymilvus, so a tool checks its URI before loading anything.
"""

import contextlib
import logging
import os

from bert_tf.errors import UserInputError

__all__ = ["argument_of", "check_milvus_uri", "connect", "is_server"]


def quiet_client_logs():
    """Silences pymilvus's and Milvus Lite's own logging.

    pymilvus logs every failed call with its traceback and warns once per
    iterator on Milvus Lite; Milvus Lite's in-process gRPC server logs a
    traceback for each method it lacks (AllocTimestamp, asked for by every
    query iterator, which then falls back to a client-side timestamp). The
    store turns real failures into one-line errors. Called after pymilvus is
    imported: its import configures its loggers afresh.

    Milvus Lite logs its server's start and stop and every background index
    build ("bg: built 1 segment indexes") at INFO, and faiss, which it loads,
    logs each CPU variant it tries (with the ModuleNotFoundError of those it
    lacks): 10 of run_retrieval's 27 lines were theirs. Their warnings stay
    (but those of the servicer, below).
    """
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
    logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
    # Its servicer logs each failed call with a traceback (a full disk: 20
    # lines) before answering it with the error, which the store prints in
    # its one line.
    logging.getLogger("milvus_lite.adapter.grpc.servicer").setLevel(logging.CRITICAL)
    for name in ("milvus_lite", "faiss"):
        logging.getLogger(name).setLevel(logging.WARNING)


def is_server(uri):
    """Whether `uri` names a Milvus server (not a Milvus Lite file)."""
    return uri.startswith(("http://", "https://", "tcp://", "grpc://"))


def argument_of(flag):
    """The `UserInputError` argument of the parameter `flag` that gave a URI
    and of the collection: ``uri`` and ``collection`` are the tools'
    --milvus_uri and --milvus_collection; a tool that names the URI otherwise
    (bert-tf-search's --index) has --collection."""
    if flag == "uri":
        return {"uri": "milvus_uri", "collection": "milvus_collection"}
    return {flag: flag.lstrip("-"), "collection": "collection"}


def check_milvus_uri(uri, flag="uri"):
    """A server URI, or a Milvus Lite file ending in .db in an existing
    directory; needs neither pymilvus nor TensorFlow, so a tool checks it
    before loading anything.

    Raises:
        UserInputError: naming `flag` (the parameter that gave `uri`;
            the tools' --milvus_uri).
    """
    argument = argument_of(flag)
    if is_server(uri):
        return
    if not uri.endswith(".db"):
        raise UserInputError(
            f"{flag}={uri}: a Milvus Lite file must end in .db "
            "(or give http://host:19530 for a server)",
            argument=argument,
        )
    directory = os.path.dirname(os.path.abspath(uri))
    if not os.path.isdir(directory):
        raise UserInputError(f"{flag}={uri}: no directory {directory}", argument)
    if os.path.exists(uri) and not os.path.isdir(uri):
        # Milvus Lite keeps a database in a directory of that name.
        raise UserInputError(
            f"{flag}={uri}: a file, not a Milvus Lite database (a "
            "directory Milvus Lite makes); choose another path",
            argument=argument,
        )


def connect(uri, flag):
    """A `pymilvus.MilvusClient` of `uri`.

    Raises:
        UserInputError: naming `flag` (the parameter that gave `uri`): no
            pymilvus, a bad URI, or no connection.
    """
    try:
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException
    except ImportError as error:
        raise UserInputError(
            f"{flag}={uri}: Milvus needs the retrieval extra ({error}): "
            "pip install '.[retrieval]' (pymilvus and milvus-lite)",
            argument=argument_of(flag),
        ) from None

    quiet_client_logs()
    options = {}
    check_milvus_uri(uri, flag)
    # pymilvus pings every 10 s, also on an idle connection. A gRPC server
    # with gRPC's default policy (Milvus Lite, in-process or as
    # `milvus-lite server`) counts such pings as strikes and answers with
    # GOAWAY "too_many_pings"; gRPC then shares the refused connection with
    # every later client of that address in the process ("Too many pings"
    # on connect). No keepalive pings: each request has its own timeout,
    # and gRPC reconnects a dropped connection on the next request.
    options["grpc_options"] = {"grpc.keepalive_time_ms": 2**31 - 1}
    failures = []
    try:
        with _lite_start_failures(failures):
            return MilvusClient(uri=uri, timeout=10, **options)
    except MilvusException as e:
        # pymilvus's own message is often empty; what failed under it
        # (e.g. an OSError of Milvus Lite) is the cause to show. Milvus Lite
        # logs its own start failure and returns nothing, so its exception
        # is taken from that log record (and the record not printed).
        if failures:
            reason = _cause_text(failures[-1])
        else:
            cause, reason = _deepest_cause(e), e.message or ""
            if cause is not e:
                reason = f"{reason}: {type(cause).__name__}: {cause}".lstrip(": ")
        # Milvus Lite's own reason says whether another process holds the
        # file; without it, that is the likely cause.
        hint = (
            ""
            if is_server(uri) or failures
            else "; is another process using this file?"
        )
        raise UserInputError(
            f"{flag}={uri}: cannot connect ({reason or type(e).__name__}{hint})",
            argument=argument_of(flag),
        ) from None


def _deepest_cause(error):
    cause, seen = error, {id(error)}
    # (A chain may loop back on itself.)
    while (below := cause.__cause__ or cause.__context__) is not None:
        if id(below) in seen:
            break
        seen.add(id(below))
        cause = below
    return cause


def _cause_text(cause):
    # Milvus Lite may wrap the lock file's OSError in its own error; the
    # OSError names the file.
    root = _deepest_cause(cause)
    if isinstance(root, PermissionError):
        return (
            f"no write access to {root.filename or 'its files'}: Milvus Lite "
            "opens its database read-write, even to search"
        )
    if type(cause).__name__ == "DataDirLockedError":
        # One process at a time may open a Milvus Lite file.
        return (
            "another process has it open; Milvus Lite lets one process at a "
            "time use a file: wait for it to end, or use a Milvus server"
        )
    return f"{type(cause).__name__}: {cause}"


@contextlib.contextmanager
def _lite_start_failures(failures):
    """Collects into `failures` the exceptions Milvus Lite logs when its
    embedded server fails to start (it logs them with their traceback and
    returns None, so pymilvus raises a bare "Open local milvus failed");
    meanwhile those records are kept from the user's stderr."""
    logger = logging.getLogger("milvus_lite.server_manager")
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: failures.extend(
        [record.exc_info[1]] if record.exc_info and record.exc_info[1] else []
    )
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
