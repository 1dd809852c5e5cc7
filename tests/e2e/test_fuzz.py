"""Fuzzing the MCP endpoint of a live server (issue 13): thousands of odd requests, no bad answer.

Hypothesis draws client messages from the official schema.json of every revision (see
tests/support/fuzz_strategies.py); each round then sends a few hundred requests built from them and
from their mutations: wrong types, missing and extra fields, huge and deep values, odd unicode,
odd ids, broken bodies, bad headers, unknown and deleted sessions, forged cursors, batches.
Every answer is held to tests/support/fuzz_checks.py: no 5xx, no hang, every JSON-RPC message valid
for the negotiated revision, no internals, every fresh request answered, nothing in the log.
Failures are collected, not raised one by one: the report lists each distinct failure once,
with the smallest request that showed it. The same requests go to the demo on SQLite and on
PostgreSQL, which refuses what SQLite takes (NUL in text and JSON): on PostgreSQL the seed found
7 distinct failures before ``mcp_tools.storable``.

The suite (and CI) runs one fixed seed, ``FIXED_SEED``, so the same requests go out on every run
and a failure is never a matter of luck; ``make fuzz`` tries fresh seeds for as long as asked
(tests/support/fuzz_loop.py). A run is bounded by a request count, not by time: every request the
seed defines is sent, in the same order, or the test fails (``MCP_FUZZ_BUDGET`` is only the
limit past which that counts as a failure). Replay a run exactly with
``MCP_FUZZ_SEED=<seed> MCP_FUZZ_REQUESTS=<n> make fuzz-replay`` (both printed at the start):
the fuzzer times nothing itself (a call deferred after a cancellation is placed by step count,
not by the clock) and each step draws from its own random stream, (seed, step). What differs
between two runs is what the server makes up (session ids, cursors, task ids, and the fuzzer's
forgeries of them), and an answer that depends on the server's clock (a task with a 1 s ttl
listed or expired) changes only the request that uses it, not every later one.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.support import external_services
from tests.support.fuzz_checks import (
    Problem,
    Sent,
    check_exchange,
    decode_messages,
    id_key,
    ids_in_body,
    log_problems,
    valid_request_id,
)
from tests.support.fuzz_strategies import (
    LEGACY,
    MAX_BODY,
    MODERN,
    SUPPORTED,
    Drawn,
    broken_body,
    deep_value,
    draw_pool,
    encode,
    huge_value,
    json_value,
    mutate,
    odd_header_value,
    odd_id,
    odd_string,
    schema_definitions,
)
from tests.support.servers import LiveServer, run_server

pytestmark = pytest.mark.e2e

FIXED_SEED = 20261125  # the suite's seed; a seed that found a bug becomes a test of its own (README)
SEED = int(os.environ.get("MCP_FUZZ_SEED") or FIXED_SEED)
REQUESTS = int(os.environ.get("MCP_FUZZ_REQUESTS") or 10_000)
EXAMPLES_PER_DEFINITION = 3  # messages Hypothesis draws from each schema definition
TIMEOUT = 10.0  # seconds one request may take, streams included
BUDGET = float(os.environ.get("MCP_FUZZ_BUDGET") or 240)  # stop sending after this (pytest-timeout is 300 s)

SERVER_ENV = {
    "MCP_RATE_LIMIT": "off",  # every call reaches its handler
    "MCP_SSE_MAX_SECONDS": "0.2",  # GET and listen streams end quickly
    "MCP_SSE_KEEPALIVE_SECONDS": "0.05",
    "MCP_PAGE_SIZE": "4",  # tools/list has several pages, so there are cursors to forge
}

JSON_CT = ("Content-Type", "application/json")
ACCEPT_BOTH = ("Accept", "application/json, text/event-stream")
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
TASKS_EXT = "io.modelcontextprotocol/tasks"
NAME_PARAM = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
SLOW_TOOLS = ("build_report", "export_archive")  # 0.3 and 0.5 s per step when run inline
SLEEPY_TOOLS = ("test_tool_with_progress", "test_tool_with_logging")  # 0.15 s each (SSE answers)
LATEST_LEGACY = "2025-11-25"
# The server keeps a cancellation of an id that is not (yet) in flight for 2 s, in case it
# overtook its request on the way to another process (C-1, mcp_tools/cancel.py): a request sent
# within that window after a cancellation of its id may go unanswered. Later ones may not.
CANCEL_GRACE = 2.5
# A call deferred after the cancellation of its id goes out this many steps (scenarios, mostly
# one request each) later, and no sooner than CANCEL_GRACE + 0.5 s: the loop waits when it is
# faster. Counted in steps, not seconds, so where it lands does not depend on the machine's speed.
DEFER_STEPS = 1000
_PLAIN_HEADER = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$")


def good_arguments(rng: random.Random, tool: str) -> dict[str, Any]:
    """Arguments each demo tool accepts."""
    if tool == "echo":
        return {"text": rng.choice(("hello", odd_string(rng)))}
    if tool == "add":
        return {"a": rng.choice((1, -2.5, 1e308, 2**53 + 1)), "b": rng.choice((2, 0.1, -1e308, 0))}
    if tool == "get_weather":
        return {"city": rng.choice(("Paris", "tokyo", "Lima", "Atlantis", odd_string(rng) or "x"))}
    if tool == "color_swatch":
        return {"color": rng.choice(("red", "green", "blue")), "size": rng.randrange(1, 65)}
    if tool in SLOW_TOOLS:
        return {"steps": 1}
    if tool == "json_schema_2020_12_tool":
        return {"name": odd_string(rng), "contactMethod": "email", "email": "a@b.example", "address": {"city": "x"}}
    return {}


def tame(message: Any) -> Any:
    """Keep calls of the slow demo tools to one step, so they cannot pass for a hang."""
    items = message if isinstance(message, list) else [message]
    for item in items:
        params = item.get("params") if isinstance(item, dict) else None
        if isinstance(params, dict) and params.get("name") in SLOW_TOOLS and isinstance(params.get("arguments"), dict):
            steps = params["arguments"].get("steps")
            if steps is None or (isinstance(steps, int | float) and not isinstance(steps, bool) and steps >= 1):
                params["arguments"]["steps"] = 1
    return message


def is_modern_message(message: Any) -> bool:
    """V-2: a request carrying the 2026-07-28 ``_meta`` protocol version is modern."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_VERSION in meta


def header_text(value: str) -> str:
    """A routing header value: plain when it is visible ASCII, else the base64 sentinel (H-D6)."""
    if _PLAIN_HEADER.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8", "surrogatepass")).decode() + "?="


@dataclass
class Context:
    """Where a request is sent from: a legacy session (live, deleted or unknown), modern, or nowhere."""

    kind: str  # "session", "deleted", "unknown", "modern", "none"
    rev: str | None = None
    session: str | None = None

    def describe(self) -> str:
        if self.kind == "session":
            return f"in a live {self.rev} session (initialize + notifications/initialized first)"
        if self.kind == "deleted":
            return f"with the id of a {self.rev} session ended by DELETE"
        if self.kind == "unknown":
            return "with an Mcp-Session-Id the server never issued"
        if self.kind == "modern":
            return "as a 2026-07-28 request (no session)"
        return "without a session"


