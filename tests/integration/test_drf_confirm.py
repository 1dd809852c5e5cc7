"""contrib.drf: destructive operations confirmed through elicitation, as the toolset's
``confirm_destructive`` says ("ask" by default, "require", "never"), on 2026-07-28 (the question
in ``input_required``, the retry with ``inputResponses``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model

from mcp_tools.contrib.drf import ModelToolset
from mcp_tools.contrib.drf.compiled import compiled_for
from mcp_tools.contrib.drf.models import ToolsetDefinition
from tests.drfapp.models import Specimen
from tests.drfapp.testing import make_user, perms
from tests.integration.test_asking import ELICITS, call
from tests.support.mcp_client import Mcp

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("synced")]

SAM = "sam *"


@pytest.fixture
def sam_mcp(client: Any) -> Mcp:
    make_user("sam", *perms("specimen"))
    return Mcp(client).modern()


@pytest.fixture
def mode(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    value: str = request.param
    monkeypatch.setattr(compiled_for("drfapp.SpecimenTools").toolset, "confirm_destructive", value)
    return value


def _delete(mcp: Mcp, pk: int, **kw: Any) -> dict[str, Any]:
    status, message = call(mcp, "delete_specimen", {"id": pk}, user=SAM, **kw)
    assert status == 200, message
    assert "result" in message, message
    return dict(message["result"])


def _asked(mcp: Mcp, row: Model) -> dict[str, Any]:
    result = _delete(mcp, row.pk, capabilities=ELICITS)
    assert result["resultType"] == "input_required", result
    (key, request), *others = result["inputRequests"].items()
    assert not others
    assert request["method"] == "elicitation/create"
    assert (
        request["params"]["message"]
        == f"Do you want to delete the specimen 'Doomed' (id {row.pk})? This cannot be undone."
    )
    assert request["params"]["requestedSchema"]["properties"]["confirm"]["type"] == "boolean"
    assert Specimen.objects.filter(pk=row.pk).exists()  # nothing happens before the answer
    return {"key": key, "state": result["requestState"]}


def test_ask_by_default_deletes_once_the_user_accepts(sam_mcp: Mcp) -> None:
    """T-D1 with a destructive tool: the question names what will be deleted; the accepted retry deletes it."""
    assert compiled_for("drfapp.SpecimenTools").toolset.confirm_destructive == "ask"
    row = Specimen.objects.create(char="Doomed")
    asked = _asked(sam_mcp, row)
    answer = {asked["key"]: {"action": "accept", "content": {"confirm": True}}}
    done = _delete(sam_mcp, row.pk, capabilities=ELICITS, state=asked["state"], responses=answer)
    assert done.get("isError") is not True, done
    assert done["structuredContent"] == {"deleted": True, "id": row.pk}
    assert not Specimen.objects.filter(pk=row.pk).exists()


@pytest.mark.parametrize(
    ("answer", "how"),
    [
        ({"action": "decline"}, "declined"),
        ({"action": "cancel"}, "cancelled"),
        ({"action": "accept", "content": {"confirm": False}}, "did not confirm"),
    ],
)
def test_a_declined_confirmation_deletes_nothing(sam_mcp: Mcp, answer: dict[str, Any], how: str) -> None:
    row = Specimen.objects.create(char="Doomed")
    asked = _asked(sam_mcp, row)
    refused = _delete(sam_mcp, row.pk, capabilities=ELICITS, state=asked["state"], responses={asked["key"]: answer})
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == (
        f"Nothing was deleted: the user {how} the confirmation to delete the specimen 'Doomed' (id {row.pk})."
    )
    assert Specimen.objects.filter(pk=row.pk).exists()


def test_ask_proceeds_when_the_client_cannot_answer(sam_mcp: Mcp) -> None:
    row = Specimen.objects.create(char="Doomed")
    assert _delete(sam_mcp, row.pk)["structuredContent"] == {"deleted": True, "id": row.pk}


@pytest.mark.parametrize("mode", ["require"], indirect=True)
def test_require_refuses_a_client_that_cannot_answer(sam_mcp: Mcp, mode: str) -> None:
    row = Specimen.objects.create(char="Doomed")
    refused = _delete(sam_mcp, row.pk)
    assert refused["isError"] is True
    text = refused["content"][0]["text"]
    assert text.startswith("Nothing was deleted: this toolset requires the user to confirm, and this client cannot ask")
    assert "elicitation" in text
    assert Specimen.objects.filter(pk=row.pk).exists()
    # The same toolset asks a client that can answer.
    _asked(sam_mcp, row)


@pytest.mark.parametrize("mode", ["never"], indirect=True)
def test_never_deletes_without_asking(sam_mcp: Mcp, mode: str) -> None:
    row = Specimen.objects.create(char="Doomed")
    assert _delete(sam_mcp, row.pk, capabilities=ELICITS)["structuredContent"] == {"deleted": True, "id": row.pk}


def test_a_row_the_caller_cannot_reach_is_refused_before_any_question(sam_mcp: Mcp) -> None:
    refused = _delete(sam_mcp, 999_999, capabilities=ELICITS)
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == "No specimen with id 999999."


def test_the_setting_is_checked_and_an_admin_row_carries_it() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"confirm_destructive must be one of \['never', 'ask', 'require'\]"):
        type(
            "Wrong", (ModelToolset,), {"model": Specimen, "fields": ["char"], "confirm_destructive": "maybe"}
        )().check()
    from django.contrib.contenttypes.models import ContentType

    row = ToolsetDefinition(
        name="guarded",
        model=ContentType.objects.get_for_model(Specimen),
        fields=["id", "char"],
        operations=["get", "delete"],
        confirm_destructive="require",
    )
    assert row.as_toolset().confirm_destructive == "require"
    assert ToolsetDefinition._meta.get_field("confirm_destructive").default == "ask"
