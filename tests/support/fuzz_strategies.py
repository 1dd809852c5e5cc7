"""What the fuzzer sends: messages drawn from each revision's schema.json, and ways to break them.

Hypothesis (through hypothesis-jsonschema) draws client messages from the official schemas in
tests/spec; a seeded ``random.Random`` then mutates and replays them cheaply: wrong types,
missing and extra fields, huge and deep values, odd unicode, odd ids, broken bodies and
headers. Nothing here talks to a server.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

SPEC_DIR = Path(__file__).resolve().parents[1] / "spec"
LEGACY = ("2025-03-26", "2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
EXT_TASKS = "ext-tasks"
SUPPORTED = (*LEGACY, MODERN)
MAX_BODY = 1_048_576  # the server's MCP_TOOLS["MAX_BODY_BYTES"] default

# --------------------------------------------------------------------------- schema strategies

_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_OPAQUE = frozenset({"const", "enum", "default", "examples", "required"})


def _refs(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            out.add(ref.rsplit("/", 1)[-1])
        for value in node.values():
            _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)
    return out


def _allof_refs(node: Any, out: set[str]) -> set[str]:
    """Definitions that appear as an item of some ``allOf``: they are merged with others."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "allOf" and isinstance(value, list):
                out.update(
                    item["$ref"].rsplit("/", 1)[-1] for item in value if isinstance(item, dict) and "$ref" in item
                )
            _allof_refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _allof_refs(value, out)
    return out


def _slim(node: Any, *, bounded: bool = True) -> Any:
    """A schema node for generation: no prose, and objects and arrays kept small.

    Descriptions are dropped (hypothesis-jsonschema re-encodes schemas often, so their size is
    its cost); open objects get ``maxProperties`` and arrays ``maxItems`` so that drawing stays
    cheap. Nodes merged through ``allOf`` keep their own sizes (a bound there could make the
    merge unsatisfiable).
    """
    if isinstance(node, list):
        return [_slim(item, bounded=bounded) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    if bounded and (node.get("type") == "object" or "properties" in node) and "maxProperties" not in node:
        # Records get a couple of extra members; maps (no declared properties) one entry.
        out["maxProperties"] = len(node.get("required", [])) + (2 if node.get("properties") else 1)
    if bounded and node.get("type") == "array" and "maxItems" not in node:
        out["maxItems"] = 3
    for key, value in node.items():
        if key in ("description", "$comment", "title") and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _slim(sub, bounded=bounded) for name, sub in value.items()}
        elif key in _OPAQUE:
            out[key] = value
        else:
            out[key] = _slim(value, bounded=bounded and key != "allOf")
    return out


@cache
def _generation_schema(rev: str) -> tuple[dict[str, Any], str]:
    schema = json.loads((SPEC_DIR / f"{rev}.schema.json").read_text())
    key = "$defs" if "$defs" in schema else "definitions"
    defs = schema[key]
    # JSONValue/JSONObject refer to each other, which hypothesis-jsonschema cannot resolve:
    # draw from a non-recursive subset of them (one level deep) instead.
    leaf = {"type": ["string", "integer", "boolean"]}
    flat_object = {"type": "object", "additionalProperties": leaf, "maxProperties": 2}
    if "JSONValue" in defs:
        defs["JSONValue"] = {"anyOf": [leaf, {"type": "array", "items": leaf, "maxItems": 3}, flat_object]}
    if "JSONObject" in defs:
        defs["JSONObject"] = flat_object
    # Answers to server requests inside 2026-07-28 requests (inputResponses) may be sampling
    # results, whose nested content unions make hypothesis-jsonschema slow: draw the other kinds.
    if isinstance(defs.get("InputResponse"), dict) and "anyOf" in defs["InputResponse"]:
        kinds = [
            ref for ref in defs["InputResponse"]["anyOf"] if not ref.get("$ref", "").endswith("CreateMessageResult")
        ]
        defs["InputResponse"] = {**defs["InputResponse"], "anyOf": kinds}
    in_allof = _allof_refs(defs, set())
    slim = {name: _slim(sub, bounded=name not in in_allof) for name, sub in defs.items()}
    return {"$schema": schema.get("$schema"), key: slim}, key


def _members(rev: str, union: str) -> list[str]:
    schema, key = _generation_schema(rev)
    node = schema[key].get(union)
    if node is None:
        return []
    if "anyOf" in node:
        return [ref["$ref"].rsplit("/", 1)[-1] for ref in node["anyOf"]]
    return [union]


