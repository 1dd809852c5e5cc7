"""contrib.drf output without per-call checks: a kind may vouch for its tools' structuredContent
(``ToolKind.trusted_output``) and the runner then skips the output-schema check, but only for
a row that still states the schema the kind derives; the list operation writes rows through one
writer per field built once, whose output equals the DRF serializer's for every field type."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework import serializers

from mcp_tools.catalog import compile_tool
from mcp_tools.contrib.drf import ModelToolset, register, unregister
from mcp_tools.contrib.drf import query as q
from mcp_tools.contrib.drf.compiled import compiled_for
from mcp_tools.models import Tool
from mcp_tools.registry import ToolKind, registry
from mcp_tools.types import Principal
from tests.drfapp.models import Kind, Specimen
from tests.drfapp.testing import Caller, make_user, perms
from tests.integration.test_drf_toolsets import _full_specimen
from tests.support.mcp_client import Mcp

pytestmark = [pytest.mark.django_db]


def _row(name: str) -> dict[str, Any]:
    values = dict(Tool.objects.filter(name=name).values()[0])
    values["pk"] = values["id"]
    return values


# --------------------------------------------------------------------------- the core mechanism

KEY = "tests.vouched"
OUTPUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.fixture
def liar() -> Iterator[None]:
    """A kind that returns what its derived output schema forbids, and says it trusts itself when
    its config says so: shows what the runner checks and what it leaves to the kind."""
    registry.register(
        ToolKind(
            KEY,
            lambda ctx: {"n": "not a number"},
            config_schema={"type": "object", "properties": {"trust": {"type": "boolean"}}},
            schemas=lambda config: ({"type": "object"}, OUTPUT),
            trusted_output=lambda config: bool(config.get("trust")),
        )
    )
    for name, trust in (("vouched", True), ("checked", False)):
        tool = Tool(name=name, handler_key=KEY, handler_config={"trust": trust})
        tool.full_clean()
        tool.save()
    yield
    registry.unregister(KEY)


def test_the_runner_skips_the_output_check_only_where_the_kind_vouches_for_the_rows_schema(
    client: Any, liar: None
) -> None:
    mcp = Mcp(client).modern()
    checked = mcp.call("tools/call", {"name": "checked", "arguments": {}})
    assert checked["isError"] is True
    assert checked["content"][0]["text"] == "Tool 'checked' produced output that does not match its output schema."
    vouched = mcp.call("tools/call", {"name": "vouched", "arguments": {}})
    assert vouched.get("isError") is not True
    assert vouched["structuredContent"] == {"n": "not a number"}

    # A row whose output schema is no longer the derived one is checked, trusted kind or not.
    assert compile_tool(_row("vouched")).output_trusted is True
    Tool.objects.filter(name="vouched").update(output_schema={**OUTPUT, "description": "edited"})
    assert compile_tool(_row("vouched")).output_trusted is False
    assert compile_tool(_row("checked")).output_trusted is False


# --------------------------------------------------------------------------- the DRF kinds


class DeclaredSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    shout = serializers.SerializerMethodField()

    class Meta:
        model = Kind
        fields = ["id", "name", "shout"]

    def get_shout(self, obj: Kind) -> str:
        return obj.name.upper()


@pytest.fixture
def declared(synced: None) -> Iterator[None]:
    @register
    class DeclaredKindTools(ModelToolset):
        model = Kind
        name = "declared_kind"
        serializer_class = DeclaredSerializer
        operations = ["list", "get"]

        def get_required_permissions(self, operation: str) -> list[str]:
            return []

    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    yield
    unregister("drfapp.DeclaredKindTools")


def test_model_tools_are_trusted_only_through_the_generated_serializer(declared: None) -> None:
    for op in ("list", "get", "create", "update", "delete", "aggregate"):
        assert compile_tool(_row(f"{op}_specimen")).output_trusted is True, op
    assert compile_tool(_row("list_kind")).output_trusted is True
    # A declared serializer_class may write anything: its output is checked on every call.
    assert compiled_for("drfapp.DeclaredKindTools").output_exact is False
    assert compiled_for("drfapp.DeclaredKindTools").write_rows is None
    assert compile_tool(_row("list_declared_kind")).output_trusted is False
    # A generated row edited in the admin no longer states the derived schema: checked.
    Tool.objects.filter(name="get_specimen").update(output_schema={"type": "object"})
    assert compile_tool(_row("get_specimen")).output_trusted is False


@pytest.mark.usefixtures("synced", "media")
def test_the_row_writer_writes_exactly_what_the_serializer_does_for_every_field_type() -> None:
    owner = User.objects.create(username="writer")
    full = _full_specimen(owner)
    Specimen.objects.create(char="Empty", owner=owner)  # every nullable field null, every default
    alone = Specimen.objects.create(char="No kinds", owner=owner)
    principal = Principal(key="user:writer", user=owner)
    for key in ("drfapp.SpecimenTools", "drfapp.KindTools", "drfapp.OwnSpecimenTools"):
        compiled = compiled_for(key)
        assert compiled.write_rows is not None
        planned = compiled.toolset.get_queryset(principal)
        if compiled.prefetch_related:
            planned = planned.prefetch_related(*compiled.prefetch_related)
        # With the page's query plan (prefetched many-to-many) and without it (DRF's own reading).
        for rows in (list(planned.order_by("pk")), list(compiled.toolset.model._default_manager.order_by("pk"))):
            assert len(rows) >= 2
            expected = q.jsonable(compiled.serializer_class(rows, many=True).data)
            assert q.jsonable(compiled.write_rows(rows)) == expected, key
    page = q.jsonable(compiled_for("drfapp.SpecimenTools").write_rows([full, alone]))
    assert sorted(page[0]["kinds"]) == sorted(full.kinds.values_list("pk", flat=True))
    assert page[1]["kinds"] == []
    assert page[0]["file"].startswith("/media/specimens/a")


@pytest.mark.usefixtures("synced", "media")
def test_a_listed_page_is_the_serializers_output(client: Any) -> None:
    make_user("sam", *perms("specimen"))
    _full_specimen()
    Specimen.objects.create(char="Empty")
    page = Caller(client, "sam").ok("list_specimen", {})
    compiled = compiled_for("drfapp.SpecimenTools")
    rows = list(Specimen.objects.order_by("char", "pk"))
    assert page["items"] == q.jsonable(compiled.serializer_class(rows, many=True).data)
