"""A killed worker strands no task, on any broker, and `make run` supervises its worker (issue 13).

The Redis case is ``test_tasks_worker.py::test_worker_killed_mid_task_is_retried_by_a_new_worker``;
here the demo's embedded broker (kombu's SQLAlchemy transport on SQLite), which never redelivers a
message its worker fetched: only the task's heartbeat shows that its worker is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_tasks_worker import Raw, _poll, _start_export
from tests.support.servers import (
    ROOT,
    LiveServer,
    Worker,
    free_port,
    prepare_database,
    run_server,
    server_env,
    start_worker,
)

pytestmark = pytest.mark.e2e

LOST_AFTER = 2.0


@pytest.fixture(scope="module")
def sqlite_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str, Path]]:
    tmp = tmp_path_factory.mktemp("worker-loss")
    queue = f"mcp-loss-{uuid.uuid4().hex[:8]}"
    env = {
        "MCP_TASK_QUEUE": queue,  # no CELERY_BROKER_URL: the demo's sqla+sqlite broker in tmp
        "MCP_TASK_HEARTBEAT_SECONDS": "0.5",
        "MCP_TASK_LOST_AFTER_SECONDS": str(LOST_AFTER),
    }
    with run_server(tmp, extra_env=env) as server:
        assert "CELERY_BROKER_URL" not in server.env
        yield server, queue, tmp


def test_a_killed_worker_on_the_sqlite_broker_is_retried_by_a_new_worker(
    sqlite_stack: tuple[LiveServer, str, Path],
) -> None:
    server, queue, tmp = sqlite_stack
    worker: Worker = start_worker(server.env, tmp / "worker.log", queue=queue)
    try:
        client = Raw(server.url)
        client.initialize()
        task_id = _start_export(client, 6, running=True)
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait(timeout=10)
        killed_at = time.monotonic()
        worker = start_worker(server.env, tmp / "worker.log", queue=queue)
        final = _poll(
            lambda: client.post("tasks/get", {"taskId": task_id})["result"],
            lambda s: s["status"] != "working",
            timeout=LOST_AFTER + 30,
        )
        recovered = time.monotonic() - killed_at
        assert final["status"] == "completed", final
        result = client.post("tasks/result", {"taskId": task_id})["result"]
        assert result["content"][0]["text"] == "Report ready after 6 steps."
        print(f"sqlite broker: worker killed -> task completed on a new worker in {recovered:.1f} s")
        assert recovered < LOST_AFTER + 30
    finally:
        worker.stop()


def test_a_killed_worker_with_no_successor_fails_its_task_clearly(
    sqlite_stack: tuple[LiveServer, str, Path],
) -> None:
    """With TASK_MAX_ATTEMPTS spent, the heartbeat sweep on read fails the task with the message."""
    server, queue, tmp = sqlite_stack
    worker = start_worker(server.env, tmp / "worker-2.log", queue=queue)
    client = Raw(server.url)
    client.initialize()
    task_id = _start_export(client, 20, running=True)
    code = f"from mcp_tools.models import McpTask; McpTask.objects.filter(pk={task_id!r}).update(attempts=3)"
    server.manage("shell", "-c", code)  # the last attempt allowed (TASK_MAX_ATTEMPTS is 3)
    os.kill(worker.process.pid, signal.SIGKILL)
    worker.process.wait(timeout=10)
    final = _poll(
        lambda: client.post("tasks/get", {"taskId": task_id})["result"],
        lambda s: s["status"] != "working",
        timeout=LOST_AFTER + 15,
    )
    assert final["status"] == "failed"
    assert final["statusMessage"] == "The worker running this task stopped before it finished."


def _processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, the fields of /proc/<pid>/stat after the command name) of every process."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                yield int(entry.name), (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue


def _children(pid: int) -> list[int]:
    return [child for child, fields in _processes() if int(fields[1]) == pid]


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _group(pgid: int) -> list[int]:
    """The live (not zombie) members of process group ``pgid``."""
    return [pid for pid, fields in _processes() if int(fields[2]) == pgid and fields[0] != "Z"]


def _wait(what: str, check: object, timeout: float = 60) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()  # type: ignore[operator]
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_make_run_restarts_a_dead_worker_and_stops_every_child(tmp_path: Path) -> None:
    """`make run` (project.run): SIGKILL its worker; the worker's group (embedded beat included)
    is stopped, a new worker starts with a log line; SIGTERM stops every process it started."""
    env = server_env(tmp_path, {"PORT": str(free_port()), "HOST": "127.0.0.1"})
    prepare_database(env)
    log_path = tmp_path / "run.log"
    with log_path.open("wb") as log:
        run = subprocess.Popen(
            [sys.executable, "-m", "project.run"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:

        def worker_group() -> int | None:
            workers = [p for p in _children(run.pid) if "celery" in _cmdline(p)]
            # The worker and its embedded beat: the group has both once the worker is up.
            return workers[0] if workers and len(_group(workers[0])) >= 2 else None

        first = int(_wait("the first worker and its beat", worker_group))  # type: ignore[call-overload]
        members = _group(first)
        os.kill(first, signal.SIGKILL)
        _wait("the restart log line", lambda: b"starting a new one" in log_path.read_bytes())
        _wait("the old worker's group (beat included) to be gone", lambda: not _group(first), timeout=30)
        second = int(_wait("a new worker", lambda: (w := worker_group()) and w != first and w))  # type: ignore[call-overload]
        assert second != first
        assert len(members) >= 2
        assert b"Celery worker restarted" in log_path.read_bytes()
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=40) == 0
        _wait("every process of the new worker's group to stop", lambda: not _group(second), timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid in _children(run.pid):
            os.kill(pid, signal.SIGKILL)


def test_make_run_is_quiet_while_idle_and_ctrl_c_exits_0(tmp_path: Path) -> None:
    """Issue 26: `make run` idle prints none of beat's housekeeping lines (the lost-task sweep
    runs every 10 s), and Ctrl-C (SIGINT to the whole foreground group, as a terminal sends it:
    the runner and uvicorn together) stops everything with exit status 0."""
    env = server_env(tmp_path, {"PORT": str(free_port()), "HOST": "127.0.0.1"})
    prepare_database(env)
    log_path = tmp_path / "run.log"
    with log_path.open("wb") as log:
        run = subprocess.Popen(
            [sys.executable, "-m", "project.run"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, as `make run` in a terminal
        )
    try:
        _wait("the worker to be ready", lambda: b"ready." in log_path.read_bytes())
        time.sleep(12)  # past the first sweep (10 s) and the first approval expiry (30 s in the demo: not reached)
        os.killpg(run.pid, signal.SIGINT)
        assert run.wait(timeout=40) == 0
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid in _children(run.pid):
            os.kill(pid, signal.SIGKILL)
    text = log_path.read_text(errors="replace")
    assert "Sending due task" not in text, text[-2000:]
    assert "sweep_lost_tasks[" not in text, text[-2000:]
    assert "Traceback" not in text, text[-2000:]