@dataclass
class Failure:
    problem: Problem
    sent: Sent
    status: int | None
    answer: bytes
    context: str
    before: list[Sent]
    count: int = 1

    @property
    def size(self) -> int:
        return len(self.sent.body) + sum(len(str(v)) for _, v in self.sent.headers)


@dataclass
class Answer:
    status: int
    headers: httpx.Headers
    body: bytes
    messages: list[Any]


class Fuzzer:
    """Sends requests one at a time over one keep-alive connection and checks every answer."""

    def __init__(self, server: LiveServer, run_seed: int) -> None:
        self.server = server
        self.client = httpx.Client(timeout=httpx.Timeout(TIMEOUT))
        self.seed = run_seed
        self.rng = random.Random(run_seed)
        self.count = 0
        self.step = 0  # scenarios begun by run(): each draws from its own stream, (seed, step)
        self.failures: dict[tuple[str, str], Failure] = {}
        self.sessions: dict[str, list[str]] = {rev: [] for rev in LEGACY}
        self.deleted: list[tuple[str, str]] = []
        self.used: dict[str, set[str]] = defaultdict(set)
        self.cancels: dict[str, dict[str, tuple[float, Sent]]] = defaultdict(dict)
        # requests due after a cancellation: (due request count, due time, context, call)
        self.later: list[tuple[int, float, Context, dict[str, Any]]] = []
        self.pool: list[Drawn] = []
        self.cursors: dict[str, list[str]] = {"tools/list": [], "tasks/list": []}
        self.tools: list[str] = []
        self.tasks: list[str] = []  # working (no worker runs here): never ask tasks/result for these
        self.done_tasks: list[str] = []  # cancelled: tasks/result answers at once
        self.serial = 0
        self.log_offset = 0
        self.started = time.monotonic()
        self.stats: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()  # time spent per scenario, checks included
        self.loop_seconds = 0.0  # time spent sending (the rest is drawing the pool, and setup)
        self.waited = 0.0  # of which waiting for a deferred call's grace time
        # With trace=True, every request as sent, the values the server made up (session ids,
        # cursors, task ids) replaced by the order they were learnt in: two runs of a seed match.
        self.trace: list[str] | None = None
        self.issued: dict[str, str] = {}

    # ----------------------------------------------------------------------- sending

    def time_left(self) -> bool:
        return time.monotonic() - self.started < BUDGET and self.server.process.poll() is None

    def send(self, sent: Sent, context: str = "") -> Answer | None:
        has_body = bool(sent.body) or sent.method in ("POST", "PUT", "PATCH")
        try:
            url = self.server.base_url + sent.path
            request = httpx.Request(sent.method, url, headers=sent.headers, content=sent.body if has_body else None)
        except (UnicodeError, ValueError, TypeError):
            return None  # not sendable as a header: nothing went on the wire
        started = time.monotonic()
        problems: list[Problem] = []
        answer = None
        try:
            response = self.client.send(request, stream=True)
            try:
                chunks = []
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() - started > TIMEOUT:
                        raise httpx.ReadTimeout("the answer was still streaming")
                body = b"".join(chunks)
            finally:
                response.close()
            content_type = response.headers.get("content-type", "")
            problems += check_exchange(sent, response.status_code, content_type, body)
            messages, _ = decode_messages(content_type, body)
            answer = Answer(response.status_code, response.headers, body, messages)
        except httpx.TimeoutException as exc:
            problems.append(Problem("hang", sent.scenario, f"no complete answer within {TIMEOUT:g} s ({exc})"))
        except httpx.LocalProtocolError:
            return None  # h11 refused to send it: nothing went on the wire
        except httpx.TransportError as exc:
            problems.append(Problem("connection", type(exc).__name__, str(exc)[:200]))
        self.count += 1
        if self.trace is not None:
            self.trace.append(self.fingerprint(sent))
        self.stats[sent.scenario] += 1
        self.seconds[sent.scenario.split(" ")[0]] += time.monotonic() - started
        if answer is not None:
            self.stats[f"HTTP {answer.status}"] += 1
        problems += self.log_since_last()
        for problem in problems:
            self.record(problem, sent, answer, context)
        return answer

    def remember(self, value: str) -> None:
        """A value the server made up, for the trace."""
        if self.trace is not None and len(value) >= 8:
            self.issued.setdefault(value, f"<issued {len(self.issued)}>")

    def fingerprint(self, sent: Sent) -> str:
        def plain(value: str | bytes) -> str:
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            text = text.replace(self.server.base_url.removeprefix("http://"), "<server address>")
            for issued, name in sorted(self.issued.items(), key=lambda item: -len(item[0])):
                text = text.replace(issued, name)
            return text

        headers = " ".join(f"{name}={plain(value)!r}" for name, value in sent.headers)
        return f"{sent.scenario} | {sent.method} {sent.path} | {headers} | {plain(sent.body)!r}"

    def log_since_last(self) -> list[Problem]:
        size = self.server.log_path.stat().st_size
        if size == self.log_offset:
            return []
        with self.server.log_path.open("rb") as log:
            log.seek(self.log_offset)
            text = log.read().decode(errors="replace")
        self.log_offset = size
        return log_problems(text)

    def record(self, problem: Problem, sent: Sent, answer: Answer | None, context: str) -> None:
        before: list[Sent] = []
        if problem.kind == "no response":
            session = sent.header("mcp-session-id") or ""
            before = [self.cancels[session][key][1] for key in sent.must_answer if key in self.cancels[session]]
        status = answer.status if answer is not None else None
        body = answer.body if answer is not None else b""
        failure = Failure(problem, sent, status, body, context, before)
        known = self.failures.get(problem.signature)
        if known is None:
            self.failures[problem.signature] = failure
            return
        failure.count = known.count + 1
        # The smallest example, preferring one whose history (an earlier cancellation) is known.
        if (not failure.before, failure.size) < (not known.before, known.size):
            self.failures[problem.signature] = failure
        else:
            known.count += 1

    # ----------------------------------------------------------------------- building requests

    def fresh_id(self) -> Any:
        self.serial += 1
        roll = self.rng.random()
        if roll < 0.6:
            return self.serial
        if roll < 0.8:
            return f"r-{self.serial}"
        if roll < 0.9:
            return -self.serial if self.rng.random() < 0.5 else 2**62 + self.serial
        if roll < 0.97:  # odd text, but a valid id: no lone surrogates (a JSON parser may refuse them)
            text = "".join(c for c in odd_string(self.rng)[:200] if not 0xD800 <= ord(c) <= 0xDFFF)
            return f"{text}#{self.serial}"
        return "L" * self.rng.choice((1_000, 20_000, 200_000)) + str(self.serial)

    def context(self, rev: str | None = None, *, live: float = 0.9) -> Context:
        """A legacy context for ``rev`` (any legacy revision when None): mostly a live session."""
        rev = rev or self.rng.choice(LEGACY)
        roll = self.rng.random()
        if roll < live and self.sessions[rev]:
            return Context("session", rev, self.rng.choice(self.sessions[rev]))
        deleted = [sid for r, sid in self.deleted if r == rev]
        if roll < live + (1 - live) / 2 and deleted:
            return Context("deleted", rev, self.rng.choice(deleted))
        if self.rng.random() < 0.7:
            return Context("unknown", rev, self.rng.choice((f"{self.rng.getrandbits(128):032x}", "0", "x" * 300)))
        return Context("none", rev)

    def version_header(self, ctx: Context) -> list[tuple[str, str | bytes]]:
        """What a legacy client sends after initialize: every revision but 2025-03-26 names itself."""
        return [("MCP-Protocol-Version", ctx.rev)] if ctx.rev is not None and ctx.rev != "2025-03-26" else []

    def headers_for(self, ctx: Context, message: Any) -> list[tuple[str, str | bytes]]:
        headers: list[tuple[str, str | bytes]] = [JSON_CT, ACCEPT_BOTH]
        if ctx.kind == "modern" or (ctx.kind != "session" and is_modern_message(message)):
            headers += self.modern_headers(message)
            return headers
        if ctx.session is not None:
            headers.append(("Mcp-Session-Id", ctx.session))
        return headers + self.version_header(ctx)

    def modern_headers(self, message: Any) -> list[tuple[str, str | bytes]]:
        headers: list[tuple[str, str | bytes]] = []
        params = message.get("params") if isinstance(message, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(META_VERSION) if isinstance(meta, dict) else None
        headers.append(("MCP-Protocol-Version", header_text(version) if isinstance(version, str) else MODERN))
        method = message.get("method") if isinstance(message, dict) else None
        if isinstance(method, str):
            headers.append(("Mcp-Method", header_text(method)))
            key = NAME_PARAM.get(method)
            if key and isinstance(params, dict) and isinstance(params.get(key), str):
                headers.append(("Mcp-Name", header_text(params[key])))
            arguments = params.get("arguments") if isinstance(params, dict) else None
            if method == "tools/call" and isinstance(arguments, dict):
                city = arguments.get("city")
                if isinstance(city, str | int | bool) and params.get("name") == "get_weather":
                    value = json.dumps(city) if isinstance(city, bool) else str(city)
                    headers.append(("Mcp-Param-City", header_text(value)))
        return headers

    def modern_meta(self, extension: bool | None = None) -> dict[str, Any]:
        if extension is None:
            extension = self.rng.random() < 0.3
        caps: dict[str, Any] = {"extensions": {TASKS_EXT: {}}} if extension else {}
        meta: dict[str, Any] = {META_VERSION: MODERN, META_CAPS: caps}
        if self.rng.random() < 0.2:
            meta["io.modelcontextprotocol/logLevel"] = self.rng.choice(("debug", "error", "loud", 3))
        if self.rng.random() < 0.1:
            meta["progressToken"] = self.rng.choice((1, "p", odd_id(self.rng)))
        return meta

    def request(self, method: str, params: dict[str, Any] | None = None, *, modern: bool = False) -> dict[str, Any]:
        params = dict(params or {})
        if modern:
            params["_meta"] = {**self.modern_meta(), **params.get("_meta", {})}
        return {"jsonrpc": "2.0", "id": self.fresh_id(), "method": method, "params": params}

    def version_for(self, decoded: Any, header: str | None, session_rev: str | None, *, post: bool = False) -> str:
        """The revision whose schema the answer must follow: what this request negotiated.

        A well-formed message with the 2026-07-28 ``_meta`` fields is modern (V-2); an initialize
        answers in the revision it negotiates; a request naming a live session speaks that
        session's revision; anything else the ``MCP-Protocol-Version`` header's, or 2025-03-26
        without one (the 2025-06-18 transport rules). Where the answer can only be an error whose
        id cannot be read, and it comes before the session is looked up (a POST body that is not
        JSON, not a well-formed request, or a batch that is empty or holds an initialize), it
        follows the header: the server reads no session for a body it cannot serve. (A live
        session tolerates another legacy revision's header, L-13: what it serves follows the
        session.)
        """
        well_formed = _is_request(decoded) or _is_notification(decoded)
        served_batch = (
            isinstance(decoded, list)
            and bool(decoded)
            and not any(isinstance(item, dict) and item.get("method") == "initialize" for item in decoded)
        )
        if post and not (_is_request(decoded) or served_batch):
            session_rev = None
        if well_formed and is_modern_message(decoded) and decoded["params"]["_meta"][META_VERSION] == MODERN:
            return MODERN
        if _is_request(decoded) and decoded["method"] == "initialize":
            params = decoded.get("params") or {}
            return params.get("protocolVersion") if params.get("protocolVersion") in LEGACY else LATEST_LEGACY
        if session_rev is not None:
            return session_rev
        return header if header in SUPPORTED else "2025-03-26"

    def bare(
        self, method: str, headers: list[tuple[str, str | bytes]], scenario: str, body: bytes = b"", decoded: Any = None
    ) -> Sent:
        """A request with exactly these headers, and the revision its answer follows."""
        versions = [v for k, v in headers if k.lower() == "mcp-protocol-version"]
        header = versions[0].strip() if len(versions) == 1 and isinstance(versions[0], str) else None
        sessions = [v for k, v in headers if k.lower() == "mcp-session-id"]
        live = {sid: rev for rev, sids in self.sessions.items() for sid in sids}
        session_rev = live.get(sessions[0]) if len(sessions) == 1 and isinstance(sessions[0], str) else None
        version = self.version_for(decoded, header, session_rev, post=method == "POST")
        return Sent(method, headers, body, version, scenario=scenario)

    def post(
        self,
        ctx: Context,
        message: Any,
        scenario: str,
        *,
        body: bytes | None = None,
        headers: list[tuple[str, str | bytes]] | None = None,
        path: str = "/mcp",
    ) -> Answer | None:
        """POST one message (or raw body) from ``ctx`` and keep the session bookkeeping."""
        message = tame(message)
        raw = encode(message, self.rng) if body is None else body
        # The body as the server reads it: parsed with the server's JSON library, since RFC 8259
        # leaves lone surrogates, numbers beyond 64 bits and nesting depth to the parser.
        try:
            decoded: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            decoded = None
        if headers is None:
            headers = self.headers_for(ctx, message)
        sent = self.bare("POST", headers, scenario, raw, decoded)
        sent.path = path
        session = sent.header("mcp-session-id")
        if isinstance(decoded, dict | list):
            sent.request_ids = ids_in_body(decoded)
            items = decoded if isinstance(decoded, list) else [decoded]
            fresh_scope = session if ctx.kind == "session" else None
            for item in items:
                if not _is_request(item):
                    continue
                key = id_key(item["id"])
                if fresh_scope is not None and key in self.used[fresh_scope]:
                    continue  # a reused id: the spec forbids it (L-11), the answer is not ours to expect
                cancelled_at = self.cancels[session or ""].get(key, (-CANCEL_GRACE, None))[0]
                if time.monotonic() - cancelled_at < CANCEL_GRACE:
                    self.stats["unanswerable (cancelled just before)"] += 1
                    continue
                sent.must_answer.setdefault(key, item["method"])
            if isinstance(decoded, list):
                duplicates = Counter(id_key(i["id"]) for i in items if _is_request(i))
                for key, seen in duplicates.items():
                    if seen > 1:
                        sent.must_answer.pop(key, None)  # which of two answers is whose?
            sent.notifications_only = bool(items) and all(_is_notification(i) or _is_response(i) for i in items)
        if isinstance(decoded, dict) and valid_request_id(decoded.get("id")):
            sent.readable_id = id_key(decoded["id"])
        answer = self.send(sent, ctx.describe())
        if session and isinstance(decoded, dict | list):
            for key in ids_in_body(decoded):
                self.used[session].add(key)
            for item in decoded if isinstance(decoded, list) else [decoded]:
                # Cancellations are kept to explain a missing answer later (C-1).
                params = item.get("params") if isinstance(item, dict) else None
                cancel = isinstance(params, dict) and item.get("method") == "notifications/cancelled"
                if cancel and valid_request_id(params.get("requestId")):
                    self.cancels[session][id_key(params["requestId"])] = (time.monotonic(), sent)
        if answer is not None:
            self.learn(decoded, answer)
        return answer

    def learn(self, decoded: Any, answer: Answer) -> None:
        """Remember what the answer taught: cursors and task ids to replay (and forge)."""
        for message in answer.messages:
            result = message.get("result") if isinstance(message, dict) else None
            if not isinstance(result, dict):
                continue
            if isinstance(result.get("tools"), list):
                self.tools += [t["name"] for t in result["tools"] if isinstance(t, dict) and t.get("name")]
                self.tools = sorted(set(self.tools))
                if isinstance(result.get("nextCursor"), str):
                    self.cursors["tools/list"].append(result["nextCursor"])
                    self.remember(result["nextCursor"])
            if isinstance(result.get("tasks"), list) and isinstance(result.get("nextCursor"), str):
                self.cursors["tasks/list"].append(result["nextCursor"])
                self.remember(result["nextCursor"])
            task = result.get("task") if isinstance(result.get("task"), dict) else result
            if isinstance(task.get("taskId"), str):
                self.remember(task["taskId"])
            known = task.get("taskId") in self.tasks or task.get("taskId") in self.done_tasks
            if isinstance(task.get("taskId"), str) and task.get("status") == "working" and not known:
                self.tasks.append(task["taskId"])
            if isinstance(task.get("taskId"), str) and task.get("status") in ("cancelled", "failed", "completed"):
                if task["taskId"] in self.tasks:
                    self.tasks.remove(task["taskId"])
                if task["taskId"] not in self.done_tasks:
                    self.done_tasks.append(task["taskId"])
        for key in self.cursors:
            del self.cursors[key][:-20]

    # ----------------------------------------------------------------------- sessions

    def initialize(self, rev: str, params: Any = None, *, headers: list[tuple[str, str | bytes]] | None = None) -> None:
        if params is None:
            params = {"protocolVersion": rev, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}
        message = {"jsonrpc": "2.0", "id": self.fresh_id(), "method": "initialize", "params": params}
        answer = self.post(Context("none"), message, "initialize", headers=headers)
        if answer is None or answer.status != 200 or "mcp-session-id" not in answer.headers:
            return
        session = answer.headers["mcp-session-id"]
        self.remember(session)
        result = answer.messages[0].get("result", {}) if answer.messages else {}
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version not in LEGACY:
            return
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        self.post(Context("session", version, session), note, "initialize")
        self.sessions[version].append(session)
        if len(self.sessions[version]) > 4:
            self.end_session(version, self.sessions[version][0])

    def end_session(self, rev: str, session: str) -> None:
        ctx = Context("session", rev, session)
        sent = self.bare("DELETE", [("Mcp-Session-Id", session), *self.version_header(ctx)], "lifecycle")
        answer = self.send(sent, f"ending a live {rev} session")
        if answer is not None and answer.status == 204:
            self.sessions[rev].remove(session)
            self.deleted.append((rev, session))
            del self.deleted[:-10]

    def list_tools(self) -> None:
        """Learn every tool name (all pages) and the tools/list cursors."""
        ctx = self.context(LATEST_LEGACY, live=1.0)
        params: dict[str, Any] = {}
        for _ in range(50):
            answer = self.post(ctx, self.request("tools/list", params), "setup")
            result = answer.messages[0].get("result", {}) if answer is not None and answer.messages else {}
            if not isinstance(result, dict) or not isinstance(result.get("nextCursor"), str):
                return
            params = {"cursor": result["nextCursor"]}

    def open_sessions(self) -> None:
        for rev in LEGACY:
            for _ in range(3):
                self.initialize(rev)
            self.end_session(rev, self.sessions[rev][0])

    # ----------------------------------------------------------------------- scenarios

    def run(self, pool: list[Drawn], requests: int) -> None:
        """Send ``requests`` requests: each drawn message once as drawn, then scenarios at random."""
        self.pool = pool
        scenarios = (
            (self.schema_replay, 32),
            (self.tool_call, 16),
            (self.odd_headers, 9),
            (self.odd_ids, 6),
            (self.raw_body, 7),
            (self.batch, 5),
            (self.cursor, 5),
            (self.tasks_scenario, 3),
            (self.lifecycle, 5),
            (self.big_body, 2),
            (self.cancel_then_call, 3),
            (self.streams, 0.15),
        )
        functions = [f for f, _ in scenarios]
        weights = [w for _, w in scenarios]
        fresh = list(pool)
        self.rng.shuffle(fresh)
        started = time.monotonic()
        while self.count < requests and self.time_left():
            if self.later and self.later[0][0] <= self.step:
                self.send_later()
                continue
            # A fresh stream per step: an answer that differs between two runs of a seed (one that
            # depends on the server's clock) changes the request of that step, not every later one.
            self.rng.seed(f"{self.seed}:{self.step}")
            self.step += 1
            if fresh:  # every drawn message is sent at least once
                self.schema_replay(fresh.pop(), mutate_it=False)
                continue
            self.rng.choices(functions, weights)[0]()
        self.flush_later()
        self.loop_seconds = time.monotonic() - started

    def schema_replay(self, item: Drawn | None = None, *, mutate_it: bool | None = None) -> None:
        """A message drawn from a schema, as drawn or mutated, from a context that fits it."""
        if item is None:
            if not self.pool:
                return
            item = self.rng.choice(self.pool)
        message = json.loads(json.dumps(item.message))
        if isinstance(message, dict):
            message.setdefault("jsonrpc", "2.0")
            if not item.notification and (self.rng.random() < 0.8 or not valid_request_id(message.get("id"))):
                message["id"] = self.fresh_id()
            params = message.get("params")
            if item.modern and isinstance(params, dict) and isinstance(params.get("_meta"), dict):
                if self.rng.random() < 0.7:
                    params["_meta"][META_VERSION] = MODERN
                if message.get("method") == "tools/call" and self.tools and self.rng.random() < 0.5:
                    params["name"] = self.rng.choice(self.tools)
            elif message.get("method") == "tools/call" and isinstance(params, dict) and self.tools:
                params["name"] = self.rng.choice(self.tools) if self.rng.random() < 0.5 else params.get("name")
            task_method = message.get("method") in ("tasks/get", "tasks/cancel", "tasks/update")
            if task_method and self.tasks and isinstance(params, dict) and self.rng.random() < 0.5:
                params["taskId"] = self.rng.choice(self.tasks)
        elif isinstance(message, list):
            for entry in message:
                if isinstance(entry, dict) and "id" in entry:
                    entry["id"] = self.fresh_id()
        if mutate_it if mutate_it is not None else self.rng.random() < 0.6:
            message = mutate(self.rng, message)
        if item.modern:
            ctx = Context("modern", MODERN) if self.rng.random() < 0.9 else self.context()
        else:
            ctx = self.context(item.rev)
        if isinstance(message, dict) and message.get("method") == "tasks/result":
            params = message.get("params")
            if isinstance(params, dict) and params.get("taskId") in self.tasks:
                params["taskId"] = "not-a-task"  # a working task's result would block (T11-10)
        self.post(ctx, message, f"schema {item.rev} {item.name}")

    def tool_call(self) -> None:
        tool = self.rng.choice(self.tools or ["echo"])
        if (tool in SLOW_TOOLS and self.rng.random() < 0.95) or (tool in SLEEPY_TOOLS and self.rng.random() < 0.85):
            tool = self.rng.choice(("echo", "add", "json_schema_2020_12_tool"))
        arguments: Any = good_arguments(self.rng, tool)
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        modern = self.rng.random() < 0.35
        if self.rng.random() < 0.15:
            params["_meta"] = {"progressToken": self.rng.choice((1, "tok", odd_id(self.rng)))}
        ctx = Context("modern", MODERN) if modern else self.context(live=0.95)
        if not modern and ctx.rev == "2025-11-25" and self.rng.random() < 0.25:
            params["task"] = self.rng.choice(({}, {"ttl": 60_000}, {"ttl": 0}, {"ttl": -1}, {"ttl": 1e300}, []))
        message = self.request("tools/call", params, modern=modern)
        if self.rng.random() < 0.4:
            message["params"]["arguments"] = (
                mutate(self.rng, {"a": arguments}).get("a") if arguments else json_value(self.rng)
            )
        if self.rng.random() < 0.2:
            message = mutate(self.rng, message)
        elif self.rng.random() < 0.05 and isinstance(message["params"].get("arguments"), dict):
            message["params"]["arguments"][self.rng.choice(("text", "a", "city", "x"))] = deep_value(self.rng)
        self.post(ctx, message, "tools/call")

    def valid_message(self, ctx: Context) -> dict[str, Any]:
        method = self.rng.choice(("ping", "tools/list", "tools/call", "server/discover"))
        modern = ctx.kind == "modern"
        if method == "server/discover" and not modern:
            method = "ping"
        if method == "ping" and modern:
            method = "server/discover"
        params = {"name": "echo", "arguments": {"text": "hi"}} if method == "tools/call" else {}
        return self.request(method, params, modern=modern)

    def odd_headers(self) -> None:
        """A good message with one bad header: Content-Type, Accept, Origin, Host, versions, ids, routing."""
        ctx = Context("modern", MODERN) if self.rng.random() < 0.35 else self.context(live=0.97)
        message = self.valid_message(ctx)
        headers = self.headers_for(ctx, message)
        rng = self.rng
        which = rng.choice(
            ("content-type", "accept", "origin", "host", "version", "session", "method", "name", "param", "dup", "drop")
        )
        values: dict[str, tuple[Any, ...]] = {
            "content-type": (
                "text/plain",
                "application/json; charset=latin-1",
                "APPLICATION/JSON",
                "application/json-rpc",
                "application/jsonx",
                "multipart/form-data; boundary=x",
                "application/x-www-form-urlencoded",
                "",
                ";",
                odd_header_value(rng),
            ),
            "accept": (
                "text/html",
                "*/*",
                "application/*",
                "text/event-stream",
                "application/json",
                "application/json;q=0",
                "image/png, text/*",
                "",
                odd_header_value(rng),
            ),
            "origin": (
                self.server.base_url,
                "null",
                "https://evil.example",
                "http://127.0.0.1:1",
                "http://localhost",
                "file://",
                odd_header_value(rng),
            ),
            "host": ("evil.example", "127.0.0.1:1", "", "[::1", "a b", "localhost:99999", odd_header_value(rng)),
            "version": ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", MODERN, "1.0", odd_header_value(rng)),
            "session": (
                f"{rng.getrandbits(128):032x}",
                "",
                " ",
                "x" * rng.choice((65, 1000, 7000)),
                rng.choice([sid for _, sid in self.deleted] or ["gone"]),
                rng.choice([s for v in self.sessions.values() for s in v] or ["none"]),
                odd_header_value(rng),
            ),
            "method": ("tools/list", "ping", "TOOLS/LIST", "=?base64?dG9vbHMvY2FsbA==?=", odd_header_value(rng)),
            "name": ("echo", "add", "=?base64?ZWNobw==?=", "=?base64?ZWNobw?=", odd_header_value(rng)),
            "param": ("Paris", "=?base64?UGFyaXM=?=", "", odd_header_value(rng)),
        }
        names = {
            "content-type": "Content-Type",
            "accept": "Accept",
            "origin": "Origin",
            "host": "Host",
            "version": "MCP-Protocol-Version",
            "session": "Mcp-Session-Id",
            "method": "Mcp-Method",
            "name": "Mcp-Name",
            "param": "Mcp-Param-City",
        }
        if which == "dup":  # a header twice
            name, value = rng.choice(headers)
            headers.append((name, rng.choice((value, odd_header_value(rng)))))
        elif which == "drop":
            if headers:
                headers.pop(rng.randrange(len(headers)))
        else:
            name = names[which]
            headers = [(k, v) for k, v in headers if k.lower() != name.lower()]
            if rng.random() < 0.85:
                headers.append((name, rng.choice(values[which])))
        self.post(ctx, message, f"header {which}", headers=headers)

    def odd_ids(self) -> None:
        ctx = Context("modern", MODERN) if self.rng.random() < 0.3 else self.context(live=0.97)
        message = self.valid_message(ctx)
        message["id"] = odd_id(self.rng)
        if self.rng.random() < 0.2:
            del message["id"]  # a notification now: no answer may come
        self.post(ctx, message, "odd id")

    def raw_body(self) -> None:
        ctx = Context("modern", MODERN) if self.rng.random() < 0.3 else self.context(live=0.97)
        message = self.valid_message(ctx)
        body = broken_body(self.rng, encode(message))
        headers = self.headers_for(ctx, message)
        self.post(ctx, None, "raw body", body=body, headers=headers)

    def batch(self) -> None:
        """JSON-RPC batches: L-8 says only 2025-03-26 sessions take them."""
        rev = "2025-03-26" if self.rng.random() < 0.75 else None
        ctx = self.context(rev, live=0.95)
        rng = self.rng
        roll = rng.randrange(7)
        items: list[Any]
        if roll == 0:
            items = []
        elif roll == 1:  # mixed: requests, notifications, responses, junk
            items = []
            for _ in range(rng.randrange(1, 12)):
                kind = rng.randrange(6)
                if kind == 0:
                    items.append(self.request(rng.choice(("ping", "tools/list"))))
                elif kind == 1:
                    items.append(self.request("tools/call", {"name": "echo", "arguments": {"text": "b"}}))
                elif kind == 2:
                    items.append({"jsonrpc": "2.0", "method": rng.choice(("notifications/initialized", "x/y"))})
                elif kind == 3:
                    items.append({"jsonrpc": "2.0", "id": self.fresh_id(), "result": {}})
                elif kind == 4:
                    items.append(json_value(rng, 2))
                else:
                    items.append(mutate(rng, self.request("ping")))
        elif roll == 2:  # nested
            items = [[self.request("ping")], [], [[self.request("ping")]]]
        elif roll == 3:  # huge
            items = [self.request("ping") for _ in range(rng.choice((100, 500, 2000)))]
        elif roll == 4:
            items = [self.request("initialize", {"protocolVersion": "2025-03-26"}), self.request("ping")]
        elif roll == 5:
            items = [
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": self.fresh_id()}},
                {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "client error"}},
            ]
        else:
            pick = [self.rng.choice(self.pool).message for _ in range(rng.randrange(1, 6))] if self.pool else []
            items = [p for p in pick if isinstance(p, dict)] or [self.request("ping")]
            for entry in items:
                if isinstance(entry, dict) and "id" in entry:
                    entry["id"] = self.fresh_id()
        self.post(ctx, items, "batch")

    def cursor(self) -> None:
        rng = self.rng
        method = rng.choice(("tools/list", "tools/list", "tasks/list"))
        ctx = self.context("2025-11-25" if method == "tasks/list" else None, live=0.95)
        modern = method == "tools/list" and rng.random() < 0.3
        if modern:
            ctx = Context("modern", MODERN)
        own = self.cursors[method]
        other = self.cursors["tasks/list" if method == "tools/list" else "tools/list"]
        good = rng.choice(own) if own else None
        roll = rng.randrange(9)
        cursor: Any
        if roll == 0 and good:
            cursor = good
        elif roll == 1 and good:
            cursor = good[: rng.randrange(len(good))]  # truncated
        elif roll == 2 and good:
            index = rng.randrange(len(good))
            cursor = good[:index] + ("A" if good[index] != "A" else "B") + good[index + 1 :]  # one character off
        elif roll == 3 and other:
            cursor = rng.choice(other)  # minted for the other listing
        elif roll == 4:
            cursor = base64.urlsafe_b64encode(rng.randbytes(rng.randrange(1, 40))).decode().rstrip("=")
        elif roll == 5:
            cursor = rng.choice(("", "=", "!!", "x" * 1025, "x" * 1024, "A" * 17, "\U0001f642", "\x00"))
        elif roll == 6:
            cursor = json_value(rng, 1)
        elif roll == 7 and good:
            cursor = good + rng.choice(("=", "==", "A", "\n"))
        else:
            cursor = odd_string(rng)
        self.post(ctx, self.request(method, {"cursor": cursor}, modern=modern), "cursor")

    def tasks_scenario(self) -> None:
        rng = self.rng
        modern = rng.random() < 0.4
        if len(self.tasks) < 3 or rng.random() < 0.1:  # make one
            tool = rng.choice(("noop", "noop", "build_report", "export_archive"))
            params: dict[str, Any] = {"name": tool, "arguments": good_arguments(rng, tool)}
            if modern:
                message = self.request("tools/call", params, modern=True)
                message["params"]["_meta"][META_CAPS] = {"extensions": {TASKS_EXT: {}}}
                self.post(Context("modern", MODERN), message, "tasks")
            else:
                params["task"] = {"ttl": rng.choice((1000, 60_000, 10**12))}
                self.post(self.context("2025-11-25", live=1.0), self.request("tools/call", params), "tasks")
            return
        task_id: Any = rng.choice(
            (rng.choice(self.tasks), rng.choice(self.tasks), rng.choice(self.done_tasks or self.tasks), odd_id(rng))
        )
        if modern:
            method = rng.choice(("tasks/get", "tasks/cancel", "tasks/update"))
            params = {"taskId": task_id}
            if method == "tasks/update":
                params["inputResponses"] = rng.choice(({}, {"x": {"action": "accept"}}, [], None))
            message = self.request(method, params, modern=True)
            if rng.random() < 0.8:
                message["params"]["_meta"][META_CAPS] = {"extensions": {TASKS_EXT: {}}}
            ctx = Context("modern", MODERN)
        else:
            method = rng.choice(("tasks/get", "tasks/cancel", "tasks/list", "tasks/result"))
            if method == "tasks/result" and task_id in self.tasks:
                task_id = rng.choice(self.done_tasks or ["unknown-task"])  # a working task's result would block
            message = self.request(method, {"taskId": task_id})
            ctx = self.context("2025-11-25", live=0.95)
        answer = self.post(ctx, message, "tasks")
        answered = answer is not None and any(isinstance(m, dict) and "result" in m for m in answer.messages)
        if method == "tasks/cancel" and task_id in self.tasks and answered:
            self.tasks.remove(task_id)  # cancelled: tasks/result answers at once now
            self.done_tasks.append(task_id)

    def lifecycle(self) -> None:
        rng = self.rng
        roll = rng.randrange(8)
        if roll == 0:
            rev = rng.choice(LEGACY)
            params: Any = {"protocolVersion": rev, "capabilities": {}, "clientInfo": {"name": "f", "version": "1"}}
            if rng.random() < 0.5:
                params["protocolVersion"] = rng.choice(("2024-11-05", MODERN, "", 20250326, None, odd_string(rng)))
            if rng.random() < 0.4:
                params = mutate(rng, params)
            self.initialize(rev, params)
        elif roll == 1:
            rev = rng.choice(LEGACY)
            if self.sessions[rev]:
                self.end_session(rev, rng.choice(self.sessions[rev]))
            self.initialize(rev)
        elif roll == 2:  # DELETE of an unknown, deleted or missing session
            ctx = self.context(live=0.0)
            headers: list[tuple[str, str | bytes]] = [] if ctx.session is None else [("Mcp-Session-Id", ctx.session)]
            self.send(self.bare("DELETE", headers + self.version_header(ctx), "lifecycle"), ctx.describe())
        elif roll == 3:  # a browser preflight
            names = ["content-type", "mcp-session-id", "x-evil", "mcp-param-city", "authorization"]
            asked = ", ".join(rng.sample(names, 3))
            headers = [("Origin", self.server.base_url), ("Access-Control-Request-Method", "POST")]
            headers.append(("Access-Control-Request-Headers", rng.choice((asked, odd_header_value(rng)))))
            self.send(self.bare("OPTIONS", headers, "lifecycle"), "a CORS preflight")
        elif roll == 4:  # methods the endpoint does not serve
            verb = rng.choice(("PUT", "PATCH", "HEAD"))
            self.send(self.bare(verb, [JSON_CT], "lifecycle", encode(self.request("ping"))))
        elif roll == 5:  # a POST on a live session of another revision's header
            ctx = self.context(live=1.0)
            message = self.request("tools/list")
            headers = self.headers_for(ctx, message)
            headers = [(k, v) for k, v in headers if k != "MCP-Protocol-Version"]
            headers.append(("MCP-Protocol-Version", rng.choice(SUPPORTED)))
            self.post(ctx, message, "lifecycle", headers=headers)
        elif roll == 6:  # the query string is not part of the endpoint's identity
            ctx = self.context(live=1.0)
            self.post(ctx, self.request("ping"), "lifecycle", path=rng.choice(("/mcp?x=1", "/mcp?", "/mcp?%ff=%00")))
        else:  # logging/setLevel with good and bad levels
            ctx = self.context(live=0.95)
            level = rng.choice(("debug", "emergency", "DEBUG", "", None, 3, "trace", odd_string(rng)))
            self.post(ctx, self.request("logging/setLevel", {"level": level}), "lifecycle")

    def big_body(self) -> None:
        """Bodies near and over the 1 MiB limit, and values nested to any depth."""
        rng = self.rng
        ctx = Context("modern", MODERN) if rng.random() < 0.3 else self.context(live=1.0)
        tool = rng.choice(("echo", "json_schema_2020_12_tool", "noop", "add"))
        message = self.request("tools/call", {"name": tool, "arguments": {}}, modern=ctx.kind == "modern")
        roll = rng.randrange(5)
        if roll == 0:
            message["params"]["arguments"]["text"] = huge_value(rng, over=True)
        elif roll == 1:
            overhead = len(encode(message)) + 20
            message["params"]["arguments"]["text"] = "z" * (MAX_BODY - overhead + rng.randrange(-8, 9))
        elif roll == 2:
            message["params"]["arguments"]["text"] = huge_value(rng)
        elif roll == 3:
            message["params"]["arguments"][rng.choice(("text", "name", "address", "deep"))] = deep_value(rng)
        else:
            message["params"]["_meta"] = {**message["params"].get("_meta", {}), "x": deep_value(rng)}
        self.post(ctx, message, "big body")

    def cancel_then_call(self) -> None:
        """C-1: a cancellation of a request id the client never used, then a request with that id:
        at once (inside the server's early-cancel window) or a few seconds later (outside it)."""
        ctx = self.context(live=1.0)
        if ctx.kind != "session" or ctx.session is None:
            return
        rid = self.fresh_id()
        note: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
        if self.rng.random() < 0.5:
            note["params"]["reason"] = odd_string(self.rng)
        self.post(ctx, note, "cancel")
        call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
        call["params"] = self.rng.choice(
            ({"name": "echo", "arguments": {"text": "after cancel"}}, {"name": "noop", "arguments": {}})
        )
        if self.rng.random() < 0.3:
            self.post(ctx, call, "cancel")
        else:
            self.later.append((self.step + DEFER_STEPS, time.monotonic() + CANCEL_GRACE + 0.5, ctx, call))

    def send_later(self) -> None:
        """Send the first deferred call, once its grace time has passed too."""
        _, due, ctx, call = self.later.pop(0)
        wait = due - time.monotonic()
        if wait > 0:
            self.stats["deferred call waited"] += 1
            self.waited += wait
            time.sleep(wait)  # a deadline of the server's (CANCEL_GRACE), not a wait for a state
        self.post(ctx, call, "cancel")

    def flush_later(self) -> None:
        """Send the requests still due after their cancellation."""
        while self.later and self.time_left():
            self.send_later()

    def streams(self) -> None:
        """The legacy GET stream and 2026-07-28 subscriptions/listen (both end after 0.2 s here)."""
        rng = self.rng
        if rng.random() < 0.5:
            ctx = self.context(live=0.9)
            headers: list[tuple[str, str | bytes]] = [("Accept", rng.choice(("text/event-stream", "application/json")))]
            if ctx.session:
                headers.append(("Mcp-Session-Id", ctx.session))
            headers += self.version_header(ctx)
            if rng.random() < 0.3:
                headers.append(("Last-Event-ID", rng.choice(("0", "x-get-1", odd_header_value(rng)))))
            self.send(self.bare("GET", headers, "streams"), ctx.describe())
        else:
            notifications = rng.choice(({"toolsListChanged": True}, {}, {"toolsListChanged": "yes"}, [], None))
            message = self.request("subscriptions/listen", {"notifications": notifications}, modern=True)
            self.post(Context("modern", MODERN), message, "streams")

    # ----------------------------------------------------------------------- report

    def report(self) -> str:
        lines = [
            f"MCP_FUZZ_SEED={SEED}: {self.count} requests in {time.monotonic() - self.started:.1f} s, "
            f"{len(self.failures)} distinct failure(s)",
            "scenarios and statuses: " + ", ".join(f"{k}={v}" for k, v in sorted(self.stats.items())),
            "seconds per scenario: " + ", ".join(f"{k}={v:.1f}" for k, v in self.seconds.most_common()),
            f"{len(self.pool)} messages drawn from {len({(d.rev, d.name) for d in self.pool})} schema definitions; "
            f"{self.count - len(self.pool)} more requests built from them; "
            f"{self.loop_seconds:.1f} s in the sending loop, of which {sum(self.seconds.values()):.1f} s "
            f"sending and checking, {self.waited:.1f} s waiting for deferred calls; "
            f"server CPU {_cpu_seconds(self.server.process.pid):.1f} s",
        ]
        for failure in sorted(self.failures.values(), key=lambda f: (f.problem.kind, f.problem.key)):
            lines.append("")
            lines.append(f"[{failure.problem.kind}] {failure.problem.key}: {failure.count} time(s)")
            lines.append(f"  why: {failure.problem.detail[:800]}")
            lines.append(f"  sent {failure.context}, scenario {failure.sent.scenario!r}:")
            for earlier in failure.before:
                lines.append("  after this earlier request in the same session:")
                lines += _http_lines(earlier)
            lines += _http_lines(failure.sent)
            answer = failure.answer.decode("utf-8", "replace")
            lines.append(f"  -> HTTP {failure.status}: {_clip(answer, 400)}")
        return "\n".join(lines)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process (Linux), for the report; 0 where unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _is_request(item: Any) -> bool:
    """A well-formed request whose id any JSON parser reads as sent (RFC 8259 leaves integers
    beyond 64 bits to the implementation)."""
    rid = item.get("id") if isinstance(item, dict) else None
    return (
        isinstance(item, dict)
        and item.get("jsonrpc") == "2.0"
        and isinstance(item.get("method"), str)
        and bool(item["method"])
        and isinstance(item.get("params", {}), dict)
        and valid_request_id(rid)
        and (not isinstance(rid, int) or -(2**63) <= rid < 2**64)
    )


