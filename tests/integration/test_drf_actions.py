"""contrib.drf: admin actions of a model's ModelAdmin served as tools ``<action>_<name>`` over
``{"ids": [...]}``: run as the caller on the rows of ``get_queryset(principal)``, only with the
action's ``allowed_permissions``; messages come back as text; a page is refused and rolled back;
destructive actions are marked so and confirmed (tests/drfapp/admin.py has the actions)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.management import call_command
from jsonschema import Draft202012Validator

from mcp_tools.contrib.drf import ModelToolset, register, unregister
from mcp_tools.contrib.drf.models import ToolsetDefinition
from mcp_tools.contrib.drf.sync import stale_rows
from mcp_tools.models import Tool
from mcp_tools.types import Principal
from tests.drfapp.models import Specimen
from tests.drfapp.testing import Caller, make_user, perms
from tests.integration.test_asking import ELICITS, call
from tests.support.mcp_client import Mcp

pytestmark = [pytest.mark.django_db]

ACTIONS = ["mark_true", "clear_text", "export_csv", "publish"]


@pytest.fixture
def acting(synced: None) -> Iterator[None]:
    @register
    class ActingTools(ModelToolset):
        model = Specimen
        name = "acting"
        fields = ["id", "char"]
        operations = ["list"]
        actions = ACTIONS
        destructive_actions = ["clear_text"]
        max_action_ids = 5
        required_scopes = {"list": ["specimens:read"], "publish": ["specimens:publish"]}

        def get_queryset(self, principal: Principal) -> Any:
            return super().get_queryset(principal).exclude(char="hidden")

    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    yield
    unregister("drfapp.ActingTools")


def _rows(*names: str) -> list[Specimen]:
    return [Specimen.objects.create(char=name, text=f"text of {name}") for name in names]


@pytest.mark.usefixtures("acting")
def test_actions_become_tools_with_exact_schemas_and_annotations(client: Any) -> None:
    make_user("sam", *perms("specimen"))
    tools = Caller(client, "sam").tools()
    mark = tools["mark_true_acting"]
    assert mark["title"] == "Mark selected specimens as true"
    assert mark["annotations"] == {
        "title": "Mark selected specimens as true",
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert tools["clear_text_acting"]["annotations"]["destructiveHint"] is True
    assert tools["clear_text_acting"]["description"].endswith("This cannot be undone.")
    assert mark["inputSchema"] == {
        "type": "object",
        "properties": {
            "ids": {
                "type": "array",
                "items": {"type": "integer"},
                "minItems": 1,
                "maxItems": 5,
                "uniqueItems": True,
                "description": "The specimens to run the action on, by id.",
            }
        },
        "required": ["ids"],
        "additionalProperties": False,
    }
    assert mark["outputSchema"]["required"] == ["ids", "messages"]
    assert Tool.objects.get(name="publish_acting").required_scopes.get().name == "specimens:publish"
    assert {s.name for s in Tool.objects.get(name="mark_true_acting").required_scopes.all()} == set()
    assert not [p for p in stale_rows() if "acting" in p]
    # A second sync changes nothing.
    out = io.StringIO()
    call_command("mcp_sync_toolsets", stdout=out)
    assert "0 created, 0 updated" in out.getvalue()


@pytest.mark.usefixtures("acting")
def test_an_action_runs_on_the_callers_rows_and_its_messages_come_back_as_text(client: Any) -> None:
    make_user("sam", *perms("specimen"))
    a, b, c = _rows("a", "b", "c")
    result = Caller(client, "sam").call("mark_true_acting", {"ids": [a.pk, b.pk]})
    assert result.get("isError") is not True, result
    assert result["content"] == [{"type": "text", "text": "2 specimens marked true."}]
    assert result["structuredContent"] == {
        "ids": [a.pk, b.pk],
        "messages": [{"level": "success", "message": "2 specimens marked true."}],
    }
    assert list(Specimen.objects.order_by("pk").values_list("boolean", flat=True)) == [True, True, False]
    # The kind vouches for its output (the runner does not check it): it matches the output schema.
    schema = Caller(client, "sam").tools()["mark_true_acting"]["outputSchema"]
    Draft202012Validator(schema).validate(result["structuredContent"])


@pytest.mark.usefixtures("acting")
def test_ids_outside_the_queryset_or_malformed_are_refused_and_nothing_runs(client: Any) -> None:
    make_user("sam", *perms("specimen"))
    a, hidden = _rows("a", "hidden")
    sam = Caller(client, "sam")
    assert sam.refused("mark_true_acting", {"ids": [a.pk, hidden.pk, 999]}) == (
        f"No specimens with id {hidden.pk}, 999; nothing was done."
    )
    assert not Specimen.objects.filter(boolean=True).exists()
    too_many = sam.call("mark_true_acting", {"ids": [1, 2, 3, 4, 5, 6]})
    assert too_many["isError"] is True
    assert "is too long" in too_many["content"][0]["text"]
    assert sam.call("mark_true_acting", {"ids": []})["isError"] is True
    assert sam.call("mark_true_acting", {"ids": ["x"]})["isError"] is True


@pytest.mark.usefixtures("acting")
def test_the_actions_allowed_permissions_hold_for_the_caller(client: Any) -> None:
    make_user("viewer", *perms("specimen", "view"))
    make_user("root", superuser=True)
    make_user("nobody")
    (a,) = _rows("a")
    viewer = Caller(client, "viewer")
    assert viewer.refused("mark_true_acting", {"ids": [a.pk]}) == (
        "You may not run 'mark_true' on specimens: it needs the change permission."
    )
    # A custom permission of the ModelAdmin (has_publish_permission): only superusers here.
    make_user("sam", *perms("specimen"))
    assert Caller(client, "sam").refused("publish_acting", {"ids": [a.pk]}) == (
        "You may not run 'publish' on specimens: it needs the publish permission."
    )
    assert Caller(client, "root").call("publish_acting", {"ids": [a.pk]})["content"][0]["text"] == (
        "Ran 'Publish' on 1 specimens."
    )
    # Without view permission the action tools are hidden like the operations.
    assert not [name for name in Caller(client, "nobody").tools() if name.endswith("_acting")]


@pytest.mark.usefixtures("acting")
def test_an_action_runs_only_as_a_user_who_may_open_the_change_list(client: Any, monkeypatch: Any) -> None:
    """Even where the toolset asks no model permission (public data), an action needs a signed-in
    user the ModelAdmin lets see the change list, as in the admin."""
    from mcp_tools.contrib.drf.compiled import compiled_for

    monkeypatch.setattr(compiled_for("drfapp.ActingTools").toolset, "get_required_permissions", lambda op: [])
    make_user("nobody")
    (a,) = _rows("a")
    assert Caller(client, "nobody").refused("export_csv_acting", {"ids": [a.pk]}) == (
        "You may not run 'export_csv' on specimens: it needs the view or change permission."
    )
    anonymous = Caller(client, "ghost").call("export_csv_acting", {"ids": [a.pk]})  # no such user
    assert anonymous["isError"] is True
    assert anonymous["content"][0]["text"] == "The action 'export_csv' runs as a signed-in user; this call has none."


@pytest.mark.usefixtures("acting")
def test_an_action_that_answers_with_a_page_is_refused_and_rolled_back(client: Any) -> None:
    make_user("sam", *perms("specimen"))
    (a,) = _rows("a")
    assert Caller(client, "sam").refused("export_csv_acting", {"ids": [a.pk]}) == (
        "The action 'export_csv' answered with a page (a confirmation step or a download), which a tool cannot "
        "show; its changes were rolled back."
    )
    a.refresh_from_db()
    assert a.integer == 0


@pytest.mark.usefixtures("acting")
def test_a_destructive_action_is_confirmed_first(client: Any) -> None:
    make_user("sam", *perms("specimen"))
    a, b = _rows("a", "b")
    mcp = Mcp(client).modern()
    status, message = call(mcp, "clear_text_acting", {"ids": [a.pk, b.pk]}, capabilities=ELICITS, user="sam *")
    result = message["result"]
    assert result["resultType"] == "input_required"
    ((key, request),) = result["inputRequests"].items()
    assert request["params"]["message"] == (
        f"Do you want to run 'Clear the text of selected specimens' on 2 specimens (id {a.pk}, {b.pk})? "
        "This cannot be undone."
    )
    assert Specimen.objects.filter(text="").count() == 0
    declined = {key: {"action": "decline"}}
    _, message = call(
        mcp, "clear_text_acting", {"ids": [a.pk, b.pk]}, capabilities=ELICITS, user="sam *",
        state=result["requestState"], responses=declined,
    )  # fmt: skip
    assert message["result"]["isError"] is True
    assert message["result"]["content"][0]["text"].startswith("Nothing was done: the user declined")
    assert Specimen.objects.filter(text="").count() == 0
    accepted = {key: {"action": "accept", "content": {"confirm": True}}}
    _, message = call(
        mcp, "clear_text_acting", {"ids": [a.pk, b.pk]}, capabilities=ELICITS, user="sam *",
        state=result["requestState"], responses=accepted,
    )  # fmt: skip
    assert [block["text"] for block in message["result"]["content"]] == [
        "Cleared the text of 2 specimens.",
        "This cannot be undone.",
    ]
    assert message["result"]["structuredContent"]["messages"][1] == {
        "level": "warning",
        "message": "This cannot be undone.",
    }
    assert Specimen.objects.filter(text="").count() == 2


@pytest.mark.parametrize(
    ("attrs", "words"),
    [
        ({"actions": ["delete_selected"]}, "'delete_selected' answers with a confirmation page"),
        ({"actions": ["mark_true"], "destructive_actions": ["clear_text"]}, "['clear_text'] not in actions"),
        ({"actions": "mark_true"}, "actions must be a list of action names"),
    ],
)
def test_wrong_action_declarations_fail_when_registered(attrs: dict[str, Any], words: str) -> None:
    cls = type("BadActions", (ModelToolset,), {"model": Specimen, "fields": ["char"], **attrs})
    with pytest.raises(ImproperlyConfigured, match=words.replace("[", r"\[").replace("]", r"\]")):
        cls().check()


@pytest.mark.usefixtures("synced")
def test_syncing_a_toolset_naming_an_action_the_modeladmin_lacks_says_which() -> None:
    from django.core.management.base import CommandError

    @register
    class MissingActionTools(ModelToolset):
        model = Specimen
        name = "missing"
        fields = ["id", "char"]
        actions = ["mark_true", "nope"]

    try:
        with pytest.raises(CommandError, match=r"\['nope'\] not among the actions of SpecimenAdmin \(clear_text, "):
            call_command("mcp_sync_toolsets", stdout=io.StringIO())
    finally:
        unregister("drfapp.MissingActionTools")


@pytest.mark.usefixtures("synced")
def test_an_admin_row_serves_actions_and_names_a_missing_one() -> None:
    model = ContentType.objects.get_for_model(Specimen)
    wrong = ToolsetDefinition(name="acts", model=model, fields=["id", "char"], actions=["mark_true", "nope"])
    with pytest.raises(ValidationError, match=r"\['nope'\] not among the actions of SpecimenAdmin"):
        wrong.full_clean()
    row = ToolsetDefinition(
        name="acts", model=model, fields=["id", "char"], actions=["mark_true", "clear_text"],
        destructive_actions=["clear_text"], confirm_destructive="require",
    )  # fmt: skip
    row.full_clean()
    row.save()
    tools = {t.name: t for t in Tool.objects.filter(handler_config__toolset="admin.acts")}
    assert set(tools) == {"list_acts", "get_acts", "mark_true_acts", "clear_text_acts"}
    assert tools["clear_text_acts"].destructive_hint is True
    assert tools["clear_text_acts"].handler_config == {
        "toolset": "admin.acts",
        "action": "clear_text",
        "revision": row.revision,
    }
