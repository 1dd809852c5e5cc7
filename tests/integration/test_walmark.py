"""The SQLite commit mark (``mcp_tools.models.walmark``): what lets a process skip the catalog
version read while nothing was committed anywhere, and every way it must refuse to be trusted.

Each test opens its own SQLite file through Django's connection handler (the suite's database
is in memory, which gives no mark), and commits from other connections and a real other process.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db.utils import ConnectionHandler

from mcp_tools.models import walmark

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture(autouse=True)
def _own_databases(django_db_blocker: Any) -> Iterator[None]:
    with django_db_blocker.unblock():  # these files are the tests' own, not the suite's database
        yield


def _handler(path: Path | str, journal: str = "WAL", max_age: int | None = 60) -> Any:
    return ConnectionHandler(
        {
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": str(path),
                "CONN_MAX_AGE": max_age,
                "OPTIONS": {"init_command": f"PRAGMA journal_mode={journal};"},
            }
        }
    )


def _make_database(path: Path) -> None:
    """A WAL-mode database with one version row."""
    setup = sqlite3.connect(path)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE version (id INTEGER PRIMARY KEY, n INTEGER)")
    setup.execute("INSERT INTO version VALUES (1, 1)")
    setup.commit()
    setup.close()


def _two_folders_with_one_database_name(tmp_path: Path) -> tuple[Path, Path]:
    """Folders a/ and b/, each with its own WAL-mode db.sqlite3 (one relative NAME, two files)."""
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        _make_database(folder / "db.sqlite3")
    return first, second


def _mark_of_a_new_connection(path: Path, first: str | None = None, **handler: Any) -> bytes | None:
    """The mark of a connection of its own to ``path`` once it read (``first``: run before)."""
    connection = _handler(path, **handler)["default"]
    try:
        connection.ensure_connection()
        if first is not None:
            connection.connection.execute(first)
        _read(connection)
        return walmark.commit_mark(connection)
    finally:
        connection.close()


@pytest.fixture
def wal_database(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    path = tmp_path / "marks.sqlite3"
    _make_database(path)
    connection = _handler(path)["default"]
    yield path, connection
    connection.close()


def _read(connection: Any) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT n FROM version WHERE id = 1")
        value = int(cursor.fetchone()[0])
    walmark.confirm(connection)
    return value


def _bump_elsewhere(path: Path) -> None:
    other = sqlite3.connect(path)
    other.execute("UPDATE version SET n = n + 1 WHERE id = 1")
    other.commit()
    other.close()


def test_a_commit_by_another_connection_moves_the_mark(wal_database: tuple[Path, Any]) -> None:
    path, connection = wal_database
    assert walmark.commit_mark(connection) is None  # not open yet: read first
    _read(connection)
    mark = walmark.commit_mark(connection)
    assert isinstance(mark, bytes)
    assert len(mark) == 48
    assert walmark.commit_mark(connection) == mark  # nothing committed meanwhile
    _bump_elsewhere(path)
    moved = walmark.commit_mark(connection)
    assert moved is not None
    assert moved != mark
    assert _read(connection) == 2
    assert walmark.commit_mark(connection) == moved  # a read commits nothing


def test_a_commit_by_another_process_moves_the_mark(wal_database: tuple[Path, Any]) -> None:
    path, connection = wal_database
    _read(connection)
    mark = walmark.commit_mark(connection)
    script = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        "c.execute('UPDATE version SET n = n + 1 WHERE id = 1'); c.commit()"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60)
    assert walmark.commit_mark(connection) != mark
    assert _read(connection) == 2


def test_this_connection_s_own_commit_moves_the_mark(wal_database: tuple[Path, Any]) -> None:
    _, connection = wal_database
    _read(connection)
    mark = walmark.commit_mark(connection)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE version SET n = 5 WHERE id = 1")
    assert walmark.commit_mark(connection) != mark


def test_no_mark_inside_a_transaction(wal_database: tuple[Path, Any]) -> None:
    # Uncommitted writes of this thread change nothing in the WAL-index: it must read.
    _, connection = wal_database
    _read(connection)
    connection.set_autocommit(False)
    connection.in_atomic_block = True  # as atomic() leaves it (this handler is not django.db's)
    try:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE version SET n = 9 WHERE id = 1")
        assert walmark.commit_mark(connection) is None
    finally:
        connection.in_atomic_block = False
        connection.rollback()
        connection.set_autocommit(True)
    assert walmark.commit_mark(connection) is not None
    connection.set_autocommit(False)  # a transaction outside atomic(): the same
    try:
        assert walmark.commit_mark(connection) is None
    finally:
        connection.rollback()
        connection.set_autocommit(True)


def test_a_new_connection_is_not_trusted_until_it_read(wal_database: tuple[Path, Any]) -> None:
    path, connection = wal_database
    _read(connection)
    assert walmark.commit_mark(connection) is not None
    connection.close()
    connection.connect()
    assert walmark.commit_mark(connection) is None  # opened since: the caller reads first
    _read(connection)
    assert walmark.commit_mark(connection) is not None


def test_a_wal_index_made_again_is_mapped_again(wal_database: tuple[Path, Any]) -> None:
    # Every connection closed: SQLite deletes the -shm file, and the next open makes a new one.
    # A mapping of the old file would never move again; the new connection maps the new file.
    path, connection = wal_database
    _read(connection)
    connection.close()
    shm = Path(str(path) + "-shm")
    assert not shm.exists()
    connection.connect()
    _read(connection)
    mark = walmark.commit_mark(connection)
    assert mark is not None
    _bump_elsewhere(path)
    assert walmark.commit_mark(connection) != mark


def test_a_database_not_in_wal_mode_gives_no_mark(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    setup = sqlite3.connect(path)
    setup.execute("CREATE TABLE version (id INTEGER PRIMARY KEY, n INTEGER)")
    setup.execute("INSERT INTO version VALUES (1, 1)")
    setup.commit()
    setup.close()
    # A WAL-index left from an earlier WAL period, initialized and never to move again.
    wal = sqlite3.connect(tmp_path / "wal.sqlite3")
    wal.execute("PRAGMA journal_mode=WAL")
    wal.execute("CREATE TABLE t (x)")
    wal.commit()
    Path(str(path) + "-shm").write_bytes((tmp_path / "wal.sqlite3-shm").read_bytes())
    wal.close()
    connection = _handler(path, journal="DELETE")["default"]
    try:
        _read(connection)
        assert walmark.commit_mark(connection) is None
    finally:
        connection.close()


def test_an_in_memory_database_gives_no_mark() -> None:
    connection = _handler(Path(":memory:"), journal="MEMORY")["default"]
    try:
        connection.ensure_connection()
        walmark.confirm(connection)
        assert walmark.commit_mark(connection) is None
    finally:
        connection.close()


def _held_descriptor(connection: Any) -> int:
    shm = getattr(connection, walmark._CONFIRMED)[2]
    assert shm is not None
    return int(shm.fd)


def test_a_header_being_written_gives_no_mark(wal_database: tuple[Path, Any], monkeypatch: Any) -> None:
    # The two copies of the header differ while a commit writes them: read the database.
    _, connection = wal_database
    _read(connection)
    held = _held_descriptor(connection)
    real = os.pread

    def torn(fd: int, size: int, offset: int) -> bytes:
        got = real(fd, size, offset)
        return got[:48] + b"\1" * (len(got) - 48) if fd == held else got

    monkeypatch.setattr(walmark.os, "pread", torn)
    assert walmark.commit_mark(connection) is None


def test_a_file_cut_short_gives_no_mark(wal_database: tuple[Path, Any], monkeypatch: Any) -> None:
    # What a truncated -shm reads as: less than both copies.
    _, connection = wal_database
    _read(connection)
    real = os.pread
    monkeypatch.setattr(walmark.os, "pread", lambda fd, size, offset: real(fd, size, offset)[:3])
    assert walmark.commit_mark(connection) is None


def test_a_connection_in_exclusive_locking_mode_gives_no_mark(wal_database: tuple[Path, Any]) -> None:
    # SQLite then keeps the WAL-index in the process's heap: a -shm file on disk is stale.
    path, _ = wal_database
    assert _mark_of_a_new_connection(path, first="PRAGMA locking_mode=EXCLUSIVE") is None


def test_a_forked_child_confirms_its_connections_again(wal_database: tuple[Path, Any]) -> None:
    _, connection = wal_database
    _read(connection)
    assert walmark.commit_mark(connection) is not None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: what its parent confirmed is not trusted here
        try:
            os.write(write_end, b"none" if walmark.commit_mark(connection) is None else b"mark")
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        answer = os.read(read_end, 16)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    assert answer == b"none"
    assert walmark.commit_mark(connection) is not None  # the parent's own is still trusted


def test_a_connection_per_request_is_not_checked(wal_database: tuple[Path, Any]) -> None:
    # CONN_MAX_AGE = 0 (Django's default): a check per connection would cost more than the read.
    path, _ = wal_database
    assert _mark_of_a_new_connection(path, max_age=0) is None


def test_a_begin_outside_atomic_gives_no_mark(wal_database: tuple[Path, Any]) -> None:
    # A transaction the driver holds open (autocommit still on for Django): its snapshot may be
    # older than the mark, which would then be paired with an old version.
    _, connection = wal_database
    _read(connection)
    connection.connection.execute("BEGIN")
    try:
        assert walmark.commit_mark(connection) is None
    finally:
        connection.connection.execute("ROLLBACK")
    assert walmark.commit_mark(connection) is not None


def test_the_wal_index_is_the_opened_file_s_after_a_change_of_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A relative NAME resolved again after the process changed directory would name another
    # database, here one with an initialized WAL-index that never moves.
    first, second = _two_folders_with_one_database_name(tmp_path)
    stale = sqlite3.connect(second / "db.sqlite3")  # keeps b's -shm initialized
    stale.execute("SELECT 1 FROM version").fetchall()
    monkeypatch.chdir(first)
    connection = _handler("db.sqlite3")["default"]
    try:
        connection.ensure_connection()
        monkeypatch.chdir(second)
        _read(connection)
        mark = walmark.commit_mark(connection)
        _bump_elsewhere(first / "db.sqlite3")
        assert walmark.commit_mark(connection) != mark
    finally:
        connection.close()
        stale.close()


# Where SQLite's unix VFS keeps its dead-man-switch lock in the -shm file: every process with
# the WAL-index open holds a shared lock on this byte; the first process to open a database
# that nobody holds truncates the file and builds the index again (os_unix.c, UNIX_SHM_DMS).
_DMS_BYTE = 128

_TRY_DMS = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(sys.argv[2]))
except OSError:
    print("held")
else:
    print("free")
"""


