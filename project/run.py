"""`make run`: the demo under uvicorn plus a real Celery worker (with beat) on the embedded broker.

The worker is supervised: if it dies (killed, out of memory), its whole process group (the
embedded beat included) is stopped and a new worker is started, with a log line; tasks it was
running are retried or failed by their heartbeat (TASK_WORKER_LOST). Ctrl-C (or SIGTERM) stops
the server and every worker process. If the server exits, the worker is stopped too.

The server runs in a process group of its own and gets exactly one signal from here: a terminal's
Ctrl-C reaches only this process, which passes it on once. (In the terminal's group the server
got Ctrl-C twice, the terminal's and this one's, and uvicorn takes a second one as "exit now":
it skipped the application's lifespan shutdown, where buffered audit rows are written, and
logged "ASGI 'lifespan' protocol appears unsupported".) uvicorn waits at most
``GRACEFUL_SECONDS`` for open connections, then runs that shutdown; this process waits for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

RESTART_DELAY_SECONDS = 1.0
# uvicorn's --timeout-graceful-shutdown: open connections get this long, then the lifespan
# shutdown runs (the audit rows); the server is killed only after SERVER_STOP_SECONDS.
GRACEFUL_SECONDS = 10
SERVER_STOP_SECONDS = GRACEFUL_SECONDS + 20


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
        [
            sys.executable, "-m", "uvicorn", "project.asgi:application", "--host", host, "--port", port,
            "--timeout-graceful-shutdown", str(GRACEFUL_SECONDS),
        ],
        process_group=0,  # Ctrl-C in the terminal reaches this process only: one signal for it
    )  # fmt: skip

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
            # The signal this process got (SIGINT for Ctrl-C), once: a graceful shutdown.
            server.send_signal(stopping[0] if stopping else signal.SIGTERM)
        _stop_group(worker)
        try:
            server.wait(timeout=SERVER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            log(f"the server did not stop within {SERVER_STOP_SECONDS} s; killing it")
            server.kill()
            server.wait()
    # A server that stopped on a signal (ours, or one sent to it directly) or cleanly is a clean stop.
    if stopping or server.returncode in (0, -signal.SIGINT, -signal.SIGTERM):
        log("stopped")
        return 0
    log("the server exited; stopped the worker")
    return 1


if __name__ == "__main__":
    sys.exit(main())
