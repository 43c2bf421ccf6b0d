"""`IndexLock`: one index run at a time on a Milvus server's collection.

A Milvus Lite file is one process's at a time (Milvus Lite locks it), so a
second run on it is refused by Milvus Lite itself. A server takes writes
from anyone: two --do_index runs on one collection would each read the rows
stored at their start and interleave their upserts and deletes. The lock is
a collection property that the first run sets and the second finds.
"""

import contextlib
import json
import os
import random
import socket
import threading
import time
import uuid

from bert_tf.errors import UserInputError
from bert_tf.retrieval.milvus_connection import argument_of
from bert_tf.retrieval.milvus_connection import connect
from bert_tf.retrieval.milvus_schema import PROPERTY_WRITES

LOCK_PROPERTY = "bert_tf.index_run"
# The holder renews the lock this often; a lock not renewed for STALE_SECONDS
# is a dead run's (a SIGKILL runs no cleanup) and is taken over. The gap
# covers clock skew between the hosts of two runs.
RENEW_SECONDS = 15
STALE_SECONDS = 120
# Between writing the lock and reading it back: longer than the few
# milliseconds between another run's read and write of it, so that of two
# runs started at once both read back the one written last (see `acquire`).
SETTLE_SECONDS = 2.0
_WRITE_ATTEMPTS = 3

__all__ = ["IndexLock", "LOCK_PROPERTY"]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class IndexLock:
    """Claims a server collection for one index run, or refuses in one line.

    `acquire` (or entering the ``with`` block) reads the collection's
    `LOCK_PROPERTY`; if another live run holds it, raises. Otherwise it
    writes its own token, waits `settle` seconds and reads the property
    back: of two runs that started at once, both read back the token written
    last, so exactly one proceeds. A thread renews the lock every `renew`
    seconds; `release` (leaving the block) removes it. A lock held by a
    process of this host that no longer exists, or not renewed for `stale`
    seconds, is a killed run's: the next run takes it over (and resumes).

    Args:
      uri: the server's URI (``http://host:19530``).
      collection: an existing collection's name.
      flag: the flag `uri` came from, for error messages.
      renew, stale, settle: seconds (see the module's constants).

    Raises:
      UserInputError: another run holds the collection (one line naming
        its host, process and start), or the server cannot be reached.

    Example:

    ```python
    with IndexLock("http://localhost:19530", "corpus"):
        index_the_corpus()
    ```
    """

    def __init__(
        self,
        uri,
        collection,
        flag="uri",
        renew=RENEW_SECONDS,
        stale=STALE_SECONDS,
        settle=SETTLE_SECONDS,
    ):
        self.uri = uri
        self.collection = collection
        self._flag = flag
        self._renew, self._stale, self._settle = renew, stale, settle
        self._where = f"{flag}={uri} collection {collection!r}"
        self._token = uuid.uuid4().hex
        self._since = None
        self._stop = threading.Event()
        self._thread = None
        self._client = None

    @classmethod
    def of_store(cls, store, flag="uri"):
        """The lock of an open `MilvusStore`'s collection; a Milvus Lite
        file needs none (Milvus Lite itself keeps it one process's)."""
        if store.embedded:
            return contextlib.nullcontext()
        return cls(store.uri, store.collection, flag=flag)

    def _call(self, what, function, *args, **kwargs):
        from pymilvus.exceptions import MilvusException

        try:
            return function(*args, **kwargs)
        except MilvusException as e:
            message = " ".join(str(e.message).split())
            raise UserInputError(
                f"{self._where}: {what} failed ({message})",
                argument=argument_of(self._flag),
            ) from None

    def _holder(self):
        """The lock's JSON object as the server has it now (None: free)."""
        info = self._call(
            "reading the index lock",
            self._client.describe_collection,
            self.collection,
        )
        value = info.get("properties", {}).get(LOCK_PROPERTY)
        if not value:
            return None
        try:
            holder = json.loads(value)
        except json.JSONDecodeError:
            return None  # not ours to read: taken over
        return holder if isinstance(holder, dict) else None

    def _write(self):
        holder = {
            "token": self._token,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "since": self._since,
            "renewed": time.time(),
        }
        with PROPERTY_WRITES:
            self._call(
                "writing the index lock",
                self._client.alter_collection_properties,
                self.collection,
                properties={LOCK_PROPERTY: json.dumps(holder, sort_keys=True)},
            )

    def _dead(self, holder):
        """Whether `holder` is a killed run's lock."""
        if holder.get("host") == socket.gethostname() and isinstance(
            holder.get("pid"), int
        ):
            if not _alive(holder["pid"]):
                return True
        renewed = holder.get("renewed")
        return not isinstance(renewed, (int, float)) or (
            time.time() - renewed > self._stale
        )

    def _refuse(self, holder):
        started = holder.get("since")
        started = (
            time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started))
            if isinstance(started, (int, float))
            else "an unknown time"
        )
        renewed = holder.get("renewed")
        ago = (
            f"{time.time() - renewed:.0f} s ago"
            if isinstance(renewed, (int, float))
            else "never"
        )
        raise UserInputError(
            f"{self._where}: another index run holds it (process "
            f"{holder.get('pid')} on {holder.get('host')}, started {started}, "
            f"lock renewed {ago}); two runs would interleave their writes: "
            f"wait for it to end (a killed run's lock is taken over "
            f"{self._stale} s after its last renewal, at once on its own host)",
            argument=argument_of(self._flag),
        )

    def check_free(self):
        """Raises as `acquire` would if another live run holds the
        collection, without claiming it (before dropping and making it
        again: --overwrite_index); a missing collection is free."""
        client = self._client = connect(self.uri, self._flag)
        try:
            if client.has_collection(self.collection):
                holder = self._holder()
                if holder and not self._dead(holder):
                    self._refuse(holder)
        finally:
            self._client = None
            client.close()

    def acquire(self):
        """Claims the collection (see the class doc); returns self."""
        self._client = connect(self.uri, self._flag)
        self._since = time.time()
        try:
            for attempt in range(_WRITE_ATTEMPTS):
                holder = self._holder()
                if holder and holder.get("token") != self._token:
                    if not self._dead(holder):
                        self._refuse(holder)
                try:
                    self._write()
                    break
                except UserInputError:
                    # `milvus-lite server` fails one of two property writes
                    # at once (both rename one temporary file): read again.
                    if attempt + 1 == _WRITE_ATTEMPTS:
                        holder = self._holder()
                        if holder and holder.get("token") != self._token:
                            self._refuse(holder)
                        raise
                    time.sleep(random.uniform(0.1, 0.5))
            time.sleep(self._settle)
            holder = self._holder()
            if not holder or holder.get("token") != self._token:
                # Another run wrote after us: it proceeds, we do not.
                self._refuse(holder or {})
        except Exception:
            self._client.close()
            self._client = None
            raise
        self._thread = threading.Thread(
            target=self._keep, name="bert_tf-index-lock", daemon=True
        )
        self._thread.start()
        return self

    def _keep(self):
        """Renews the lock until released; a failed renewal is retried at
        the next one (the lock goes stale only after `stale` seconds)."""
        while not self._stop.wait(self._renew):
            try:
                self._write()
            except UserInputError:
                continue

    def release(self):
        """Removes the lock (if it is still this run's)."""
        if self._client is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            holder = self._holder()
            if holder and holder.get("token") == self._token:
                with PROPERTY_WRITES:
                    self._call(
                        "removing the index lock",
                        self._client.drop_collection_properties,
                        self.collection,
                        property_keys=[LOCK_PROPERTY],
                    )
        finally:
            self._client.close()
            self._client = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc_info):
        self.release()