def _dms_lock(path: Path) -> str:
    """Whether any process holds the -shm file's dead-man-switch lock, asked from another one."""
    shm = str(path) + "-shm"
    found = subprocess.run(
        [sys.executable, "-c", _TRY_DMS, shm, str(_DMS_BYTE)], capture_output=True, text=True, check=True, timeout=60
    )
    return found.stdout.strip()


def test_taking_a_mark_leaves_sqlite_s_locks_in_place(wal_database: tuple[Path, Any]) -> None:
    # POSIX record locks belong to the process and go when any of its descriptors of the file
    # closes. A descriptor of the -shm opened and closed again by the mark would drop SQLite's
    # own locks of this process on it: its read locks (a checkpoint may then overwrite what a
    # reader of this process reads) and this lock, without which another process opening the
    # database truncates the file under this process's mapping (SIGBUS: the server dies).
    path, connection = wal_database
    with connection.cursor() as cursor:
        cursor.execute("SELECT n FROM version WHERE id = 1")
    assert _dms_lock(path) == "held"  # SQLite's, while the connection is open
    _read(connection)  # confirm(): the mark's own look at the file
    assert walmark.commit_mark(connection) is not None
    assert _dms_lock(path) == "held"
    _bump_elsewhere(path)  # another connection opens, commits and closes: the mark moves
    assert walmark.commit_mark(connection) is not None
    assert _dms_lock(path) == "held"