def _is_notification(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("jsonrpc") == "2.0"
        and isinstance(item.get("method"), str)
        and bool(item["method"])
        and isinstance(item.get("params", {}), dict)
        and "id" not in item
    )


def _is_response(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("jsonrpc") == "2.0"
        and "method" not in item
        and (("result" in item) != ("error" in item))
        and (item.get("id") is None or valid_request_id(item.get("id")))
    )


def _clip(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return f"{text[: width - 100]} ... {text[-80:]} ({len(text)} characters)"


def _http_lines(sent: Sent) -> list[str]:
    lines = [f"    {sent.method} {sent.path} HTTP/1.1"]
    for name, value in sent.headers:
        shown = repr(value) if isinstance(value, bytes) else _clip(value, 200)
        lines.append(f"    {name}: {shown}")
    body = sent.body.decode("utf-8", "backslashreplace")
    lines.append(f"    body ({len(sent.body)} bytes): {_clip(body, 700)}")
    return lines


def health_check(server: LiveServer) -> list[str]:
    """After the run: initialize, tools/list (every page) and tools/call still work, checked as above."""
    problems: list[str] = []
    with httpx.Client(timeout=TIMEOUT) as client:

        def call(message: dict[str, Any], headers: dict[str, str], version: str) -> httpx.Response:
            response = client.post(server.url, json=message, headers={**dict([JSON_CT, ACCEPT_BOTH]), **headers})
            sent = Sent("POST", list(headers.items()), json.dumps(message).encode(), version)
            sent.request_ids = ids_in_body(message)
            sent.must_answer = dict(sent.request_ids) if "id" in message else {}
            content_type = response.headers.get("content-type", "")
            for problem in check_exchange(sent, response.status_code, content_type, response.content):
                problems.append(f"{message['method']}: [{problem.kind}] {problem.key}: {problem.detail}")
            return response

        init = {"protocolVersion": LATEST_LEGACY, "capabilities": {}, "clientInfo": {"name": "health", "version": "1"}}
        response = call({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, {}, LATEST_LEGACY)
        if response.status_code != 200 or "mcp-session-id" not in response.headers:
            return [*problems, f"initialize: HTTP {response.status_code} {response.text[:300]}"]
        headers = {"Mcp-Session-Id": response.headers["mcp-session-id"], "MCP-Protocol-Version": LATEST_LEGACY}
        note = client.post(
            server.url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers={**dict([JSON_CT, ACCEPT_BOTH]), **headers},
        )
        if note.status_code != 202:
            problems.append(f"notifications/initialized: HTTP {note.status_code}")
        names: list[str] = []
        cursor = None
        for page in range(2, 40):
            params = {} if cursor is None else {"cursor": cursor}
            message = {"jsonrpc": "2.0", "id": page, "method": "tools/list", "params": params}
            result = call(message, headers, LATEST_LEGACY).json().get("result", {})
            names += [tool["name"] for tool in result.get("tools", [])]
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        if not {"echo", "add", "noop"} <= set(names):
            problems.append(f"tools/list: the demo tools are missing: {names}")
        echo = {"name": "echo", "arguments": {"text": "still alive"}}
        response = call({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": echo}, headers, LATEST_LEGACY)
        if response.json().get("result", {}).get("content") != [{"type": "text", "text": "still alive"}]:
            problems.append(f"tools/call echo: {response.text[:300]}")
        modern = {"_meta": {META_VERSION: MODERN, META_CAPS: {}}, "name": "add", "arguments": {"a": 2, "b": 3}}
        routing = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "add"}
        response = call({"jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": modern}, routing, MODERN)
        if response.json().get("result", {}).get("structuredContent") != {"sum": 5}:
            problems.append(f"tools/call add (2026-07-28): {response.text[:300]}")
    return problems


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fuzz_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The demo on SQLite, and on PostgreSQL: what a client sends reaches rows there under rules
    of its own (no NUL in text or JSON, written or looked up), which SQLite does not enforce."""
    with contextlib.ExitStack() as stack:
        env = dict(SERVER_ENV)
        if request.param == "postgres":
            external_services.require("postgres")
            database = stack.enter_context(external_services.temporary_postgres_database("mcp_fuzz"))
            env.update({"MCP_DATABASE": "postgres", "POSTGRES_DB": database})
        yield stack.enter_context(run_server(tmp_path_factory.mktemp(f"fuzz-{request.param}"), extra_env=env))


def test_fuzz_endpoint(fuzz_server: LiveServer) -> None:
    requests = REQUESTS
    print(f"MCP_FUZZ_SEED={SEED} MCP_FUZZ_REQUESTS={requests} (replay: {replay_command()})")
    fuzzer = Fuzzer(fuzz_server, SEED)
    try:
        fuzzer.open_sessions()
        fuzzer.list_tools()
        started = time.monotonic()
        pool = draw_pool(SEED, EXAMPLES_PER_DEFINITION)
        seconds = time.monotonic() - started
        print(f"{len(pool)} messages drawn from {len(schema_definitions())} definitions in {seconds:.1f} s")
        fuzzer.run(pool, requests)
    finally:
        fuzzer.client.close()  # its keep-alive connection, before the server goes
    report = fuzzer.report()
    print(report)

    errors = []
    if fuzzer.count < requests or fuzzer.later:
        errors.append(
            f"the time budget ran out: only {fuzzer.count} of the {requests} requests of seed {SEED} went out "
            f"within MCP_FUZZ_BUDGET={BUDGET:g} s ({len(fuzzer.later)} deferred calls not sent), so this was not "
            "the seed's whole input; a slow machine or a slow server: see the report for where the time went"
        )
    if fuzzer.failures:
        errors.append(f"{len(fuzzer.failures)} distinct failure(s); see the report")
    if fuzz_server.process.poll() is not None:
        errors.append(f"the server exited with status {fuzz_server.process.returncode}")
    else:
        errors += [f"health check: {problem}" for problem in health_check(fuzz_server)]
    log = fuzz_server.log()
    bad_lines = [line for line in log.splitlines() if "Traceback" in line or "Internal Server Error" in line]
    errors += [f"server log: {line}" for line in bad_lines]
    replay = f"replay exactly: {replay_command()}"
    assert not errors, f"MCP_FUZZ_SEED={SEED}; {replay}\n" + "\n".join(errors[:50]) + "\n\n" + report + "\n" + replay


def replay_command() -> str:
    """The command that sends this run's requests again, in the same order."""
    env = f"MCP_FUZZ_SEED={SEED} MCP_FUZZ_REQUESTS={REQUESTS}"
    return f"{env} make fuzz-replay  (or: {env} python -m pytest tests/e2e/test_fuzz.py::test_fuzz_endpoint -s)"


# Past the drawn messages (about 200) and long enough (several seconds) that deferred calls fall
# due inside the loop. The fuzzer learns from answers, and a few depend on the server's clock (a
# task created with a 1 s ttl is listed, or has expired, on tasks/list): such a request may differ
# between two runs, but each step draws from its own stream, so the difference stays local.
REPLAY_REQUESTS = 1500
REPLAY_TOLERANCE = 0.01  # at most 1% of the requests may differ that way (a cascade is most of them)


def test_a_seed_sends_the_same_requests_again(tmp_path_factory: pytest.TempPathFactory) -> None:
    """What `make fuzz-replay` promises: two runs of one seed, each against a fresh server as a
    replay is, send the same requests in the same order (the values the server made up aside)."""
    traces: list[list[str]] = []
    for run in range(2):
        with run_server(tmp_path_factory.mktemp(f"replay{run}"), extra_env=SERVER_ENV) as server:
            fuzzer = Fuzzer(server, SEED)
            fuzzer.trace = []
            try:
                fuzzer.open_sessions()
                fuzzer.list_tools()
                fuzzer.run(draw_pool(SEED, EXAMPLES_PER_DEFINITION), REPLAY_REQUESTS)
            finally:
                fuzzer.client.close()
            traces.append(fuzzer.trace)
    first, second = traces
    assert len(first) >= REPLAY_REQUESTS
    differ = [i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b]
    shown = "\n".join(t[differ[0]][:2000] for t in traces) if differ else ""
    print(f"seed {SEED}: {len(first)} and {len(second)} requests, {len(differ)} differ: {differ[:20]}")
    assert len(differ) <= REPLAY_TOLERANCE * len(first), f"seed {SEED}: requests {differ[:20]}... differ:\n{shown}"
    assert abs(len(first) - len(second)) <= REPLAY_TOLERANCE * len(first), (len(first), len(second))
