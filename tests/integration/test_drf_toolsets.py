"""contrib.drf: toolsets declared in code become Tool rows; schemas derived from the serializer
match what every operation returns, for every standard Django field type."""

from __future__ import annotations

import datetime
import io
import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.core.files.base import ContentFile
from django.core.management import call_command
from jsonschema import Draft202012Validator

from mcp_tools.contrib.drf import ModelToolset, register, unregister
from mcp_tools.contrib.drf.compiled import compiled_for
from mcp_tools.contrib.drf.handlers import run
from mcp_tools.exceptions import ToolError
from mcp_tools.models import Tool
from mcp_tools.types import Principal, ToolContext
from tests.drfapp.models import Code, Kind, Specimen
from tests.drfapp.testing import Caller, make_user, perms

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("synced")]

OPERATIONS = ["aggregate", "create", "delete", "get", "list", "update"]


def _context(user: Any, toolset: str, arguments: dict[str, Any]) -> ToolContext:
    return ToolContext(
        arguments=arguments,
        config={"toolset": toolset},
        principal=Principal(key=f"user:{getattr(user, 'username', None)}", user=user),
        tool_name="direct",
        tool_version=1,
        _progress=lambda *a: None,
        _log=lambda *a: None,
        _cancelled=lambda: False,
    )


def _validate(schema: dict[str, Any], instance: Any) -> None:
    """Against the output schema, formats included (date, date-time, uuid, email, ipv4, ...)."""
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    assert not errors, [(list(e.absolute_path), e.message) for e in errors[:5]]


# --------------------------------------------------------------------------- declarations


def _declare(**attrs: Any) -> type[ModelToolset]:
    attrs.setdefault("model", Specimen)
    return type("BadTools", (ModelToolset,), attrs)


@pytest.mark.parametrize(
    ("attrs", "words"),
    [
        ({"fields": ["char", "nope"]}, "nope"),
        ({"fields": ["char"], "filter_fields": ["kind__name"]}, "no '__'"),
        ({"fields": ["char"], "filter_fields": {"char": ["gte"]}}, "does not take ['gte']"),
        ({"fields": ["char", "data"], "filter_fields": ["data"]}, "cannot be filtered"),
        ({"fields": ["char"], "filter_fields": ["integer"]}, "not fields the serializer returns"),
        ({"fields": "__all__", "filter_fields": ["password"]}, "not fields the serializer returns"),
        ({"fields": ["char"], "ordering_fields": ["char"], "ordering": ["-integer"]}, "not in ordering_fields"),
        ({"fields": ["char", "text"], "aggregate_fields": ["text"]}, "not a number or a date"),
        ({"fields": ["char"], "lookup_field": "char"}, "not unique"),
        ({"fields": ["char"], "operations": ["list", "drop"]}, "['drop']"),
        ({}, "set fields"),
        ({"fields": ["char"], "page_size": 500}, "above max_page_size"),
        ({"fields": ["char"], "search_fields": ["owner__password"]}, "'owner__password' looks like a secret"),
        ({"fields": ["char"], "search_fields": ["kind__specimens"]}, "is not a text field"),
    ],
)
def test_a_wrong_declaration_fails_when_it_is_registered(attrs: dict[str, Any], words: str) -> None:
    with pytest.raises(ImproperlyConfigured) as info:
        register(_declare(**attrs))
    assert words in str(info.value)
    unregister("drfapp.BadTools")


def test_fields_all_leaves_out_names_that_look_like_secrets() -> None:
    register(_declare(fields="__all__"))
    try:
        row = compiled_for("drfapp.BadTools").schemas["get"][1]
        assert "char" in row["properties"]
        assert "kinds" in row["properties"]
        assert "password" not in row["properties"]
        assert "api_token" not in row["properties"]
    finally:
        unregister("drfapp.BadTools")
    # Listed explicitly, a secret is exposed (here read-only: never written through a tool).
    own = compiled_for("drfapp.OwnSpecimenTools").schemas
    assert own["get"][1]["properties"]["api_token"]["readOnly"] is True
    assert "api_token" not in own["create"][0]["properties"]


