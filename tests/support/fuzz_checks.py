"""What the fuzzer asserts about every answer of the MCP endpoint: pure functions over bytes.

``check_exchange`` turns one HTTP exchange (what was sent, what came back) into a list of
``Problem``; an empty list means the answer is acceptable. ``log_problems`` does the same for
the lines the server wrote to its log meanwhile. tests/unit/test_fuzz_checks.py feeds both
crafted bad answers to prove that each check fires.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.mcp_client import NULL_ID_REVISIONS, _validator, has_def, result_def, sse_messages

JSONRPC_INTERNAL_ERROR = -32603
# Statuses given before the body is read: the request id is unknown to them.
UNREAD_BODY_STATUSES = frozenset({403, 406, 413, 415})


@dataclass(frozen=True)
class Problem:
    """One broken rule. ``kind`` and ``key`` group occurrences into one distinct failure."""

    kind: str
    key: str
    detail: str = ""

    @property
    def signature(self) -> tuple[str, str]:
        return self.kind, self.key


@dataclass
class Sent:
    """One HTTP request as it went on the wire, plus what the fuzzer expects of its answer."""

    method: str
    headers: list[tuple[str, str | bytes]]
    body: bytes
    # The revision whose schema.json every message of the answer must follow.
    version: str
    # JSON-RPC ids that must be answered (valid, fresh request ids), with their methods.
    must_answer: dict[str, str] = field(default_factory=dict)
    # Request ids of the body (any request object, fresh or not), as JSON text -> method.
    request_ids: dict[str, str] = field(default_factory=dict)
    # Only notifications and/or client responses were posted: no JSON-RPC response may come back.
    notifications_only: bool = False
    # The id of a single-object body, when the server can read it: its errors must carry it.
    readable_id: str | None = None
    scenario: str = ""
    path: str = "/mcp"

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value.decode("latin-1") if isinstance(value, bytes) else value
        return None

    def text(self) -> str:
        """Everything the client said, decoded: what an echo in the answer may legitimately repeat."""
        parts = [self.body.decode("utf-8", "replace")]
        with contextlib.suppress(ValueError, RecursionError):
            parts.append(json.dumps(json.loads(self.body), ensure_ascii=False))
        for key, value in self.headers:
            parts.append(f"{key}: {value.decode('latin-1') if isinstance(value, bytes) else value}")
        parts.append(self.path)
        return "\n".join(parts)


def id_key(value: Any) -> str:
    """A key for an id that keeps 1 and "1" apart, as the wire does."""
    if type(value) is int:
        return str(value)
    if type(value) is str:
        return "'" + value
    return json.dumps(value, sort_keys=True)


def valid_request_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def ids_in_body(decoded: Any) -> dict[str, str]:
    """Every readable request id of a body (an object or a batch), as JSON text -> method.

    A server may echo a readable id even when the rest of the message is malformed.
    """
    items = decoded if isinstance(decoded, list) else [decoded]
    found = {}
    for item in items:
        if isinstance(item, dict) and valid_request_id(item.get("id")):
            method = item.get("method")
            found[id_key(item["id"])] = method if isinstance(method, str) else ""
    return found


# --------------------------------------------------------------------------- internals in bodies

# What must never reach a client: (name, pattern, triggers, core). The pattern only runs when
# one of its literal triggers is in the body (fast on megabyte answers). A match is an echo,
# not a leak, when the client itself sent the matched text or the marker's core.
INTERNAL_MARKERS: tuple[tuple[str, re.Pattern[str], tuple[str, ...], str | None], ...] = (
    ("traceback", re.compile(r"Traceback \(most recent call last\)"), ("Traceback",), "Traceback"),
    ("source line", re.compile(r"File \"[^\"]+\", line \d+"), ('File "', 'File \\"'), 'File "'),
    ("python file path", re.compile(r"(?:/[\w.-]+)+\.py\b|\w\.py\b"), (".py",), ".py"),
    ("django module", re.compile(r"\bdjango\.[a-z_]+"), ("django.",), "django."),
    ("mcp_tools module", re.compile(r"\bmcp_tools\.[a-z_]+"), ("mcp_tools.",), "mcp_tools."),
    ("site-packages", re.compile(r"site-packages"), ("site-packages",), "site-packages"),
    (
        "exception class",
        re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception|Warning)\b"),
        ("Error", "Exception", "Warning"),
        None,
    ),
    ("object repr", re.compile(r"object at 0x[0-9a-fA-F]+"), ("object at 0x",), "object at 0x"),
    (
        "SQL",
        re.compile(r"\b(?:SELECT\b[^\n]{0,200}\bFROM|INSERT INTO|DELETE FROM|UPDATE \S+ SET)\b"),
        ("SELECT", "INSERT INTO", "DELETE FROM", "UPDATE"),
        None,
    ),
    (
        "database",
        re.compile(r"sqlite|psycopg|UNIQUE constraint|no such (?:table|column)|syntax error at or"),
        ("sqlite", "psycopg", "UNIQUE constraint", "no such ", "syntax error"),
        None,
    ),
)
_SQL_WORDS = ("select", "insert", "delete", "update", "sqlite", "psycopg", "unique", "no such", "syntax error")


def internal_leaks(body: str, request_text: Callable[[], str]) -> list[Problem]:
    """Markers of internals in an answer that the request (``request_text()``) did not contain."""
    problems = []
    sent_sql: bool | None = None
    sent_text = ""
    for name, pattern, triggers, core in INTERNAL_MARKERS:
        if not any(trigger in body for trigger in triggers):
            continue
        sent_text = sent_text or request_text()
        if core is not None and core in sent_text:
            continue
        if name in ("SQL", "database"):
            if sent_sql is None:
                lowered = sent_text.lower()
                sent_sql = any(word in lowered for word in _SQL_WORDS)
            if sent_sql:
                continue
        for match in pattern.finditer(body):
            if match.group(0) in sent_text:
                continue  # the client sent it: an echo, not a leak
            problems.append(Problem("internals", name, f"{match.group(0)!r} in {_excerpt(body, match.start())}"))
            break
    return problems


def _excerpt(text: str, at: int, width: int = 120) -> str:
    start = max(0, at - width // 2)
    return repr(text[start : start + width])


# --------------------------------------------------------------------------- schema of messages


_MEMO: dict[tuple[str, str, bool, str], list[str]] = {}


def _schema_errors(version: str, name: str, instance: Any, *, id_may_be_null: bool = False) -> list[str]:
    """Schema violations of ``instance`` (memoised: answers repeat, and validation is the slow part)."""
    shape = instance
    if isinstance(instance, dict) and type(instance.get("id")) in (int, str):
        shape = {**instance, "id": 0 if isinstance(instance["id"], int) else "s"}  # any id of that type
    error = shape.get("error") if isinstance(shape, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        # Every revision types error.message as a plain string: its text (often an echo of the
        # request) does not change the verdict.
        shape = {**shape, "error": {**error, "message": ""}}
    try:
        text = json.dumps(shape, sort_keys=True)
    except (ValueError, RecursionError):
        return _validate(version, name, instance, id_may_be_null)
    if len(text) > 50_000:
        return _validate(version, name, instance, id_may_be_null)
    key = (version, name, id_may_be_null, text)
    if key not in _MEMO:
        if len(_MEMO) > 20_000:
            _MEMO.clear()
        _MEMO[key] = _validate(version, name, instance, id_may_be_null)
    return _MEMO[key]


def _validate(version: str, name: str, instance: Any, id_may_be_null: bool) -> list[str]:
    errors = []
    for error in _validator(version, name).iter_errors(instance):
        if id_may_be_null and error.validator == "required" and not list(error.path) and "'id'" in error.message:
            continue
        errors.append(f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.validator} {error.message[:160]}")
    return errors


def message_problems(version: str, message: Any, method: str | None) -> list[Problem]:
    """One server message against ``version``'s schema.json, and JSON-RPC's own rules.

    An error response to a request whose id could not be read: the 2025-03-26 and 2025-06-18
    schemas require ``id`` (typed string or integer), so there it is ``null`` as JSON-RPC 2.0
    has it (checked without it); 2025-11-25 and later let it be omitted (L-9), and their
    ``RequestId`` cannot be null.
    """
    if not isinstance(message, dict):
        return [Problem("schema", f"{version}: message is not an object", repr(message)[:200])]
    problems = []
    instance = message
    id_may_be_null = False
    if "error" in message and version in NULL_ID_REVISIONS:
        if "id" not in message:
            error = message.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            why = f'{version} requires "id" on errors; "id": null when the request id could not be read (JSON-RPC 2.0)'
            problems.append(Problem("missing id", f"{version} error {code}", why))
            id_may_be_null = True
        elif message["id"] is None:
            instance = {k: v for k, v in message.items() if k != "id"}
            id_may_be_null = True
    if "error" in message:
        name = "JSONRPCErrorResponse" if has_def(version, "JSONRPCErrorResponse") else "JSONRPCError"
        found = None
    elif "result" in message:
        name = "JSONRPCResultResponse" if has_def(version, "JSONRPCResultResponse") else "JSONRPCResponse"
        found = result_def(version, method, message["result"])
    else:
        name, found = "ServerNotification", None
    errors = _schema_errors(version, name, instance, id_may_be_null=id_may_be_null)
    if found is not None and not errors:
        errors = _schema_errors(*found, message["result"])
        name = f"{found[1]} ({found[0]})"
    if errors:
        first = errors[0]
        key = f"{version} {name} {method or ''}: {re.sub(r'[0-9]+', 'N', first.split(':', 1)[0])}"
        problems.append(Problem("schema", key.strip(), "; ".join(errors[:3])))
    error = message.get("error")
    if isinstance(error, dict) and error.get("code") == JSONRPC_INTERNAL_ERROR:
        problems.append(Problem("internal error", str(method), f"-32603: {str(error.get('message'))[:200]}"))
    return problems


# --------------------------------------------------------------------------- one exchange


def decode_messages(content_type: str, body: bytes) -> tuple[list[Any], list[Problem]]:
    """The JSON-RPC messages of an answer: JSON (an object or an array) or SSE ``data:`` events."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "text/event-stream":
        try:
            return sse_messages(body), []
        except (ValueError, RecursionError) as exc:
            return [], [Problem("bad body", "SSE event data is not JSON", f"{exc}: {body[:200]!r}")]
    if not body:
        return [], []
    if media != "application/json":
        return [], [Problem("bad body", f"Content-Type {media or '(none)'}", repr(body[:200]))]
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return [], [Problem("bad body", "application/json body is not JSON", f"{exc}: {body[:200]!r}")]
    if isinstance(decoded, list):
        if not decoded:
            return [], [Problem("bad body", "empty JSON array")]
        return decoded, []
    return [decoded], []


