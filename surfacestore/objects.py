"""Tables on S3-compatible object storage (``s3://BUCKET/PREFIX/NAME.zarr``), through obstore.

Why obstore: a thin binding of the Rust ``object_store`` crate with a synchronous API (records are
read from worker threads, with no event loop to share), ranged reads, listings by delimiter,
retries and timeouts built in, and the same store objects zarr-python's ``zarr.storage.ObjectStore``
takes, so the reference reader opens a table on a bucket exactly as the store does.

Credentials, region and endpoint come from the standard AWS environment variables
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ...); an
``http://`` endpoint (a local S3 server) is allowed. Requests time out after
``SURFACESTORE_S3_TIMEOUT`` seconds (default 10) and are retried twice, so a slow or failing
bucket gives :class:`StorageUnavailable` rather than a hung reader.

Publishing: object storage has no rename, so a table is uploaded key by key under its final
prefix and becomes a table only when its group metadata (``NAME.zarr/zarr.json``, which holds the
surface header) is written, last. Readers take a prefix without that key for no table, so an
interrupted upload is never read as one. Rebuilding a table first deletes its ``zarr.json`` (the
table is then absent, never half old and half new, for new readers) and the old keys, then
uploads; a reader that opened the old version before that fails with a missing or changed record
rather than mixing versions (records carry checksums, the header a digest).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from surfacestore.errors import StorageUnavailable, TableExists

__all__ = ["SCHEME", "is_object_url", "ObjectFiles", "exists", "list_tables", "publish", "zarr_store",
           "reset_clients", "read_pool"]

SCHEME = "s3://"
#: group metadata: written last when publishing, deleted first when replacing
GROUP_KEY = "zarr.json"


def is_object_url(location: Any) -> bool:
    """True for an ``s3://`` location."""
    return isinstance(location, str) and location.startswith(SCHEME)


def _split(url: str) -> tuple[str, str]:
    bucket, _, prefix = url[len(SCHEME):].partition("/")
    if not bucket:
        raise ValueError(f"{url!r}: no bucket in the s3:// location")
    return bucket, prefix.strip("/")


@lru_cache(maxsize=32)
def _bucket(bucket: str, prefix: str | None = None) -> Any:
    """An obstore S3 store of ``bucket`` (keys relative to ``prefix`` when given)."""
    from obstore.store import S3Store

    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    timeout = float(os.environ.get("SURFACESTORE_S3_TIMEOUT", "10"))
    return S3Store(bucket, prefix=prefix, client_options={"allow_http": endpoint.startswith("http://"),
                                           "timeout": f"{timeout}s", "connect_timeout": f"{min(timeout, 5.0)}s"},
                   retry_config={"max_retries": 2, "backoff": {"init_backoff": timedelta(milliseconds=50)},
                                 "retry_timeout": timedelta(seconds=2 * timeout)})


@lru_cache(maxsize=1)
def read_pool() -> ThreadPoolExecutor:
    """Threads that fetch the records of one block concurrently (shared by every table)."""
    return ThreadPoolExecutor(32, thread_name_prefix="s3-read")


def reset_clients() -> None:
    """Forget the cached bucket clients (after the AWS environment variables changed)."""
    _bucket.cache_clear()