# --------------------------------------------------------------------------- rows


def test_sync_writes_one_row_per_operation_idempotently() -> None:
    tools = {t.name: t for t in Tool.objects.filter(handler_key__startswith="drf.")}
    specimen = {name for name in tools if name.endswith("_specimen") and "_own_" not in name}
    assert specimen == {f"{op}_specimen" for op in OPERATIONS}
    listing = tools["list_specimen"]
    assert (listing.handler_key, listing.handler_config) == ("drf.list", {"toolset": "drfapp.SpecimenTools"})
    assert listing.title == "List specimens"
    assert (listing.read_only_hint, listing.destructive_hint, listing.idempotent_hint) == (True, False, True)
    assert (tools["delete_specimen"].read_only_hint, tools["delete_specimen"].destructive_hint) == (False, True)
    assert (tools["update_specimen"].idempotent_hint, tools["create_specimen"].idempotent_hint) == (True, False)
    assert {s.name for s in listing.required_scopes.all()} == {"specimens:read"}
    assert {s.name for s in tools["create_specimen"].required_scopes.all()} == {"specimens:write"}
    assert listing.input_schema == compiled_for("drfapp.SpecimenTools").schemas["list"][0]
    assert "get_kind" in tools
    versions = {t.name: t.version for t in Tool.objects.all()}
    out = io.StringIO()
    call_command("mcp_sync_toolsets", stdout=out)
    assert "0 created, 0 updated" in out.getvalue()
    assert {t.name: t.version for t in Tool.objects.all()} == versions


