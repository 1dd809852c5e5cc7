"""`make run`: the demo under uvicorn plus a real Celery worker (with beat) on the embedded broker.

The worker is supervised: if it dies (killed, out of memory), its whole process group (the
embedded beat included) is stopped and a new worker is started, with a log line; tasks it was
running are retried or failed by their heartbeat (TASK_WORKER_LOST). Ctrl-C (or SIGTERM) stops
the server and every worker process. If the server exits, the worker is stopped too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

RESTART_DELAY_SECONDS = 1.0


def _worker_command(var: str) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "project", "worker", "-B",
        "--schedule", os.path.join(var, "celerybeat-schedule"),
        "-P", "threads", "-c", os.environ.get("MCP_WORKER_CONCURRENCY", "4"), "--loglevel", "INFO",
    ]  # fmt: skip


def _start_worker(var: str) -> subprocess.Popen[bytes]:
    # Its own process group: the worker, its embedded beat and any child they start are stopped
    # together, so a killed worker leaves no orphaned beat behind.
    return subprocess.Popen(_worker_command(var), start_new_session=True)  # noqa: S603 - fixed argv


def _stop_group(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGTERM the process group of ``process``, SIGKILL what is left after ``timeout``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _group_alive(process.pid):
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def log(message: str) -> None:
    print(f"run: {message}", file=sys.stderr, flush=True)


def main() -> int:
    host = os.environ.get("HOST", "127.0.0.1")
    port = os.environ.get("PORT", "8000")
    var = os.environ.get("MCP_VAR_DIR", "var")
    worker = _start_worker(var)
    server = subprocess.Popen(  # noqa: S603 - fixed argv of this interpreter
        [sys.executable, "-m", "uvicorn", "project.asgi:application", "--host", host, "--port", port]
    )

    stopping: list[int] = []

    def stop(signum: int, frame: object) -> None:
        # The first Ctrl-C (or SIGTERM) stops everything; more of them while the processes are
        # stopping are ignored, so a second Ctrl-C cannot cut the shutdown short with a traceback.
        if not stopping:
            stopping.append(signum)
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        while server.poll() is None:
            if worker.poll() is not None:
                log(f"the Celery worker (pid {worker.pid}) exited with {worker.returncode}; starting a new one")
                _stop_group(worker, timeout=5)  # its embedded beat and children too
                time.sleep(RESTART_DELAY_SECONDS)
                worker = _start_worker(var)
                log(f"Celery worker restarted (pid {worker.pid})")
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
        _stop_group(worker)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    # Ctrl-C in a terminal reaches the server too, which may have exited before this process
    # saw its own signal: a server that stopped on a signal (or cleanly) is a clean stop.
    if stopping or server.returncode in (0, -signal.SIGINT, -signal.SIGTERM):
        log("stopped")
        return 0
    log("the server exited; stopped the worker")
    return 1


if __name__ == "__main__":
    sys.exit(main())
