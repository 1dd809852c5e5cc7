"""Single-use confirmations: the 2026-07-28 retry that carried an accepted confirmation of
destructive work runs it once; a replay of that retry is asked again, never obeyed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.drfapp.models import Specimen
from tests.drfapp.testing import make_user, perms
from tests.integration.test_asking import ELICITS, call
from tests.integration.test_drf_actions import acting  # noqa: F401
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db

SAM = "sam *"


def _clear(mcp: Mcp, ids: list[int], **kw: Any) -> dict[str, Any]:
    status, message = call(mcp, "clear_text_acting", {"ids": ids}, capabilities=ELICITS, user=SAM, **kw)
    assert status == 200, message
    return dict(message["result"])


@pytest.mark.usefixtures("acting")
def test_a_replayed_accepted_confirmation_asks_again_and_the_work_runs_once(client: Any) -> None:
    make_user("sam", *perms("specimen"))
    a = Specimen.objects.create(char="a", text="text of a")
    b = Specimen.objects.create(char="b", text="text of b")
    mcp = Mcp(client).modern()
    asked = _clear(mcp, [a.pk, b.pk])
    assert asked["resultType"] == "input_required"
    ((key, question),) = asked["inputRequests"].items()
    accepted = {key: {"action": "accept", "content": {"confirm": True}}}
    done = _clear(mcp, [a.pk, b.pk], state=asked["requestState"], responses=accepted)
    assert done["content"][0]["text"] == "Cleared the text of 2 specimens."
    assert Specimen.objects.filter(text="").count() == 2
    # The rows change after the confirmed work: new text the user never agreed to clear.
    Specimen.objects.filter(pk__in=[a.pk, b.pk]).update(text="written since")

    replay = _clear(mcp, [a.pk, b.pk], state=asked["requestState"], responses=accepted)
    assert replay["resultType"] == "input_required", replay
    assert list(replay["inputRequests"].values()) == [question]  # the same question, asked afresh
    assert replay["requestState"] != asked["requestState"]
    assert Specimen.objects.filter(text="written since").count() == 2  # the work did not run again

    # A new acceptance (with the fresh state) is a new confirmation: it runs, once.
    again = _clear(mcp, [a.pk, b.pk], state=replay["requestState"], responses=accepted)
    assert again["content"][0]["text"] == "Cleared the text of 2 specimens."
    assert _clear(mcp, [a.pk, b.pk], state=replay["requestState"], responses=accepted)["resultType"] == (
        "input_required"
    )


@pytest.mark.usefixtures("acting")
def test_a_declined_retry_does_not_use_up_the_state(client: Any) -> None:
    """Only an accepted confirmation is redeemed: a decline leaves the question open."""
    make_user("sam", *perms("specimen"))
    a = Specimen.objects.create(char="a", text="text of a")
    mcp = Mcp(client).modern()
    asked = _clear(mcp, [a.pk])
    ((key, _),) = asked["inputRequests"].items()
    from mcp_tools.models import McpRedemption

    declined = _clear(mcp, [a.pk], state=asked["requestState"], responses={key: {"action": "decline"}})
    assert declined["isError"] is True
    assert McpRedemption.objects.count() == 0
    accepted = {key: {"action": "accept", "content": {"confirm": True}}}
    assert _clear(mcp, [a.pk], state=asked["requestState"], responses=accepted)["content"][0]["text"] == (
        "Cleared the text of 1 specimens."
    )


def test_a_nonce_is_redeemed_once() -> None:
    from mcp_tools.asking.state import redeem
    from mcp_tools.models import McpRedemption

    assert redeem("n-1") is True
    assert redeem("n-1") is False
    assert redeem("") is False
    assert McpRedemption.objects.filter(nonce="n-1").count() == 1


def test_a_legacy_confirmation_answer_is_taken_once(mcp: Mcp) -> None:
    """2025-xx: the question goes on the call's stream with a fresh id each time, and its answer
    row goes with the call, so a replayed response POST confirms nothing (regression guard: this
    held before the requestState fix)."""
    import json

    from mcp_tools.asking import StreamAsker, record_answer
    from mcp_tools.models import McpPendingInput, McpSession

    form = {"message": "Delete?", "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}}}
    mcp.initialize("2025-11-25", capabilities={"elicitation": {}})
    session = McpSession.objects.get(pk=mcp.session_id)
    ids: list[str] = []

    def emit(data: bytes) -> None:
        request_id = json.loads(data)["id"]
        ids.append(request_id)
        assert record_answer(
            session.pk, "anonymous", request_id, {"action": "accept", "content": {"confirm": True}}, None
        )

    asker = StreamAsker("2025-11-25", session.pk, "anonymous", emit, lambda: False)
    assert asker.ask("elicitation/create", form, None)["action"] == "accept"
    assert not McpPendingInput.objects.exists()
    assert not record_answer(session.pk, "anonymous", ids[0], {"action": "accept", "content": {"confirm": True}}, None)
    asker.ask("elicitation/create", form, None)
    assert len(set(ids)) == 2