def check_exchange(sent: Sent, status: int, content_type: str, body: bytes) -> list[Problem]:
    """Every rule the fuzzer holds the server to, for one answer."""
    problems: list[Problem] = []
    if status >= 500:
        problems.append(Problem("5xx", f"HTTP {status}", repr(body[:300])))
    text = body.decode("utf-8", "replace")
    problems += internal_leaks(text, sent.text)
    messages, decode_problems = decode_messages(content_type, body)
    problems += decode_problems
    responses: dict[str, Any] = {}
    only = next(iter(sent.request_ids.values())) if len(sent.request_ids) == 1 else None
    for message in messages:
        rid = message.get("id") if isinstance(message, dict) else None
        method = sent.request_ids.get(id_key(rid)) if rid is not None else only
        problems += message_problems(sent.version, message, method)
        if isinstance(message, dict) and ("result" in message or "error" in message) and rid is not None:
            if id_key(rid) not in sent.request_ids:
                problems.append(
                    Problem("id mismatch", "response id names no request of the body", f"id {id_key(rid)[:80]}")
                )
            responses.setdefault(id_key(rid), message)
    if sent.readable_id is not None and status not in UNREAD_BODY_STATUSES:
        for message in messages:
            if isinstance(message, dict) and "error" in message and message.get("id") is None:
                code = message["error"].get("code") if isinstance(message["error"], dict) else None
                why = f"the request's id {sent.readable_id[:80]} was readable, but its error has none"
                problems.append(Problem("dropped id", f"HTTP {status} error {code}", why))
    if sent.method == "POST" and status >= 400 and not messages and not decode_problems:
        problems.append(Problem("no error body", f"HTTP {status}", "a refused POST carries a JSON-RPC error"))
    if 200 <= status < 300:
        for key, method in sent.must_answer.items():
            if key not in responses:
                problems.append(
                    Problem("no response", method, f"HTTP {status}, {len(messages)} message(s), none for id {key[:80]}")
                )
        if sent.notifications_only and any(isinstance(m, dict) and ("result" in m or "error" in m) for m in messages):
            problems.append(Problem("answered notification", f"HTTP {status}", text[:200]))
    return problems


