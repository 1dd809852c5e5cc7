"""What a process may reuse instead of reading a shared store per request, in one process:
the catalog version (CATALOG_VERSION_MAX_AGE), access tokens' rows (TOKEN_CACHE_SECONDS), and
what cuts each short (a change made here, a message, the subscription lost).

Across processes (real servers, a real notifier): tests/e2e/test_reuse.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mcp_tools import catalog, freshness
from mcp_tools.auth import tokens
from mcp_tools.models import CatalogVersion, Tool
from mcp_tools.notify import backends, watch
from tests.integration.test_oauth import authed, make_token, names

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fresh_state() -> Iterator[None]:
    """Each test starts with no subscription, no kept rows, and the notifier of its settings."""
    watch.stop()
    backends.reset()
    freshness.reset()
    tokens.forget_all()
    yield
    watch.stop()
    backends.reset()
    freshness.reset()
    tokens.forget_all()


@pytest.fixture
def reuse(settings: Any, demo_tools: None, fresh_state: None) -> None:
    """Reuse bounded by the settings alone: a notifier that does not push."""
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "NOTIFIER": "none",
        "CATALOG_VERSION_MAX_AGE": 60,
        "TOKEN_CACHE_SECONDS": 60,
        "AUTH_BACKEND": "mcp_tools.auth.DOTBackend",
    }


def _version_reads(ctx: CaptureQueriesContext) -> int:
    table = CatalogVersion._meta.db_table
    return sum(table in q["sql"] for q in ctx.captured_queries)


def _status(mcp: Any) -> int:
    response, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, validate=False)
    return int(response.status_code)


def _token_reads(ctx: CaptureQueriesContext) -> int:
    return sum("oauth2_provider_accesstoken" in q["sql"] for q in ctx.captured_queries)


# --------------------------------------------------------------------------- the catalog version


def test_by_default_every_request_reads_the_version(demo_tools: None, fresh_state: None) -> None:
    catalog.get_catalog()
    with CaptureQueriesContext(connection) as ctx:
        catalog.get_catalog()
        catalog.get_catalog()
    assert _version_reads(ctx) == 2


def test_the_version_is_reused_within_max_age_and_read_again_after(reuse: None, monkeypatch: Any) -> None:
    import time

    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    first = catalog.get_catalog()
    with CaptureQueriesContext(connection) as ctx:
        assert catalog.get_catalog() is first
        now[0] += 59.9
        assert catalog.get_catalog() is first
    assert _version_reads(ctx) == 0
    now[0] += 0.2  # past CATALOG_VERSION_MAX_AGE
    with CaptureQueriesContext(connection) as ctx:
        catalog.get_catalog()
    assert _version_reads(ctx) == 1


def test_a_change_made_in_this_process_is_seen_by_its_next_request(reuse: None, client: Any, alice: User) -> None:
    """The process that commits a change reads the version again at once, whatever the notifier."""
    mcp = authed(client, make_token(alice, "notes:write"))
    assert "echo" in names(mcp)
    Tool.objects.filter(name="echo").update(enabled=False)  # the admin's action: one bump, committed
    assert "echo" not in names(mcp)
    _, message, _ = mcp.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    assert message["error"]["message"] == "Unknown tool: echo"


def test_a_catalog_message_makes_the_next_request_read_the_version(reuse: None) -> None:
    catalog.get_catalog()
    watch.heard("catalog")
    with CaptureQueriesContext(connection) as ctx:
        catalog.get_catalog()
        catalog.get_catalog()
    assert _version_reads(ctx) == 1


def test_a_version_read_before_a_message_is_not_reused(reuse: None, monkeypatch: Any) -> None:
    """A request that read the version just before a change was heard must not make the others
    reuse what it read: the message moved the epoch between its read and its keeping it."""
    real = CatalogVersion.current.__func__  # type: ignore[attr-defined]

    def read_then_hear(cls: Any) -> int:
        version = real(cls)
        watch.heard("catalog")  # the change arrives while this request holds the old number
        return version

    monkeypatch.setattr(CatalogVersion, "current", classmethod(read_then_hear))
    catalog.get_catalog()
    monkeypatch.undo()
    with CaptureQueriesContext(connection) as ctx:
        catalog.get_catalog()
    assert _version_reads(ctx) == 1


def test_fresh_reads_whatever_the_setting_and_starts_no_subscription(reuse: None) -> None:
    catalog.get_catalog()
    with CaptureQueriesContext(connection) as ctx:
        catalog.get_catalog(fresh=True)
    assert _version_reads(ctx) == 1


def test_a_push_notifier_not_heard_yet_means_a_read_per_request(
    settings: Any, demo_tools: None, fresh_state: None
) -> None:
    """A Redis notifier whose server cannot be reached: the subscription never comes up, so the
    version is read on every request, as with the setting at 0."""
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "NOTIFIER": "redis",
        "NOTIFIER_REDIS_URL": "redis://127.0.0.1:9/0",  # discard port: nothing listens
        "CATALOG_VERSION_MAX_AGE": 60,
    }
    catalog.get_catalog()
    assert freshness.state.started
    assert freshness.state.pushes
    assert not freshness.state.listening
    with CaptureQueriesContext(connection) as ctx:
        catalog.get_catalog()
        catalog.get_catalog()
    assert _version_reads(ctx) == 2


def test_the_subscription_lost_stops_reuse_until_it_is_back(reuse: None) -> None:
    freshness.reusable()  # started: the "none" notifier has no subscription...
    freshness.state.pushes = True  # ...which here plays one that pushes
    watch._connected()
    catalog.get_catalog()
    with CaptureQueriesContext(connection) as ctx:
        catalog.get_catalog()
    assert _version_reads(ctx) == 0
    watch._lost()
    with CaptureQueriesContext(connection) as ctx:
        catalog.get_catalog()
        catalog.get_catalog()
    assert _version_reads(ctx) == 2
    watch._connected()  # made again: read once more (a message may have been missed), then reuse
    with CaptureQueriesContext(connection) as ctx:
        catalog.get_catalog()
        catalog.get_catalog()
    assert _version_reads(ctx) == 1


# --------------------------------------------------------------------------- tokens


def test_a_token_is_looked_up_once_within_its_bound(reuse: None, client: Any, alice: User) -> None:
    mcp = authed(client, make_token(alice, "notes:write"))
    names(mcp)
    with CaptureQueriesContext(connection) as ctx:
        names(mcp)
        mcp.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    assert _token_reads(ctx) == 0


def test_an_unknown_token_is_looked_up_every_time(reuse: None, client: Any) -> None:
    mcp = authed(client, "no-such-token")
    for _ in range(2):
        with CaptureQueriesContext(connection) as ctx:
            assert _status(mcp) == 401
        assert _token_reads(ctx) == 1


def test_a_revoked_token_is_refused_by_the_next_request(reuse: None, client: Any, alice: User) -> None:
    from oauth2_provider.models import AccessToken

    raw = make_token(alice, "notes:write")
    mcp = authed(client, raw)
    assert names(mcp)
    AccessToken.objects.get(token=raw).revoke()
    assert _status(mcp) == 401


def test_a_user_made_inactive_is_refused_by_the_next_request(reuse: None, client: Any, alice: User) -> None:
    mcp = authed(client, make_token(alice, "notes:write"))
    assert names(mcp)
    alice.is_active = False
    alice.save()
    assert _status(mcp) == 401


def test_a_token_changed_is_read_again(reuse: None, client: Any, alice: User) -> None:
    from oauth2_provider.models import AccessToken

    raw = make_token(alice, "notes:write")
    mcp = authed(client, raw)
    assert "build_report" in names(mcp)
    token = AccessToken.objects.get(token=raw)
    token.scope = "other"
    token.save()
    assert "build_report" not in names(mcp)


def test_revocations_in_one_transaction_are_one_message_each_after_commit(
    reuse: None, alice: User, monkeypatch: Any
) -> None:
    from django.db import transaction
    from oauth2_provider.models import AccessToken

    from mcp_tools.notify import receivers

    sent: list[list[str]] = []
    monkeypatch.setattr(receivers, "send", sent.append)
    raws = [make_token(alice, "notes:write") for _ in range(3)]
    with transaction.atomic():
        AccessToken.objects.filter(token__in=raws[:2]).delete()
        assert sent == []  # nothing before the commit
    assert len(sent) == 1
    assert sorted(sent[0]) == sorted(f"token:{hashlib.sha256(r.encode()).hexdigest()}" for r in raws[:2])
    with transaction.atomic():
        AccessToken.objects.filter(token=raws[2]).delete()
        transaction.set_rollback(True)
    assert len(sent) == 1  # a rolled-back revocation says nothing


def test_nothing_is_sent_while_tokens_are_not_reused(settings: Any, alice: User, monkeypatch: Any) -> None:
    from oauth2_provider.models import AccessToken

    from mcp_tools.notify import receivers

    sent: list[list[str]] = []
    monkeypatch.setattr(receivers, "send", sent.append)
    AccessToken.objects.get(token=make_token(alice, "x")).revoke()
    alice.is_active = False
    alice.save()
    assert sent == []


def test_kept_rows_are_bounded(reuse: None, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TOKEN_CACHE_SIZE": 3}
    for n in range(5):
        tokens.lookup(f"c{n}", lambda n=n: ("row", n, None, None, 7, True), 4)
    assert list(tokens._rows.rows) == ["c2", "c3", "c4"]
    tokens.forget_user("7")
    assert not tokens._rows.rows
