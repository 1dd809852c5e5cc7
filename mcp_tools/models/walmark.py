"""Whether anything was committed to a SQLite database since a moment, told without a query.

In WAL mode every connection to a SQLite database, in any process, shares the database's
WAL-index: the ``-shm`` file beside it, which SQLite maps into memory. Its header is rewritten
by every commit (a counter incremented per transaction, the last valid frame, the salts and a
checksum; the format is SQLite's documented WAL-index format, "walformat.html", which every
SQLite version sharing a database must keep). :func:`commit_mark` reads that header with one
``pread`` of the file: two equal marks mean no connection of any process committed in between,
so whatever this process read before the first mark still holds. ``catalog.get_catalog``
uses it on SQLite to skip the per-request catalog version read while nothing changed, with the
same guarantee as the read (a tool disabled anywhere is refused everywhere from the next request).

The mark is ``None`` (read the database, as without it) wherever it cannot be trusted:

- not SQLite, an in-memory database or a URI name, a database not in WAL mode or a connection
  in exclusive locking mode (checked once per connection: another connection cannot take the
  database out of WAL mode while this one is open; a site that changes the journal mode on a
  connection of its own must close that connection);
- inside a transaction of this thread, with autocommit off, or with a transaction the driver
  holds open (its own uncommitted writes change nothing in the file, and its snapshot may be
  older than the mark);
- ``CONN_MAX_AGE = 0`` (a connection per request: the check per connection would cost more
  than the read it saves);
- this thread's connection not open, or opened since its file was last checked: SQLite
  deletes the ``-shm`` file when the last connection of every process closes and makes a new
  one on the next open, so the file is checked (the one the path names now) whenever a
  new connection of this thread is first seen, after that connection has read the database
  (an open connection that has read holds the file: it cannot be replaced meanwhile), named
  after the file SQLite opened (``PRAGMA database_list``, not the setting resolved again); in a
  forked child every connection is confirmed again;
- the header's two copies differ (a commit writing it right now) or it is not initialized.

Each connection's marks come from the ``-shm`` file it was confirmed with (not from whatever
its NAME names now), read through a descriptor that stays open as long as that file is the
database's WAL-index: it is closed only once another file took its name, which SQLite does only
when no connection of any process has the old one open. POSIX record locks belong to the
process and all go when any of its descriptors of the file closes: a descriptor of the
``-shm`` opened and closed again would drop SQLite's own locks of this process on it, its
readers' locks and the lock that keeps another process from truncating the file and building
the index again under this one, whose next read of its own 32 KB mappings of the truncated file
would end the process (SIGBUS). No mapping of its own either: Python's ``mmap`` duplicates the
descriptor and closes the duplicate when it fails or is collected, with the same effect, where
``pread`` touches no descriptor but the one held.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

__all__ = ["commit_mark", "confirm"]

_HEADER = 48  # one copy of the WAL-index header; the second copy follows it
_FORMAT = 3007000  # the header's iVersion
_IS_INIT = 12  # offset of its isInit byte


class _Shm:
    """One database's ``-shm`` file, open for reading (see the module: not closed while it may
    be the database's WAL-index)."""

    __slots__ = ("fd", "inode")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.inode: tuple[int, int] | None = None

    def close(self) -> None:
        """Once another file has its name. The number is given up first: a mark being read
        meanwhile gets an error (no mark), never the file that number names next."""
        fd, self.fd = self.fd, -1
        os.close(fd)


# Per -shm path: the descriptor held open for it.
_held: dict[str, _Shm] = {}
_lock = threading.Lock()
# The attribute on a Django connection wrapper: (the raw connection its marks are good for, the
# process generation, its -shm file or None for no marks). The generation moves in a forked
# child: what its parent confirmed, on connections the child must not use anyway, is not
# trusted there.
_CONFIRMED = "_mcp_tools_walmark"
_generation = 0


def commit_mark(connection: Any) -> bytes | None:
    """The WAL-index header of ``connection``'s SQLite database as it is now, or None (see the
    module). Cost: a few attribute reads and one 96-byte ``pread``; no query."""
    if connection.vendor != "sqlite" or connection.in_atomic_block or not connection.autocommit:
        return None
    raw = connection.connection
    confirmed = getattr(connection, _CONFIRMED, None)
    if raw is None or confirmed is None or confirmed[0] is not raw or confirmed[1] != _generation:
        return None  # not open, or not confirmed since it opened: the caller reads, then confirm()
    if raw.in_transaction:  # a BEGIN of its own outside atomic(): its snapshot may be older
        return None
    shm = confirmed[2]
    if shm is None:
        return None  # checked: this connection gives no marks
    try:
        both = os.pread(shm.fd, 2 * _HEADER, 0)
    except OSError:
        return None
    first = both[:_HEADER]
    if len(both) != 2 * _HEADER or first != both[_HEADER:] or first[_IS_INIT] != 1:
        return None  # cut short, being written, or not initialized
    return first


def confirm(connection: Any) -> None:
    """After ``connection`` read the database (outside a transaction): let its marks be trusted
    if its database is a WAL-mode SQLite file, holding its ``-shm`` file open (or the new one)."""
    if connection.vendor != "sqlite" or connection.in_atomic_block or not connection.autocommit:
        return
    raw = connection.connection
    confirmed = getattr(connection, _CONFIRMED, None)
    if raw is None or (confirmed is not None and confirmed[0] is raw and confirmed[1] == _generation):
        return  # checked already (marks or none)
    if connection.settings_dict.get("CONN_MAX_AGE") == 0:
        return  # a connection per request (Django's default): a check per connection costs more
    shm: _Shm | None = None
    try:
        name = connection.settings_dict["NAME"]
        if _plain_file(name) and _pragma(raw, "journal_mode") == "wal" and _pragma(raw, "locking_mode") == "normal":
            # The file SQLite opened (its -shm is named after it), not NAME resolved again: a
            # relative NAME read after the process changed directory would name another file.
            path = _opened_file(raw) + "-shm"
            with _lock:
                shm = _opened(path)
    except Exception:  # a file error, a busy PRAGMA: no marks on this connection; the read stands
        shm = None
    # Kept for this connection either way: no check again until it is opened again.
    setattr(connection, _CONFIRMED, (raw, _generation, shm))


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
        old = shm
        # Held before anything else may fail: a descriptor of the file is never closed while
        # the file may be SQLite's.
        shm = _held[path] = _Shm(os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))
        if old is not None:
            # Another file has the name: SQLite replaces a -shm only once no connection of any
            # process has it open, so this process holds no lock on the old one to lose.
            old.close()
        got = os.fstat(shm.fd)
        shm.inode = (got.st_dev, got.st_ino)
        if shm.inode != inode:
            return None  # replaced between the two looks: the next connection tries again
    header = os.pread(shm.fd, 2 * _HEADER, 0)
    if len(header) < 2 * _HEADER or int.from_bytes(header[:4], sys.byteorder) != _FORMAT:
        return None
    return shm


def _forked() -> None:
    global _generation, _lock
    _generation += 1
    _lock = threading.Lock()  # (another thread of the parent may have held it at the fork)


os.register_at_fork(after_in_child=_forked)
