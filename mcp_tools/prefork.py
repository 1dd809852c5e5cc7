"""Before a server forks its workers from a loaded application (gunicorn ``--preload``): the C
heap's free chunks are taken, so that the workers' first allocations do not copy the parent's pages.

A worker shares the parent's memory until it writes to a page; then that page is its own. glibc's
``malloc`` serves a small request from a free chunk of the right size wherever it lies in the heap,
and the parent's start-up leaves about 2 MiB of them scattered over its ~20 MiB heap (the demo). A
worker's first allocations (SQLite reading the schema when it opens its connection, the first
requests' objects) land in those chunks one by one and each copies the page it is on: opening the
database dirtied 3.4 MiB of a forked child, 1.2 MiB once the chunks were taken first.

:func:`take_free_heap_at_fork` (``EndpointFront.warm()`` calls it) registers, once per process, a
hook that runs before the process's first ``os.fork()``: it allocates the free chunks of the main
heap and never frees them, so that what the workers allocate comes from the top of the heap, on
pages of their own, instead. Only on glibc (``mallinfo2``, glibc 2.33), only in the main thread
(which allocates from the main heap), and never more than the free bytes there were: elsewhere
it does nothing. A process that never forks only pays for the registration.
"""

from __future__ import annotations

import os
import platform
import threading
from typing import Any

__all__ = ["take_free_heap_at_fork"]

# Request sizes, largest first: a larger free chunk is split, its rest taken by the next size.
_SIZES = (65536, 16384, 4096, 1024, 256, 64, 16)
_MALLINFO2_FIELDS = (
    "arena",
    "ordblks",
    "smblks",
    "hblks",
    "hblkhd",
    "usmblks",
    "fsmblks",
    "uordblks",
    "fordblks",
    "keepcost",
)
# Whether the hook is registered, whether it ran, and how many chunks it took: they are never
# freed, so their addresses are not kept (a growing list would itself be reallocated at the top).
_state: dict[str, Any] = {"registered": False, "done": False, "taken": 0}


def take_free_heap_at_fork() -> None:
    """Take the main heap's free chunks just before this process first forks (see the module)."""
    if not _state["registered"]:
        _state["registered"] = True
        os.register_at_fork(before=_before_fork)


def _before_fork() -> None:
    if _state["done"] or threading.current_thread() is not threading.main_thread():
        return
    _state["done"] = True
    try:
        libc = _glibc()
    except (OSError, AttributeError):  # not glibc, or older than 2.33: nothing to take
        return
    _take(libc)


def _glibc() -> Any:
    if platform.libc_ver()[0] != "glibc":
        raise OSError("not glibc")
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2_FIELDS]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.sbrk.restype = ctypes.c_void_p
    libc.sbrk.argtypes = [ctypes.c_ssize_t]
    return libc


def _take(libc: Any) -> None:
    """Allocate from the free chunks, size by size, until a request comes from the top chunk
    (the heap's end, ``sbrk(0)``, less its free ``keepcost``), which is given back. A size the
    top could not hold is skipped: served from the top, it would have grown the heap."""
    info = libc.mallinfo2()
    left = info.fordblks - info.keepcost  # free bytes in chunks, every arena's, the top apart
    top, room = _top(libc)
    for size in _SIZES:
        while left >= size and size < room:
            address = libc.malloc(size)
            if not address:
                return
            if address >= top:  # from the top: no free chunk of this size is left
                libc.free(address)
                top, room = _top(libc)
                break
            _state["taken"] += 1
            left -= size


def _top(libc: Any) -> tuple[int, int]:
    """Where the main heap's top chunk starts, and its size."""
    room = int(libc.mallinfo2().keepcost)
    return int(libc.sbrk(0)) - room, room