@cache
def schema_definitions() -> tuple[tuple[str, str], ...]:
    """(schema file, definition) of every message a client may send, per revision."""
    found: list[tuple[str, str]] = []
    for rev in SUPPORTED:
        names = _members(rev, "ClientRequest") + _members(rev, "ClientNotification")
        if rev == "2025-03-26":
            names.append("JSONRPCBatchRequest")
        found += [(rev, name) for name in names]
    found += [(EXT_TASKS, name) for name in ("GetTaskRequest", "UpdateTaskRequest", "CancelTaskRequest")]
    return tuple(found)


@cache
def definition_strategy(rev: str, name: str) -> st.SearchStrategy[Any]:
    schema, key = _generation_schema(rev)
    keep: dict[str, Any] = {}
    todo = [name]
    while todo:  # only the definitions this one reaches: a smaller schema draws faster
        current = todo.pop()
        if current not in keep:
            keep[current] = schema[key][current]
            todo.extend(_refs(keep[current], set()))
    return from_schema({"$schema": schema["$schema"], key: keep, "$ref": f"#/{key}/{name}"})


@dataclass(frozen=True)
class Drawn:
    """One schema-valid client message: from which revision's schema and definition."""

    rev: str
    name: str
    message: Any

    @property
    def modern(self) -> bool:
        return self.rev in (MODERN, EXT_TASKS)

    @property
    def notification(self) -> bool:
        return self.name.endswith("Notification")


@cache
def tagged_messages(rev: str, name: str) -> st.SearchStrategy[Drawn]:
    """Messages of one definition, tagged with it; built on first use (hypothesis-jsonschema takes
    a while per definition), then reused: a fresh strategy per draw costs far more."""
    return definition_strategy(rev, name).map(lambda message: Drawn(rev, name, message))


def schema_messages() -> st.SearchStrategy[Drawn]:
    """A message drawn from one of the official schemas (which one is drawn too)."""
    return st.sampled_from(schema_definitions()).flatmap(lambda pair: tagged_messages(*pair))


def draw_pool(run_seed: int, per_definition: int) -> list[Drawn]:
    """``per_definition`` messages of every client message definition of every schema.

    One small Hypothesis run per definition, seeded from ``run_seed``: every definition is
    covered (a single run over all of them favours the first ones), and a seed replays the pool.
    """
    pool: list[Drawn] = []
    for index, (rev, name) in enumerate(schema_definitions()):

        @seed(run_seed * 1000 + index)
        @settings(
            max_examples=per_definition,
            deadline=None,
            database=None,
            derandomize=False,
            phases=[Phase.generate],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
            print_blob=False,
        )
        @given(tagged_messages(rev, name))
        def collect(drawn: Drawn) -> None:
            pool.append(drawn)

        collect()
    return pool


# --------------------------------------------------------------------------- odd values

ODD_STRINGS = (
    "",
    " ",
    "\x00",
    "a\x00b",
    "\x7f\x1b[31m",
    "\r\n\t",
    "\\",
    '"',
    "\u202etxt.exe",  # right-to-left override
    "\u200f\u05e9\u05dc\u05d5\u05dd\u200e",  # RLM, Hebrew, LRM
    "\ufeff",
    "\uffff\ufffe",
    "\U0010ffff",
    "\ud800",  # lone surrogates: escaped in JSON, invalid as text
    "\udfff",
    "a\udc00b",
    "\U0001f642",
    "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
    "\U0001d518\U0001d52b\U0001d526",
    "e\u0301\u0301\u0301\u0301",
    "\u0130stanbul",
    "' OR 1=1 --",
    "%s%n%x",
    "{0}{1}",
    "${jndi:ldap://x}",
    "../../../../etc/passwd",
    "<script>alert(1)</script>",
    "null",
    "true",
    "-0",
    "1e999",
    "NaN",
    "__proto__",
    "constructor",
    "=?base64?ZWNobw==?=",
    "=?base64?!!!?=",
)

EDGE_NUMBERS: tuple[Any, ...] = (
    0,
    -1,
    1,
    2**31,
    -(2**31) - 1,
    2**53 + 1,
    2**63 - 1,
    -(2**63),
    2**64 - 1,
    2**64,
    10**30,
    -(10**40),
    0.5,
    1.0,
    -0.0,
    1e308,
    -1e308,
    5e-324,
    3.141592653589793,
)


class Raw(str):
    """JSON text spliced into a body as is (deep nesting, odd number literals)."""

    __slots__ = ()