def _call(what: str, fn: Callable[[], Any]) -> Any:
    """Run an obstore call; a missing key is ``FileNotFoundError``, any other failure of the
    bucket :class:`StorageUnavailable` (transient: a store answers 503 and clients retry)."""
    from obstore.exceptions import BaseError, NotFoundError

    try:
        return fn()
    except (NotFoundError, FileNotFoundError):
        raise FileNotFoundError(f"{what}: no such key") from None
    except (BaseError, OSError, TimeoutError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StorageUnavailable(f"{what}: object storage failed ({first[:300]})") from None


class ObjectFiles:
    """The keys of one table under an ``s3://`` prefix, read as the table reader reads files:
    whole keys, byte ranges, sizes and a version tag."""

    remote = True

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        bucket, self._prefix = _split(self.url)
        self._store = _bucket(bucket)

    def _key(self, rel: str) -> str:
        return f"{self._prefix}/{rel}" if self._prefix else rel

    def read(self, rel: str, limit: int) -> bytes:
        """The whole key ``rel`` if it holds at most ``limit`` bytes; else its first ``limit + 1``
        bytes (so the caller sees it is too long)."""
        return self.read_versioned(rel, limit)[0]

    def read_versioned(self, rel: str, limit: int) -> tuple[bytes, Any]:
        """:meth:`read` and the :meth:`version` of what it read, in one request (its ETag): a
        table a round trip away opens in one round trip, not two."""
        import obstore

        def get() -> tuple[bytes, Any]:
            res = obstore.get(self._store, self._key(rel))
            if res.meta["size"] > limit:
                head = obstore.get_range(self._store, self._key(rel), start=0, length=limit + 1)
                return bytes(head), res.meta["e_tag"]
            return res.bytes().to_bytes(), res.meta["e_tag"]
        data: tuple[bytes, Any] = _call(f"{self.url}/{rel}", get)
        return data

    def read_range(self, rel: str, offset: int, nbytes: int) -> bytes:
        import obstore

        if nbytes == 0:
            return b""
        return bytes(_call(f"{self.url}/{rel}",
                           lambda: obstore.get_range(self._store, self._key(rel), start=offset, length=nbytes)))

    def read_tail(self, rel: str, nbytes: int) -> tuple[bytes, int]:
        """The last ``nbytes`` bytes of ``rel`` (all of it where it is shorter) and its size, in
        one request (a suffix range)."""
        import obstore

        def get() -> tuple[bytes, int]:
            res = obstore.get(self._store, self._key(rel), options={"range": {"suffix": nbytes}})
            return res.bytes().to_bytes(), int(res.meta["size"])
        data: tuple[bytes, int] = _call(f"{self.url}/{rel}", get)
        return data

    def size(self, rel: str) -> int:
        return int(self._head(rel)["size"])

    def version(self, rel: str) -> Any:
        """A tag that changes when ``rel`` is rewritten (its ETag)."""
        return self._head(rel)["e_tag"]

    def _head(self, rel: str) -> Any:
        import obstore

        return _call(f"{self.url}/{rel}", lambda: obstore.head(self._store, self._key(rel)))

    def close(self) -> None:
        pass


def exists(url: str) -> bool:
    """True if a table is published at ``url`` (its group metadata exists)."""
    try:
        ObjectFiles(url).size(GROUP_KEY)
        return True
    except FileNotFoundError:
        return False


def table_exists(location: str | os.PathLike[str]) -> bool:
    """Something is at the table ``location``: on object storage a published table, else a folder
    of that name (a table or not: never built over, opening it says what is wrong)."""
    return exists(str(location)) if is_object_url(location) else Path(location).exists()


def list_tables(root: str, suffix: str) -> list[str]:
    """Names (``suffix`` removed) of the table prefixes directly under ``root`` (published or not:
    the caller checks each one's group metadata)."""
    import obstore

    bucket, prefix = _split(root)
    store = _bucket(bucket)
    listing = _call(root, lambda: obstore.list_with_delimiter(store, prefix or None))
    names = []
    for p in listing["common_prefixes"]:
        leaf = p.rstrip("/").rsplit("/", 1)[-1]
        if leaf.endswith(suffix) and not leaf.startswith("."):
            names.append(leaf[: -len(suffix)])
    return sorted(names)


def _delete_prefix(store: Any, prefix: str, what: str) -> None:
    import obstore

    for batch in obstore.list(store, prefix=f"{prefix}/"):
        paths: list[str] = [m["path"] for m in batch]
        if paths:
            _call(what, functools.partial(obstore.delete, store, paths))


def publish(folder: Path, url: str, overwrite: bool, progress: Callable[[int], None] | None = None) -> None:
    """Upload the table folder ``folder`` to ``url`` (``s3://BUCKET/PREFIX/NAME.zarr``), its group
    metadata last (see the module's notes); ``TableExists`` if a table is there and not
    ``overwrite``. ``progress(n)`` is called with the number of keys uploaded."""
    import obstore

    bucket, prefix = _split(url)
    store = _bucket(bucket)
    key = f"{prefix}/{GROUP_KEY}"
    published = exists(url)
    if published and not overwrite:
        raise TableExists(f"{url} exists (use overwrite)")
    if published:
        _call(url, lambda: obstore.delete(store, key))  # unpublish first: absent, never mixed
    _delete_prefix(store, prefix, url)  # leftovers of the old version or of an interrupted upload
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    body = [p for p in files if p.relative_to(folder).as_posix() != GROUP_KEY]

    def put(p: Path) -> None:
        rel = p.relative_to(folder).as_posix()
        _call(f"{url}/{rel}", lambda: obstore.put(store, f"{prefix}/{rel}", p.read_bytes()))
        if progress is not None:
            progress(1)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, body))
    put(folder / GROUP_KEY)


def zarr_store(url: str) -> Any:
    """The table at ``url`` as a read-only ``zarr.storage.ObjectStore`` (for ``zarr.open_group``)."""
    from zarr.storage import ObjectStore

    bucket, prefix = _split(url)
    return ObjectStore(_bucket(bucket, prefix), read_only=True)
