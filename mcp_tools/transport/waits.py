"""What the async driver waits on for one POSTed request: a call's notifications before its
result (an answer that may become an SSE stream, H-7), and a working task's result (T11-10);
and what it need not wait on: a request served on the event loop's thread (``SERVE_ON_LOOP``)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

from django.http import HttpRequest

from .. import services, telemetry
from ..auth import get_auth_backend
from ..cancel import CancelFlag
from ..conf import mcp_settings
from ..notify.hub import StreamSlot, take_stream_slot
from ..protocol import sse
from ..protocol.jsonrpc import Message, Request
from ..protocol.negotiation import is_modern
from ..tasking import ResultWatch, StillWorking
from ..threads import NotOnLoop, run_on_loop, run_sync, start_handler, stores_in_process
from .replies import Reply
from .serve import serve_message
from .streams import too_many_streams

__all__ = ["await_task_result", "fits_loop", "serve_on_loop", "serve_streaming"]


def fits_loop(request: HttpRequest, message: Message) -> bool:
    """Whether ``message`` is worth serving on the event loop's thread: every store is in the
    process (``SERVE_ON_LOOP``) and so is the auth backend's work (``in_process``), its
    method's traits say so for its params (a tools/list, a plain call of an inline tool kind),
    it has no session (whose row a request may write) and asks for no stream of progress."""
    if not isinstance(message, Request) or not stores_in_process() or not get_auth_backend().in_process:
        return False
    traits = services.traits(message)
    if traits.fits_loop is None or "HTTP_MCP_SESSION_ID" in request.META or traits.needs_loop(message.params):
        return False
    return traits.fits_loop(message.params)


def serve_on_loop(request: HttpRequest, message: Request, can_stream: bool) -> Reply | None:
    """``message`` served on the event loop's thread, answered as :func:`serve_streaming` answers
    (notifications the handler sent, then its result, as an SSE stream); None when it needs
    more than the process after all (nothing was counted, run or audited): serve it again on a
    pool thread."""
    outbox = _Outbox(asyncio.get_running_loop())
    emit = outbox.items.append if can_stream else None
    try:
        reply = run_on_loop(serve_message, request, message, emit, CancelFlag(None))
    except NotOnLoop:
        return None
    if not outbox.items:
        return reply
    done: asyncio.Future[Reply] = outbox.loop.create_future()
    done.set_result(reply)
    return Reply(200, stream=lambda: _request_stream(outbox, done, None))


async def serve_streaming(request: HttpRequest, message: Request, can_stream: bool) -> Reply:
    """A request whose method may emit notifications before its result: JSON when none came
    first, else an SSE stream of them and then the result (H-7)."""
    # H-D8: a 2026-07-28 client that goes away cancels its call; H-16: a legacy one does not
    # (it cancels with notifications/cancelled), so its call runs to the end unheard.
    cancelled = CancelFlag(None)
    on_disconnect = cancelled.set if is_modern(message.params) else None
    outbox = _Outbox(asyncio.get_running_loop())
    work = start_handler(serve_message, request, message, outbox.emit if can_stream else None, cancelled)
    work.add_done_callback(outbox.wake)
    try:
        if not work.done():
            await outbox.wait()  # the result, or the first notification, whichever comes first
    except asyncio.CancelledError:
        if on_disconnect is not None:
            on_disconnect()
        raise
    if not outbox.items:
        return work.result()
    return Reply(200, stream=lambda: _request_stream(outbox, work, on_disconnect))


class _Outbox:
    """Notifications a tool call emits from its thread, handed over to the event loop."""

    __slots__ = ("items", "loop", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: deque[bytes] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def emit(self, data: bytes) -> None:  # in the handler's thread
        self.loop.call_soon_threadsafe(self._arrived, data)

    def _arrived(self, data: bytes) -> None:
        self.items.append(data)
        self.wake()

    def wake(self, _: object = None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def wait(self) -> None:
        self.waiter = self.loop.create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None


async def _request_stream(
    outbox: _Outbox, work: asyncio.Future[Reply], on_disconnect: Callable[[], None] | None
) -> AsyncGenerator[bytes, None]:
    counted = telemetry.stream_opened("response")
    try:
        while True:
            while outbox.items:
                yield sse.event(outbox.items.popleft())
            # Notifications are handed over before the result (one thread, FIFO callbacks), so
            # when the work is done, everything it emitted has been sent.
            if work.done():
                break
            await outbox.wait()
        reply = work.result()
        # A cancelled call ends its stream without a response (C-1).
        if reply.body:
            yield sse.event(reply.body)
    except (asyncio.CancelledError, GeneratorExit):
        if on_disconnect is not None:  # H-D8 (modern only; H-16)
            on_disconnect()
        raise
    finally:
        telemetry.stream_closed("response", counted)


@dataclass(frozen=True, slots=True)
class _ResultWait:
    """One tasks/result request waiting for its task, until ``wait_until`` (monotonic)."""

    request: HttpRequest
    message: Request
    wait_until: float
    watch: ResultWatch | None

    async def look(self) -> Reply:
        """One look at the task, in a pool thread: its result, or StillWorking."""
        return await run_sync(
            serve_message,
            self.request,
            self.message,
            None,
            CancelFlag(None),
            wait_until=self.wait_until,
            watch=self.watch,
        )


async def await_task_result(request: HttpRequest, message: Request, can_stream: bool) -> Reply:
    """T11-10: tasks/result waits for a working task on the event loop, not in a pool thread.

    Each look is one short trip to the thread pool; between looks the request holds nothing but
    a timer, and a client that goes away cancels the wait. When the task has something to send
    meanwhile (its requests for input, T11-11; status notifications) and the client accepts
    SSE, the answer becomes a stream carrying those, then the result. From its first look at a
    task still working until its answer, the wait holds one of the caller's stream slots
    (``MAX_STREAMS_PER_PRINCIPAL``), as a GET or listen stream does: one over the bound is 429.
    """
    wait_until = time.monotonic() + float(mcp_settings.TASK_RESULT_WAIT_SECONDS)
    wait = _ResultWait(request, message, wait_until, ResultWatch() if can_stream else None)
    delay = 0.02
    slot: StreamSlot | None = None
    try:
        while True:
            try:
                return await wait.look()
            except StillWorking as pending:
                if slot is None and pending.principal is not None:
                    slot = await run_sync(take_stream_slot, pending.principal)
                    if slot is None:
                        return too_many_streams(message.id)
                if pending.messages and wait.watch is not None:
                    held, slot = slot, None  # the stream gives it back when it ends
                    return _result_reply(wait, pending.messages, held)
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.5)
    finally:
        if slot is not None:
            slot.give_back()


def _result_reply(wait: _ResultWait, first: list[bytes], slot: StreamSlot | None) -> Reply:
    def close() -> None:
        if slot is not None:
            slot.give_back()

    def stream() -> AsyncGenerator[bytes, None]:
        return _result_stream(wait, first, close)

    return Reply(200, stream=stream, on_close=close)


async def _result_stream(
    wait: _ResultWait, first: list[bytes], close: Callable[[], None]
) -> AsyncGenerator[bytes, None]:
    """The rest of a tasks/result that went to SSE: what the task sends, then its result."""
    counted = telemetry.stream_opened("task_result")
    try:
        for data in first:
            yield sse.event(data)
        delay = 0.02
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.5)
            try:
                reply = await wait.look()
            except StillWorking as pending:
                for data in pending.messages:
                    yield sse.event(data)
                if pending.messages:
                    delay = 0.02  # an answer is on its way: look again soon
                continue
            if reply.body:
                yield sse.event(reply.body)
            return
    finally:
        telemetry.stream_closed("task_result", counted)
        close()