# --------------------------------------------------------------------------- the server log

_TRACEBACK = re.compile(r"^Traceback \(most recent call last\)", re.M)
_WARNING = re.compile(r"^\S*:\d+: (\w+Warning): ", re.M)
_ERROR_LINE = re.compile(r"Internal Server Error|Unexpected error serving|Error in the response stream")
_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\S+)')
_EXCEPTION_LINE = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Warning|Exit|Interrupt)\b)", re.M)


def log_problems(text: str) -> list[Problem]:
    """What the server should never have logged: tracebacks, error lines, Python warnings."""
    problems = []
    traceback = _TRACEBACK.search(text)
    error = _ERROR_LINE.search(text)
    if traceback is not None:
        found = list(_EXCEPTION_LINE.finditer(text, traceback.end()))
        exc = found[-1] if found else None  # the last one: chained tracebacks end with the cause's effect
        start = error.start() if error is not None and error.start() < traceback.start() else traceback.start()
        end = text.find("\n", exc.end()) if exc else -1
        chunk = text[start : end if end > 0 else start + 2500]
        detail = chunk if len(chunk) < 1500 else f"{chunk[:500]}\n  ...\n{chunk[-900:]}"
        # Where it broke: the innermost frame of the app (line numbers left out, they move).
        frames = _FRAME.findall(chunk)
        ours = [f for f in frames if "mcp_tools/" in f[0]] or frames
        site = f" in {ours[-1][0].rsplit('mcp_tools/', 1)[-1]}:{ours[-1][1]}" if ours else ""
        problems.append(Problem("server log", f"Traceback: {exc.group(1) if exc else '?'}{site}", detail))
    elif error is not None:
        problems.append(Problem("server log", error.group(0), text[error.start() : error.start() + 1500]))
    warning = _WARNING.search(text)
    if warning is not None:
        problems.append(
            Problem("server log", f"warning: {warning.group(1)}", text[warning.start() : warning.start() + 800])
        )
    return problems