def test_a_write_scope_implies_the_read_scope_so_a_writer_can_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 26: a token granted only specimens:write reaches list_specimen too (the sync makes
    write imply read); write_implies_read = False leaves the scopes apart."""
    from mcp_tools.catalog import get_catalog
    from mcp_tools.models import Scope
    from tests.drfapp.mcp_handlers import SpecimenTools

    write = Scope.objects.get(name="specimens:write")
    assert {s.name for s in write.implies.all()} == {"specimens:read"}
    catalog = get_catalog()
    scopes = catalog.scopes.expand(frozenset({"specimens:write"}))
    assert "specimens:read" in scopes
    assert catalog.get("list_specimen").required_scopes <= scopes
    read = Scope.objects.get(name="specimens:read")
    assert not read.implies.exists()  # read does not imply write

    write.implies.clear()
    monkeypatch.setattr(SpecimenTools, "write_implies_read", False)
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    assert not write.implies.exists()


def test_admin_edits_to_names_and_text_survive_a_sync_and_reset_restores_them() -> None:
    tool = Tool.objects.get(name="get_specimen")
    tool.name, tool.title = "fetch_specimen", "Fetch one specimen"
    tool.save()
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    tool.refresh_from_db()
    assert (tool.name, tool.title) == ("fetch_specimen", "Fetch one specimen")
    assert not Tool.objects.filter(name="get_specimen").exists()  # found by binding, not by name
    call_command("mcp_sync_toolsets", "--reset", stdout=io.StringIO())
    tool.refresh_from_db()
    assert (tool.name, tool.title) == ("get_specimen", "Get a specimen")


def test_an_operation_no_longer_declared_is_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.drfapp.mcp_handlers import KindTools

    monkeypatch.setattr(KindTools, "operations", ["list"])
    monkeypatch.setattr(compiled_for("drfapp.KindTools").toolset, "operations", ["list"])
    out = io.StringIO()
    call_command("mcp_sync_toolsets", stdout=out)
    assert "disabled get_kind" in out.getvalue()
    assert Tool.objects.get(name="get_kind").enabled is False


# --------------------------------------------------------------------------- every field type


def _full_specimen(owner: User | None = None) -> Specimen:
    kind = Kind.objects.create(name="alpha")
    other = Kind.objects.create(name="beta")
    specimen = Specimen.objects.create(
        char="Full",
        char_blank="x",
        text="long text",
        colour="green",
        size=2,
        slug="a-slug",
        email="a@example.com",
        url="https://example.com/a",
        ip="2001:db8::1",
        ipv4="192.0.2.1",
        boolean=True,
        maybe=False,
        integer=42,
        small=-3,
        big=2**40,
        positive=7,
        positive_small=8,
        positive_big=2**50,
        floating=2.5,
        decimal=Decimal("12.30"),
        date=datetime.date(2024, 2, 29),
        datetime=datetime.datetime(2024, 3, 1, 12, 30, 15, 123456, tzinfo=datetime.UTC),
        time=datetime.time(9, 15, 30, 250000),
        duration=datetime.timedelta(days=1, hours=2, seconds=3),
        data={"nested": [1, "two", None]},
        binary=b"\x00\x01bytes",
        kind=kind,
        code=Code.objects.create(label="c"),
        owner=owner,
    )
    specimen.file.save("a.txt", ContentFile(b"hello"), save=True)
    specimen.kinds.set([kind, other])
    return specimen


def test_every_operation_returns_what_its_output_schema_says_for_every_field_type(client: Any, media: None) -> None:
    make_user("sam", *perms("specimen"))
    full = _full_specimen()
    Specimen.objects.create(char="Empty")  # every nullable field null, every default
    sam = Caller(client, "sam")
    tools = sam.tools()
    schemas = {
        op: (tools[f"{op}_specimen"]["inputSchema"], tools[f"{op}_specimen"]["outputSchema"]) for op in OPERATIONS
    }
    outputs: dict[str, list[Any]] = {op: [] for op in OPERATIONS}

    page = sam.ok("list_specimen", {"include_total": True})
    outputs["list"].append(page)
    assert page["total"] == 2
    for row in page["items"]:
        outputs["get"].append(sam.ok("get_specimen", {"id": row["id"]}))
    outputs["list"].append(sam.ok("list_specimen", {"order_by": ["-decimal"], "limit": 1}))
    created = sam.ok(
        "create_specimen",
        {
            "char": "Made",
            "colour": "red",
            "size": None,
            "uuid": str(uuid.uuid4()),
            "decimal": "1.5",
            "date": "2020-01-02",
            "datetime": "2020-01-02T03:04:05+02:00",
            "time": "23:59",
            "duration": "P2DT3H",
            "data": [1, {"a": None}],
            "kind": full.kind_id,
            "kinds": [full.kind_id],
            "floating": -0.25,
            "ip": "10.0.0.1",
        },
    )
    outputs["create"].append(created)
    outputs["update"].append(sam.ok("update_specimen", {"id": created["id"], "data": {"duration": None, "kinds": []}}))
    for group_by in (None, "colour", "kind", "boolean", "date", "size"):
        arguments: dict[str, Any] = {
            "sum": ["integer", "decimal", "floating", "big"],
            "avg": ["integer", "decimal", "doubled"],
            "min": ["date", "datetime", "decimal"],
            "max": ["datetime", "integer", "floating"],
        }
        if group_by:
            arguments["group_by"] = group_by
        outputs["aggregate"].append(sam.ok("aggregate_specimen", arguments))
    outputs["delete"].append(sam.ok("delete_specimen", {"id": created["id"]}))

    for op, results in outputs.items():
        assert results, op
        for result in results:
            _validate(schemas[op][1], result)

    row = outputs["get"][0] if outputs["get"][0]["char"] == "Empty" else outputs["get"][1]
    assert row["size"] is None
    assert row["floating"] is None
    assert row["binary"] is None
    assert row["file"] is None
    row = next(r for r in outputs["get"] if r["char"] == "Full")
    assert row["decimal"] == "12.30"
    assert row["datetime"] == "2024-03-01T12:30:15.123456Z"
    assert row["date"] == "2024-02-29"
    assert row["time"] == "09:15:30.250000"
    assert row["duration"] == "P1DT02H00M03S"
    assert row["big"] == 2**40
    assert row["positive_big"] == 2**50
    assert row["data"] == {"nested": [1, "two", None]}
    assert row["binary"] == "AAFieXRlcw=="
    assert row["file"].startswith("/media/specimens/a")
    assert row["kind"] == full.kind_id
    assert row["code"] == str(full.code_id)
    assert sorted(row["kinds"]) == sorted(full.kinds.values_list("pk", flat=True))
    assert row["doubled"] == 84
    assert row["lower"] == "full"
    assert "password" not in row
    assert "api_token" not in row
    assert created["datetime"] == "2020-01-02T01:04:05Z"
    assert created["time"] == "23:59:00"
    assert created["duration"] == "P2DT03H00M00S"
    assert created["decimal"] == "1.50"
    totals = outputs["aggregate"][0]["groups"][0]
    assert totals["count"] == 3
    assert totals["sum_decimal"] == "13.80"
    assert totals["min_date"] == "2020-01-02"


def test_input_schemas_state_what_the_serializer_checks() -> None:
    schemas = compiled_for("drfapp.SpecimenTools").schemas
    create = schemas["create"][0]
    props = create["properties"]
    assert create["required"] == ["char"]
    assert create["additionalProperties"] is False
    assert props["char"]["maxLength"] == 30
    assert props["char"]["minLength"] == 1
    assert props["colour"]["enum"] == ["red", "green"]
    assert props["colour"]["default"] == "red"
    assert props["size"]["enum"] == [1, 2, None]
    assert props["integer"]["minimum"] == -100
    assert props["integer"]["maximum"] == 100
    assert props["positive"]["minimum"] == 0
    assert props["decimal"]["type"] == "string"
    assert props["decimal"]["pattern"] == r"^-?\d{1,5}(\.\d{1,2})?$"
    assert props["date"]["format"] == "date"
    assert props["datetime"]["format"] == "date-time"
    assert props["uuid"]["format"] == "uuid"
    assert props["email"]["anyOf"] == [{"format": "email"}, {"const": ""}]  # blank=True: "" too
    assert props["kind"]["type"] == ["integer", "null"]
    assert "drfapp.Kind" in props["kind"]["description"]
    assert props["code"]["format"] == "uuid"
    assert props["kinds"] == {
        "type": "array",
        "items": {"type": "integer"},
        "description": props["kinds"]["description"],
    }
    assert props["data"] == {"description": "Data.", "default": None} or "type" not in props["data"]
    for read_only in ("id", "created", "doubled", "lower", "binary", "file"):
        assert read_only not in props
    assert schemas["get"][1]["properties"]["created"]["readOnly"] is True
    update = schemas["update"][0]
    assert update["required"] == ["id", "data"]
    assert "required" not in update["properties"]["data"]


def test_a_declared_lookup_field_names_the_row(client: Any) -> None:
    Kind.objects.create(name="alpha")
    anyone = Caller(client, "nobody")  # KindTools requires no permission
    assert anyone.ok("get_kind", {"name": "alpha"})["name"] == "alpha"
    assert anyone.refused("get_kind", {"name": "zeta"}) == "No kind with name 'zeta'."
    assert set(anyone.tools()) == {"get_kind", "list_kind"}


# --------------------------------------------------------------------------- writes


def test_invalid_data_comes_back_keyed_by_field_and_nothing_is_saved(client: Any) -> None:
    make_user("sam", *perms("specimen"))
    sam = Caller(client, "sam")
    # What the input schema states is refused before the handler runs, naming the argument...
    refused = sam.refused("create_specimen", {"char": "x" * 31})
    assert refused.startswith("Invalid arguments for tool 'create_specimen': arguments.char:")
    # ...what only the serializer knows comes back keyed by field.
    result = sam.call("create_specimen", {"char": "ok", "colour": "red", "ip": "not an address", "kinds": [999]})
    assert result["isError"] is True
    errors = result["structuredContent"]["errors"]
    assert errors == {
        "ip": ["Enter a valid IPv4 or IPv6 address."],
        "kinds": ['Invalid pk "999" - object does not exist.'],
    }
    assert "ip: Enter a valid IPv4 or IPv6 address." in result["content"][0]["text"]
    # The model's own validation (clean(), full_clean) runs too, inside the same transaction.
    result = sam.call("create_specimen", {"char": "forbidden"})
    assert result["structuredContent"]["errors"] == {"char": ["This name is reserved."]}
    assert not Specimen.objects.exists()
    made = sam.ok("create_specimen", {"char": "fine", "integer": 5})
    assert Specimen.objects.get(pk=made["id"]).integer == 5
    result = sam.call("update_specimen", {"id": made["id"], "data": {"char": "forbidden", "integer": 6}})
    assert result["structuredContent"]["errors"] == {"char": ["This name is reserved."]}
    assert Specimen.objects.get(pk=made["id"]).integer == 5  # rolled back


def test_update_is_partial_and_delete_removes_the_row(client: Any) -> None:
    make_user("sam", *perms("specimen"))
    sam = Caller(client, "sam")
    specimen = Specimen.objects.create(char="one", integer=1, text="keep")
    updated = sam.ok("update_specimen", {"id": specimen.pk, "data": {"integer": 2}})
    assert (updated["integer"], updated["text"], updated["doubled"]) == (2, "keep", 4)
    assert sam.ok("delete_specimen", {"id": specimen.pk}) == {"deleted": True, "id": specimen.pk}
    assert not Specimen.objects.filter(pk=specimen.pk).exists()
    assert sam.refused("delete_specimen", {"id": specimen.pk}) == f"No specimen with id {specimen.pk}."
    assert sam.refused("get_specimen", {"id": "abc"}).endswith("arguments.id: 'abc' is not of type 'integer'")


def test_a_protected_row_is_not_deleted() -> None:
    from project.library.models import Author, Book

    register(_declare(model=Author, fields=["id", "name"], operations=["delete"]))
    try:
        root = make_user("root", superuser=True)
        author = Author.objects.create(name="Ann")
        Book.objects.create(title="T", isbn="1", author=author, genre="fiction", price=1, pages=1, owner=root)
        with pytest.raises(ToolError) as info:
            run("delete", _context(root, "library.BadTools", {"id": author.pk}))
        assert str(info.value) == "This author cannot be deleted: books refer to it."
        assert Author.objects.filter(pk=author.pk).exists()
    finally:
        unregister("library.BadTools")


# --------------------------------------------------------------------------- whose data


def test_each_user_reaches_only_their_own_rows(client: Any) -> None:
    alice = make_user("alice", *perms("specimen"))
    bob = make_user("bob", *perms("specimen"))
    mine = Specimen.objects.create(char="alice's", integer=1, owner=alice)
    theirs = Specimen.objects.create(char="bob's", integer=2, owner=bob)
    as_alice = Caller(client, "alice")
    assert [row["char"] for row in as_alice.ok("list_own_specimen")["items"]] == ["alice's"]
    assert as_alice.ok("get_own_specimen", {"id": mine.pk})["char"] == "alice's"
    for name, arguments in (
        ("get_own_specimen", {"id": theirs.pk}),
        ("update_own_specimen", {"id": theirs.pk, "data": {"integer": 9}}),
        ("delete_own_specimen", {"id": theirs.pk}),
    ):
        assert as_alice.refused(name, arguments) == f"No specimen with id {theirs.pk}."
    made = as_alice.ok("create_own_specimen", {"char": "new"})
    assert Specimen.objects.get(pk=made["id"]).owner == alice
    theirs.refresh_from_db()
    assert theirs.integer == 2


def test_tools_follow_model_permissions_and_scopes(client: Any) -> None:
    make_user("viewer", *perms("specimen", "view"))
    make_user("writer", *perms("specimen", "view", "add"))
    make_user("nobody")
    specimen_tools = {f"{op}_specimen" for op in OPERATIONS}
    assert set(Caller(client, "viewer").tools()) & specimen_tools == {
        "list_specimen",
        "get_specimen",
        "aggregate_specimen",
    }
    assert set(Caller(client, "writer").tools()) & specimen_tools == {
        "list_specimen",
        "get_specimen",
        "aggregate_specimen",
        "create_specimen",
    }
    assert not set(Caller(client, "nobody").tools()) & specimen_tools
    # Scopes still apply: list needs specimens:read, create specimens:write.
    assert set(Caller(client, "writer", "specimens:read").tools()) & specimen_tools == {
        "list_specimen",
        "get_specimen",
        "aggregate_specimen",
    }
    _, message, _ = Caller(client, "viewer").mcp.request("tools/call", {"name": "create_specimen", "arguments": {}})
    assert message["error"]["message"] == "Unknown tool: create_specimen"


def test_the_handler_checks_permissions_itself() -> None:
    """A task worker does not go through the catalog: the handler refuses a user without them."""
    viewer = make_user("viewer", *perms("specimen", "view"))
    for user in (viewer, None):
        with pytest.raises(ToolError, match="You may not create specimens"):
            run("create", _context(user, "drfapp.SpecimenTools", {"char": "x"}))
    assert not Specimen.objects.exists()


def test_model_tools_run_as_tasks_and_are_audited_like_any_tool(client: Any) -> None:
    from mcp_tools.models import AuditEvent

    make_user("sam", *perms("specimen"))
    Specimen.objects.create(char="a", integer=3)
    tool = Tool.objects.get(name="aggregate_specimen")
    tool.task_support = "optional"  # an admin edit; the next sync keeps it
    tool.save()
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    sam = Caller(client, "sam", version="2025-11-25")
    arguments = {"sum": ["integer"]}
    created = sam.mcp.call(
        "tools/call", {"name": "aggregate_specimen", "arguments": arguments, "task": {"ttl": 60_000}}
    )
    result = sam.mcp.call("tasks/result", {"taskId": created["task"]["taskId"]})
    assert result["structuredContent"]["groups"] == [{"count": 1, "sum_integer": 3}]
    audit = AuditEvent.objects.get(tool_name="aggregate_specimen")
    assert (audit.principal_key, audit.outcome) == ("user:sam", "ok")


def test_the_system_check_names_rows_out_of_date_with_their_toolset() -> None:
    from mcp_tools.contrib.drf.checks import check_rows

    assert check_rows(databases=["default"]) == []
    Tool.objects.filter(name="get_specimen").update(output_schema={"type": "object"})
    Tool.objects.filter(name="list_kind").delete()
    messages = check_rows(databases=["default"])
    assert [m.id for m in messages] == ["mcp_tools_drf.W001", "mcp_tools_drf.W001"]
    assert sorted(m.msg for m in messages) == [
        "Model tool get_specimen (schemas out of date).",
        "Model tool list_kind (no tool row yet).",
    ]
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    assert check_rows(databases=["default"]) == []


# --------------------------------------------------------------------------- generated words (issue 34, item 8)


def test_generated_titles_take_an_before_a_vowel_sound() -> None:
    from types import SimpleNamespace

    from mcp_tools.contrib.drf.sync import description, title

    def toolset(one: str, many: str) -> Any:
        opts = SimpleNamespace(verbose_name=one, verbose_name_plural=many)
        return SimpleNamespace(titles={}, descriptions={}, opts=opts, lookup_argument="id")

    invoice = toolset("invoice", "invoices")
    assert [title(invoice, op) for op in ("get", "create", "update", "delete")] == [
        "Get an invoice",
        "Create an invoice",
        "Update an invoice",
        "Delete an invoice",
    ]
    assert description(invoice, "create").startswith("Create an invoice.")
    assert title(toolset("user", "users"), "get") == "Get a user"
    assert title(toolset("hour entry", "hour entries"), "create") == "Create an hour entry"
    assert title(toolset("SMS message", "SMS messages"), "get") == "Get an SMS message"
    assert title(toolset("customer", "customers"), "get") == "Get a customer"


def _kind_reader(scope: str) -> type[ModelToolset]:
    return type(
        "KindReaderTools",
        (ModelToolset,),
        {
            "__module__": __name__,
            "model": Kind,
            "name": "kind_reader",
            "fields": ["id", "name"],
            "operations": ["list", "get"],
            "required_scopes": [scope],
            "get_required_permissions": lambda self, operation: [],
        },
    )


def test_a_scope_description_names_every_model_it_guards() -> None:
    from mcp_tools.models import Scope

    # SpecimenTools: list needs specimens:read, create specimens:write.
    assert Scope.objects.get(name="specimens:read").description == "Read specimens"
    assert Scope.objects.get(name="specimens:write").description == "Create specimens"
    register(_kind_reader("specimens:read"))
    try:
        call_command("mcp_sync_toolsets", stdout=io.StringIO())
        assert Scope.objects.get(name="specimens:read").description == "Read kinds and specimens"
        # A description an admin wrote is theirs: the next sync leaves it.
        Scope.objects.filter(name="specimens:read").update(description="Look at the collection")
        call_command("mcp_sync_toolsets", stdout=io.StringIO())
        assert Scope.objects.get(name="specimens:read").description == "Look at the collection"
    finally:
        unregister("drfapp.KindReaderTools")


def test_the_old_generated_scope_description_is_rewritten() -> None:
    from mcp_tools.models import Scope

    Scope.objects.filter(name="specimens:read").update(description="Model tools of specimens")
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    assert Scope.objects.get(name="specimens:read").description == "Read specimens"


def test_nul_in_a_value_is_refused_by_name_not_an_unexpected_failure(client: Any) -> None:
    # PostgreSQL refuses NUL in any query: a filter, search or lookup holding one failed there as
    # "failed unexpectedly" (and logged an exception per call). Refused with the argument's name
    # on every database, as DRF's fields refuse it in what is written.
    make_user("sam", *perms("specimen"))
    sam = Caller(client, "sam")
    made = sam.ok("create_specimen", {"char": "fine"})
    nul = "a\x00"
    for tool, arguments, where in (
        ("list_specimen", {"filter": {"char": {"exact": nul}}}, "filter.char.exact"),
        ("list_specimen", {"filter": {"char": {"icontains": nul}}}, "filter.char.icontains"),
        ("list_specimen", {"filter": {"char": {"in": ["b", nul]}}}, "filter.char.in[1]"),
        ("list_specimen", {"search": nul}, "search"),
    ):
        assert sam.refused(tool, arguments) == f"{where}: null characters (U+0000) are not allowed"
    Kind.objects.create(name="alpha")
    assert (
        Caller(client, "nobody").refused("get_kind", {"name": nul}) == "name: null characters (U+0000) are not allowed"
    )
    written = sam.call("create_specimen", {"char": nul})
    assert written["isError"] is True
    assert written["structuredContent"]["errors"] == {"char": ["Null characters are not allowed."]}
    stored = sam.call("update_specimen", {"id": made["id"], "data": {"data": {"k": [nul]}}})
    assert stored["isError"] is True
    assert stored["structuredContent"]["errors"] == {"data": ["Null characters are not allowed."]}
    assert Specimen.objects.get(pk=made["id"]).data == {}
