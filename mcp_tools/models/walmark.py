"""Whether anything was committed to a SQLite database since a moment, told without a query.

In WAL mode every connection to a SQLite database, in any process, shares the database's
WAL-index: the ``-shm`` file beside it, which SQLite maps into memory. Its header is rewritten
by every commit (a counter incremented per transaction, the last valid frame, the salts and a
checksum; the format is SQLite's documented WAL-index format, "walformat.html", which every
SQLite version sharing a database must keep). :func:`commit_mark` reads that header from a
read-only mapping of the file: two equal marks mean no connection of any process committed in
between, so whatever this process read before the first mark still holds. ``catalog.get_catalog``
uses it on SQLite to skip the per-request catalog version read while nothing changed, with the
same guarantee as the read (a tool disabled anywhere is refused everywhere from the next request).

The mark is ``None`` (read the database, as without it) wherever it cannot be trusted:

- not SQLite, an in-memory database or a URI name, a database not in WAL mode or a connection
  in exclusive locking mode (checked once per connection: a database cannot leave WAL mode
  while a connection is open);
- inside a transaction of this thread, with autocommit off, or with a transaction the driver
  holds open (its own uncommitted writes change nothing in the file, and its snapshot may be
  older than the mark);
- ``CONN_MAX_AGE = 0`` (a connection per request: the check per connection would cost more
  than the read it saves);
- this thread's connection not open, or opened since the mapping was last checked: SQLite
  deletes the ``-shm`` file when the last connection of every process closes and makes a new
  one on the next open, so the mapping is checked (same file as the path names) whenever a
  new connection of this thread is first seen, after that connection has read the database
  (an open connection that has read holds the file: it cannot be replaced meanwhile), named
  after the file SQLite opened (``PRAGMA database_list``, not the setting resolved again); in a
  forked child every connection is confirmed again;
- the header's two copies differ (a commit writing it right now) or it is not initialized.

The mapping and the descriptor it was made from stay open as long as the file is the
database's WAL-index (closed only once another file took its name, which SQLite does only when
no connection of any process has the old one open). POSIX record locks belong to the process
and all go when any of its descriptors of the file closes: a descriptor of the ``-shm`` opened
and closed again would drop SQLite's own locks of this process on it, its readers' locks and
the lock that keeps another process from truncating the file and building the index again
under this one, whose mapped reads of the truncated file would then end the process (SIGBUS).
A mark is read only while this thread's connection, which has the file open, is open: SQLite
holds that lock meanwhile, so the file is not truncated under the mapping.
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
from typing import Any

__all__ = ["commit_mark", "confirm"]

_HEADER = 48  # one copy of the WAL-index header; the second copy follows it
_FORMAT = 3007000  # the header's iVersion
_IS_INIT = 12  # offset of its isInit byte


class _Shm:
    """One database's ``-shm`` file, open and mapped for reading (see the module: neither is
    closed while it may be the database's WAL-index)."""

    __slots__ = ("fd", "inode", "view")

    def __init__(self, fd: int, inode: tuple[int, int]) -> None:
        self.fd = fd
        self.inode = inode
        self.view: mmap.mmap | None = None  # once the file is large enough

    def close(self) -> None:
        if self.view is not None:
            self.view.close()
        os.close(self.fd)


# Per database setting NAME: the file its marks come from (None: no marks, e.g. not in WAL mode).
_maps: dict[str, _Shm | None] = {}
# Per -shm path: the descriptor held open (kept here whatever _maps says, so that no change of
# _maps ever closes a descriptor of a file SQLite may still use).
_held: dict[str, _Shm] = {}
_lock = threading.Lock()
# The attribute on a Django connection wrapper naming the raw connection its marks are good for,
# and in which process (the generation moves in a forked child: what its parent confirmed, on
# connections the child must not use anyway, is not trusted there).
_CONFIRMED = "_mcp_tools_walmark"
_generation = 0