def test_a_connection_that_gives_no_mark_leaves_sqlite_s_locks_in_place(
    wal_database: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A later connection whose check fails takes the file's marks away (read the database)
    # but must not let go of what SQLite of this process holds open.
    path, connection = wal_database
    _read(connection)
    assert walmark.commit_mark(connection) is not None

    def busy(raw: Any, name: str) -> str:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(walmark, "_pragma", busy)
    assert _mark_of_a_new_connection(path) is None
    gc.collect()
    assert _dms_lock(path) == "held"
    assert walmark.commit_mark(connection) is not None  # the other connection's failure is its own


_READER = """
import sys, time
import django
from django.conf import settings
settings.configure(INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "mcp_tools"])
django.setup()
from django.db.utils import ConnectionHandler
from mcp_tools.models import walmark

database = {"ENGINE": "django.db.backends.sqlite3", "NAME": sys.argv[1], "CONN_MAX_AGE": 60}
connection = ConnectionHandler({"default": database})["default"]
marks = 0
end = None
while end is None or time.monotonic() < end:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM version")
    walmark.confirm(connection)
    marks += walmark.commit_mark(connection) is not None
    if end is None and marks:
        print("ready", flush=True)  # the other process starts now
        end = time.monotonic() + float(sys.argv[2])
print(marks)
"""

_OPENER = """
import sqlite3, sys, time
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    c = sqlite3.connect(sys.argv[1])
    c.execute("INSERT INTO version (n) VALUES (2)")
    c.commit()
    c.close()
"""


def test_a_process_taking_marks_outlives_other_processes_opening_the_database(tmp_path: Path) -> None:
    # Another process connecting again and again, each time alone in its own process: were
    # this process's SQLite locks gone, one of them would truncate the -shm file under this
    # process's mappings and the next read here would end it with SIGBUS (as it ended a server).
    path = tmp_path / "opened.sqlite3"
    _make_database(path)
    seconds = "3"
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(path), seconds], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert reader.stdout is not None
    try:
        assert reader.stdout.readline().strip() == "ready"  # it took a mark: its loop runs from now
        opener = subprocess.run([sys.executable, "-c", _OPENER, str(path), seconds], check=False, timeout=60)
        out, _ = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert reader.returncode == 0, f"the reader ended with {reader.returncode}"
    assert opener.returncode == 0
    assert int(out) > 0  # it did take marks


def test_two_connections_of_one_relative_name_keep_their_own_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same relative NAME opened from two directories: two databases. What the second one
    # confirms must not become the first one's marks (which would then never move).
    first, second = _two_folders_with_one_database_name(tmp_path)
    monkeypatch.chdir(first)
    a = _handler("db.sqlite3")["default"]
    b = _handler("db.sqlite3")["default"]
    try:
        _read(a)
        monkeypatch.chdir(second)
        _read(b)
        mark = walmark.commit_mark(a)
        assert mark is not None
        _bump_elsewhere(first / "db.sqlite3")
        assert walmark.commit_mark(a) != mark
    finally:
        a.close()
        b.close()
