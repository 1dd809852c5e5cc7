"""`make run`: the demo under uvicorn plus a real Celery worker (with beat) on the embedded broker.

Ctrl-C (or SIGTERM) stops both; if either exits, the other is stopped too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def main() -> int:
    host = os.environ.get("HOST", "127.0.0.1")
    port = os.environ.get("PORT", "8000")
    var = os.environ.get("MCP_VAR_DIR", "var")
    worker = subprocess.Popen(  # noqa: S603 - fixed argv of this interpreter
        [
            sys.executable, "-m", "celery", "-A", "project", "worker", "-B",
            "--schedule", os.path.join(var, "celerybeat-schedule"),
            "-P", "threads", "-c", os.environ.get("MCP_WORKER_CONCURRENCY", "4"), "--loglevel", "INFO",
        ]
    )  # fmt: skip
    server = subprocess.Popen(  # noqa: S603 - fixed argv of this interpreter
        [sys.executable, "-m", "uvicorn", "project.asgi:application", "--host", host, "--port", port]
    )
    children = (server, worker)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    interrupted = False
    try:
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGINT if child is server else signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    if interrupted:
        return 0
    print("run: a child process exited; stopped the other one", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