def commit_mark(connection: Any) -> bytes | None:
    """The WAL-index header of ``connection``'s SQLite database as it is now, or None (see the
    module). Cost: a few attribute reads and two 48-byte copies; no system call, no query."""
    if connection.vendor != "sqlite" or connection.in_atomic_block or not connection.autocommit:
        return None
    raw = connection.connection
    confirmed = getattr(connection, _CONFIRMED, None)
    if raw is None or confirmed is None or confirmed[0] is not raw or confirmed[1] != _generation:
        return None  # not open, or not confirmed since it opened: the caller reads, then confirm()
    if raw.in_transaction:  # a BEGIN of its own outside atomic(): its snapshot may be older
        return None
    found = _maps.get(connection.settings_dict["NAME"])
    if found is None or (view := found.view) is None:
        return None
    first = view[:_HEADER]
    if first != view[_HEADER : 2 * _HEADER] or first[_IS_INIT] != 1:
        return None
    return first


def confirm(connection: Any) -> None:
    """After ``connection`` read the database (outside a transaction): let its marks be trusted
    if its database is a WAL-mode SQLite file, mapping (or mapping again) its ``-shm`` file."""
    if connection.vendor != "sqlite" or connection.in_atomic_block or not connection.autocommit:
        return
    raw = connection.connection
    confirmed = getattr(connection, _CONFIRMED, None)
    if raw is None or (confirmed is not None and confirmed[0] is raw and confirmed[1] == _generation):
        return
    if connection.settings_dict.get("CONN_MAX_AGE") == 0:
        return  # a connection per request (Django's default): a check per connection costs more
    name = connection.settings_dict["NAME"]
    try:
        if not _plain_file(name) or _pragma(raw, "journal_mode") != "wal" or _pragma(raw, "locking_mode") != "normal":
            with _lock:
                _maps[name] = None
            return
        # The file SQLite opened (its -shm is named after it), not NAME resolved again: a
        # relative NAME read after the process changed directory would name another file.
        path = _opened_file(raw) + "-shm"
        with _lock:
            _maps[name] = _opened(path)
    except Exception:  # a file error, a busy PRAGMA: no mark; the read that came first stands
        with _lock:
            _maps[name] = None
        return
    if _maps.get(name) is not None:
        setattr(connection, _CONFIRMED, (raw, _generation))


def _plain_file(name: Any) -> bool:
    if not isinstance(name, str | os.PathLike):
        return False
    name = os.fspath(name)
    return bool(name) and name != ":memory:" and not name.startswith("file:") and os.path.isfile(name)


def _opened_file(raw: Any) -> str:
    """The main database's file as SQLite resolved it (``PRAGMA database_list``)."""
    cursor = raw.cursor()
    try:
        cursor.execute("PRAGMA database_list")
        rows = cursor.fetchall()
    finally:
        cursor.close()
    found = next((str(row[2]) for row in rows if row[1] == "main" and row[2]), "")
    if not os.path.isabs(found):
        raise ValueError("no file")
    return found


def _pragma(raw: Any, name: str) -> str:
    """``PRAGMA journal_mode`` (``wal``?) or ``locking_mode`` (``normal``: with ``exclusive``
    SQLite keeps the WAL-index in the process's heap, and a ``-shm`` file left on disk is stale)."""
    cursor = raw.cursor()
    try:
        cursor.execute(f"PRAGMA {name}")
        row = cursor.fetchone()
    finally:
        cursor.close()
    return str(row[0]).lower() if row else ""


def _opened(path: str) -> _Shm | None:
    """``path`` held open for reading (with the lock held): the descriptor already held while it
    is still that file, else a new one (None when the file is not an initialized WAL-index of
    this machine's byte order; the descriptor is held all the same)."""
    status = os.stat(path)
    inode = (status.st_dev, status.st_ino)
    shm = _held.get(path)
    if shm is None or shm.inode != inode:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        got = os.fstat(fd)
        if shm is not None:
            # Another file has the name: SQLite replaces a -shm only once no connection of any
            # process has it open, so this process holds no lock on the old one to lose.
            shm.close()
        shm = _held[path] = _Shm(fd, (got.st_dev, got.st_ino))
        if shm.inode != inode:
            return None  # replaced between the two looks: the next connection tries again
    if shm.view is None:
        if os.fstat(shm.fd).st_size < 2 * _HEADER:
            return None
        shm.view = mmap.mmap(shm.fd, 2 * _HEADER, mmap.MAP_SHARED, mmap.PROT_READ)
    if int.from_bytes(shm.view[:4], sys.byteorder) != _FORMAT:
        return None
    return shm


def _forked() -> None:
    global _generation, _lock
    _generation += 1
    _lock = threading.Lock()  # (another thread of the parent may have held it at the fork)


os.register_at_fork(after_in_child=_forked)