def odd_string(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.55:
        return rng.choice(ODD_STRINGS)
    if roll < 0.8:
        return "".join(chr(rng.choice((rng.randrange(0x20, 0x7F), rng.randrange(0x80, 0x2FFFF)))) for _ in range(8))
    if roll < 0.95:
        return rng.choice(ODD_STRINGS) * rng.randrange(2, 200)
    return rng.choice("ab\u00e9\U0001f642") * rng.randrange(1_000, 60_000)


def json_value(rng: random.Random, depth: int = 3) -> Any:
    """Any JSON value, small."""
    kind = rng.randrange(8 if depth > 0 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice(EDGE_NUMBERS)
    if kind == 3:
        return rng.randrange(-1000, 1000)
    if kind in (4, 5):
        return odd_string(rng)
    if kind == 6:
        return [json_value(rng, depth - 1) for _ in range(rng.randrange(4))]
    return {odd_string(rng)[:40]: json_value(rng, depth - 1) for _ in range(rng.randrange(4))}


def other_type(rng: random.Random, value: Any) -> Any:
    """A JSON value whose type differs from ``value``'s."""
    for _ in range(20):
        candidate = json_value(rng, 1)
        if type(candidate) is not type(value) and not (isinstance(value, int | float) and isinstance(candidate, float)):
            return candidate
    return [value]


def deep_value(rng: random.Random, depth: int | None = None) -> Raw:
    """Nested arrays or objects, up to past the 1024 levels common JSON parsers allow."""
    depth = depth or rng.choice((64, 256, 500, 990, 999, 1010, 1023, 1025, 3000))
    if rng.random() < 0.5:
        return Raw("[" * depth + "]" * depth)
    return Raw('{"a":' * depth + "1" + "}" * depth)


def huge_value(rng: random.Random, over: bool = False) -> Any:
    """A large string or array; ``over`` makes it larger than the body limit on its own."""
    size = MAX_BODY + rng.randrange(1, 200_000) if over else rng.choice((10_000, 100_000, 500_000, 1_000_000))
    kind = rng.randrange(3)
    if kind == 0:
        return "x" * size
    if kind == 1:
        return Raw("[" + ",".join(["0"] * (size // 2)) + "]")
    return "\U0001f642" * (size // 4)


def odd_id(rng: random.Random) -> Any:
    """A JSON-RPC id of any JSON type: valid (string, integer) or not."""
    roll = rng.randrange(12)
    if roll == 0:
        return None
    if roll == 1:
        return rng.random() < 0.5
    if roll in (2, 3):
        return rng.choice(EDGE_NUMBERS)
    if roll == 4:
        return rng.choice(([], {}, [1], {"id": 1}, [None], {"": ""}))
    if roll == 5:
        return "i" * rng.choice((300, 5_000, 100_000, 900_000))
    if roll == 6:
        return Raw(rng.choice(("1e400", "-1e400", "123456789012345678901234567890", "1.0e+2", "-0", "0.0")))
    return odd_string(rng)


def encode(value: Any, rng: random.Random | None = None) -> bytes:
    """JSON bytes of ``value`` with any ``Raw`` parts spliced in as they are.

    Lone surrogates are escaped (``ensure_ascii``) or, now and then, written as the invalid
    UTF-8 they would be (``surrogatepass``).
    """
    raws: list[str] = []

    def swap(node: Any) -> Any:
        if isinstance(node, Raw):
            raws.append(str(node))
            return f"\x00RAW{len(raws) - 1}\x00"
        if isinstance(node, dict):
            return {key: swap(item) for key, item in node.items()}
        if isinstance(node, list):
            return [swap(item) for item in node]
        return node

    ascii_only = rng is None or rng.random() < 0.8
    text = json.dumps(swap(value), ensure_ascii=ascii_only, allow_nan=False)
    for index, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x00RAW{index}\x00", ensure_ascii=ascii_only), raw, 1)
    return text.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- mutations


def _slots(value: Any, limit: int = 400) -> list[tuple[Any, Any]]:
    """(container, key) of every value inside ``value`` (breadth first, bounded)."""
    found: list[tuple[Any, Any]] = []
    queue = [value]
    while queue and len(found) < limit:
        node = queue.pop(0)
        if isinstance(node, dict):
            for key, item in node.items():
                found.append((node, key))
                queue.append(item)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                found.append((node, index))
                queue.append(item)
    return found


def mutate(rng: random.Random, message: Any, rounds: int | None = None) -> Any:
    """A copy of ``message`` with one to three structural changes."""
    message = copy.deepcopy(message)
    for _ in range(rounds or rng.randrange(1, 4)):
        if not isinstance(message, dict | list):
            return message
        slots = _slots(message)
        op = rng.randrange(11)
        if op == 0 and slots:  # wrong type somewhere
            container, key = rng.choice(slots)
            container[key] = other_type(rng, container[key])
        elif op == 1 and slots:  # a missing field
            container, key = rng.choice(slots)
            if isinstance(container, dict):
                del container[key]
        elif op == 2:  # an extra field
            targets = [message] + [c[k] for c, k in slots if isinstance(c[k], dict)]
            target = rng.choice(targets)
            if isinstance(target, dict):
                target[odd_string(rng)[:60] or "extra"] = json_value(rng)
        elif op == 3 and isinstance(message, dict):
            message["jsonrpc"] = rng.choice(("1.0", "2.0 ", 2.0, 2, None, "", "2.00"))
        elif op == 4 and isinstance(message, dict):
            method = message.get("method")
            message["method"] = rng.choice(
                (
                    str(method).upper(),
                    f"{method} ",
                    f"{method}/",
                    f"rpc.{method}",
                    "",
                    None,
                    7,
                    ["tools/call"],
                    odd_string(rng),
                    "tools/list\x00",
                )
            )
        elif op == 5 and isinstance(message, dict):
            message["params"] = rng.choice(([], "params", 0, True, [{"name": "echo"}], odd_string(rng)))
        elif op == 6 and isinstance(message, dict):
            message["id"] = odd_id(rng)
        elif op == 7 and slots:  # very deep somewhere
            container, key = rng.choice(slots)
            container[key] = deep_value(rng, rng.choice((50, 200, 500, 900, 1000, 1020)))
        elif op == 8 and slots:  # big somewhere, still under the body limit
            container, key = rng.choice(slots)
            container[key] = "y" * rng.choice((5_000, 50_000, 300_000))
        elif op == 9 and slots:  # odd text somewhere
            container, key = rng.choice(slots)
            container[key] = odd_string(rng)
        elif op == 10 and isinstance(message, dict):
            message.pop(rng.choice(("jsonrpc", "method", "id", "params")), None)
    return message


def broken_body(rng: random.Random, valid: bytes) -> bytes:
    """Bytes that are not one well-formed JSON value (or are JSON of the wrong shape)."""
    roll = rng.randrange(16)
    if roll == 0:
        return valid[: rng.randrange(max(1, len(valid)))]
    if roll == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    if roll == 2:
        return valid + rng.choice((b"x", b"}", b",", b"\x00", b" {}", b"\n\n{}"))
    if roll == 3:
        return b"\xef\xbb\xbf" + valid  # a UTF-8 byte order mark
    if roll == 4:
        return valid.replace(b'"', b"'", 2)
    if roll == 5:
        return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\xff\xfe\xc3\x28"}}'
    if roll == 6:
        return b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}'
    if roll == 7:
        return b'{"jsonrpc":"2.0","id":1,"id":"x","method":"ping","method":"tools/list"}'
    if roll == 8:
        return rng.choice((b"", b" ", b"null", b"true", b"0", b'""', b"{}", b"[]", b"[[]]", b"[{}]", b"[null]"))
    if roll == 9:
        return rng.choice((b"NaN", b"Infinity", b"-", b"1e99999", b"[1,]", b"{,}", b'{"a"}', b"\x00"))
    if roll == 10:
        return (
            b'{"jsonrpc":"2.0","id":'
            + rng.choice((b"1e400", b"99999999999999999999999", b"-0", b"0x10"))
            + (b',"method":"ping"}')
        )
    if roll == 11:
        depth = rng.choice((1000, 1024, 1025, 5000))
        return b"[" * depth + b"]" * depth
    if roll == 12:
        return valid.decode("utf-8", "replace").encode("utf-16")
    if roll == 13:
        return b"  \n\t " + valid + b"\r\n"
    if roll == 14:
        return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"\\u0000" * 1000 + b'"}}'
    return b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


# --------------------------------------------------------------------------- header values


def odd_header_value(rng: random.Random) -> str | bytes:
    """A header value HTTP allows (no control characters), often not ASCII or not sensible."""
    roll = rng.randrange(8)
    if roll == 0:
        return ""
    if roll == 1:
        return " padded "
    if roll == 2:  # visible ASCII and obs-text: RFC 9110 field-value characters
        return bytes(
            rng.choice((rng.randrange(0x21, 0x7F), rng.randrange(0x80, 0x100))) for _ in range(rng.randrange(1, 40))
        )
    if roll == 3:
        return "é🙂".encode() + b"\xff"
    if roll == 4:
        return "v" * rng.choice((100, 2_000, 6_000))
    if roll == 5:
        return "=?base64?" + rng.choice(("", "AAAA", "////", "w6k=", "%%%")) + "?="
    if roll == 6:
        return "\t"
    return rng.choice(("null", "undefined", "0", "-1", "a,b", "2025-11-25, 2026-07-28", "*"))
