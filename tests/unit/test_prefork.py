"""mcp_tools.prefork: before the first fork, the main heap's free chunks are taken (glibc), none
taken from the top of the heap, once per process; a process that forks again takes nothing more.

A fresh interpreter (a subprocess) is where the heap's free chunks are known: freeing every other
one of 2,000 blocks of 600 bytes (above Python's small-object limit, so from glibc's heap) leaves
about 600 KB of them between blocks still in use.
"""

from __future__ import annotations

import platform

import pytest

from tests.support.servers import run_script

SCRIPT = r"""
import json, os
from mcp_tools import prefork

libc = prefork._glibc()
blocks = [bytes(600) + bytes([i % 256]) for i in range(2000)]
del blocks[::2]  # 1,000 free chunks between the 1,000 kept
prefork.take_free_heap_at_fork()
prefork.take_free_heap_at_fork()  # registered once
read, write = os.pipe()
before = libc.mallinfo2()
seen = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:  # the heap as the hook left it
        after = libc.mallinfo2()
        os.write(write, f"{after.fordblks - after.keepcost} {after.arena}\n".encode())
        os._exit(0)
    os.waitpid(pid, 0)
    seen.append([prefork._state["taken"], *map(int, os.read(read, 100).split())])
print(json.dumps({"before": [before.fordblks - before.keepcost, before.arena], "forks": seen}))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the heap is glibc's")
def test_the_first_fork_takes_the_free_chunks_and_no_more() -> None:
    report = run_script(SCRIPT, timeout=60)
    free_before, heap_before = report["before"]
    (taken, free_after, heap_after), (taken_again, _, heap_again) = report["forks"]
    assert taken >= 500, report  # the 1,000 freed blocks, split by the sizes requested
    assert free_after < free_before - 500 * 600, report
    assert heap_after == heap_before, report  # nothing taken from the top: the heap did not grow
    assert (taken_again, heap_again) == (taken, heap_after), report  # the second fork takes nothing


def test_before_a_fork_elsewhere_than_the_main_thread_nothing_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from mcp_tools import prefork

    monkeypatch.setattr(prefork, "_state", {"registered": True, "done": False, "taken": 0})
    thread = threading.Thread(target=prefork._before_fork)
    thread.start()
    thread.join()
    assert prefork._state == {"registered": True, "done": False, "taken": 0}
