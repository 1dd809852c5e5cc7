"""The editor's generated fields: the handler config edited through fields made from the kind's
config schema (raw JSON as the fallback), and Try it's arguments from the input schema."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from mcp_tools.models import AuditEvent, Tool
from tests.support.admin_forms import tool_form

pytestmark = pytest.mark.django_db

ADD = "/admin/mcp_tools/tool/add/"
LIST = "/admin/mcp_tools/tool/"

FORM = tool_form(
    name="slow",
    description="A slow report",
    handler_key="demo.report",
    input_schema='{"type": "object", "properties": {"steps": {"type": "integer"}}}',
)
STEP = "config__demo.report__step_seconds"
PREFIX = "config__demo.echo__prefix"
TASK = "config__celery.task__task"
TIMEOUT = "config__celery.task__timeout"


def _errors(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, response.status_code
    return {k: list(v) for k, v in response.context["adminform"].form.errors.items()}


def test_each_form_able_kind_has_its_group_of_fields_shown_without_javascript(admin_client: Client) -> None:
    page = admin_client.get(ADD).content.decode()
    assert "Handler config: Slow report with progress (demo.report)" in page
    assert f'name="{STEP}"' in page
    assert f'name="{PREFIX}"' in page
    # A computed schema: the site's Celery tasks are a dropdown, the required one with a blank choice.
    assert f'<select name="{TASK}"' in page
    assert '<option value="demo.word_stats">demo.word_stats</option>' in page
    assert f'name="{TIMEOUT}" value="30.0"' in page  # its default
    # demo.static's config (an array of objects) is not form-able: the JSON box only.
    assert "config__demo.static__" not in page
    assert 'name="handler_config"' in page
    # Every group is in the page; the inline script only hides the groups of other kinds.
    assert 'class="module aligned mcp-config"' in page


def test_saving_through_the_generated_fields_stores_the_config(admin_client: Client) -> None:
    response = admin_client.post(ADD, {**FORM, STEP: "2.5"})
    assert response.status_code == 302, _errors(response)
    assert Tool.objects.get(name="slow").handler_config == {"step_seconds": 2.5}
    # The chosen kind decides: fields of other kinds are neither read nor checked.
    response = admin_client.post(ADD, {**FORM, "name": "slow2", STEP: "", TIMEOUT: "not a number", PREFIX: "x"})
    assert response.status_code == 302, _errors(response)
    assert Tool.objects.get(name="slow2").handler_config == {}


def test_an_invalid_value_is_a_form_error_on_its_field(admin_client: Client) -> None:
    errors = _errors(admin_client.post(ADD, {**FORM, STEP: "11"}))
    assert errors == {STEP: ["Ensure this value is less than or equal to 10."]}
    errors = _errors(admin_client.post(ADD, {**FORM, STEP: "soon"}))
    assert errors == {STEP: ["Enter a number."]}
    # Required by the schema, and a rule only the schema states (exclusiveMinimum), each on its field.
    celery = {**FORM, "handler_key": "celery.task", TASK: "", TIMEOUT: "30"}
    assert _errors(admin_client.post(ADD, celery)) == {TASK: ["This field is required."]}
    errors = _errors(admin_client.post(ADD, {**celery, TASK: "demo.divide", TIMEOUT: "0"}))
    assert errors == {TIMEOUT: ["0 is less than or equal to the minimum of 0"]}
    assert not Tool.objects.exists()
    response = admin_client.post(ADD, {**celery, TASK: "demo.divide", TIMEOUT: "5"})
    assert response.status_code == 302, _errors(response)
    assert Tool.objects.get().handler_config == {"task": "demo.divide", "timeout": 5}


def test_a_kind_whose_schema_is_not_form_able_is_edited_as_json(admin_client: Client) -> None:
    config = '{"content": [{"type": "text", "text": "hello"}]}'
    response = admin_client.post(ADD, {**FORM, "handler_key": "demo.static", "handler_config": config})
    assert response.status_code == 302
    tool = Tool.objects.get()
    assert tool.handler_config == {"content": [{"type": "text", "text": "hello"}]}
    form = admin_client.get(f"{LIST}{tool.pk}/change/").context["adminform"].form
    assert "demo.static" not in form.config_groups  # no fields: its config is the JSON box
    assert "demo.report" in form.config_groups
    errors = _errors(admin_client.post(ADD, {**FORM, "name": "x", "handler_key": "demo.static"}))
    assert errors == {"handler_config": ["(config): 'content' is a required property"]}


def test_the_change_page_shows_the_stored_config_and_the_json_box_or_the_fields_win(admin_client: Client) -> None:
    tool = Tool.objects.create(
        name="slow", handler_key="demo.report", handler_config={"step_seconds": 1, "note": "kept"}, input_schema={}
    )
    change = f"{LIST}{tool.pk}/change/"
    form = admin_client.get(change).context["adminform"].form
    assert form[STEP].value() == 1
    # Unchanged: the stored config stays as it is.
    stored = '{"step_seconds": 1, "note": "kept"}'
    base = {**FORM, "input_schema": '{"type": "object"}', "handler_config": stored}
    assert admin_client.post(change, {**base, STEP: "1"}).status_code == 302
    tool.refresh_from_db()
    assert (tool.handler_config, tool.version) == ({"step_seconds": 1, "note": "kept"}, 2)
    # A changed field: read, and the key the fields do not show is kept.
    assert admin_client.post(change, {**base, STEP: "3"}).status_code == 302
    tool.refresh_from_db()
    assert tool.handler_config == {"step_seconds": 3, "note": "kept"}
    # A changed JSON box: read.
    stored = '{"step_seconds": 3, "note": "kept"}'
    response = admin_client.post(change, {**base, "handler_config": '{"step_seconds": 4}', STEP: "3"})
    assert response.status_code == 302
    tool.refresh_from_db()
    assert tool.handler_config == {"step_seconds": 4}
    # Both changed and different: refused, nothing is dropped silently.
    errors = _errors(admin_client.post(change, {**base, "handler_config": '{"step_seconds": 5}', STEP: "6"}))
    assert errors == {
        "handler_config": [
            "You changed both the raw JSON and the fields of this handler's config, and they differ: "
            "undo one of the two changes."
        ]
    }
    # Both changed to the same config: fine.
    response = admin_client.post(change, {**base, "handler_config": '{"step_seconds": 6}', STEP: "6"})
    assert response.status_code == 302
    tool.refresh_from_db()
    assert tool.handler_config == {"step_seconds": 6}
    # Another kind chosen: its fields give the config, the old kind's keys do not follow.
    response = admin_client.post(
        change, {**base, "handler_config": '{"step_seconds": 6}', "handler_key": "demo.echo", PREFIX: "> "}
    )
    assert response.status_code == 302
    tool.refresh_from_db()
    assert (tool.handler_key, tool.handler_config) == ("demo.echo", {"prefix": "> "})


# ---------------------------------------------------------------------- try it

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number", "title": "First"}, "b": {"type": "number", "maximum": 100}},
    "required": ["a", "b"],
}


def _add_tool() -> Tool:
    return Tool.objects.create(name="add", handler_key="demo.add", input_schema=ADD_SCHEMA)


def test_try_it_sends_the_arguments_from_the_generated_fields(admin_client: Client, admin_user: Any) -> None:
    tool = _add_tool()
    url = f"{LIST}{tool.pk}/try/"
    page = admin_client.get(url).content.decode()
    assert 'name="arg__a"' in page
    assert 'name="arg__b"' in page
    assert ">First:</label>" in page
    response = admin_client.post(url, {"arguments": "", "arg__a": "2", "arg__b": "3", "protocol_version": "2025-11-25"})
    assert response.context["trial"].result["structuredContent"] == {"sum": 5}
    assert AuditEvent.objects.get().user_id == admin_user.pk
    # The JSON box, when filled in, is sent instead (the fields left as they were).
    response = admin_client.post(url, {"arguments": '{"a": 1, "b": 1}', "protocol_version": "2025-11-25"})
    assert response.context["trial"].result["structuredContent"] == {"sum": 2}


def test_try_it_field_errors_and_a_conflict_are_form_errors(admin_client: Client) -> None:
    tool = _add_tool()
    url = f"{LIST}{tool.pk}/try/"
    post = {"arguments": "", "protocol_version": "2025-11-25"}
    response = admin_client.post(url, {**post, "arg__a": "x", "arg__b": "101"})
    assert response.context["trial"] is None
    assert response.context["form"].errors == {
        "arg__a": ["Enter a number."],
        "arg__b": ["Ensure this value is less than or equal to 100."],
    }
    response = admin_client.post(url, {**post, "arg__a": "1"})
    assert response.context["form"].errors == {"arg__b": ["This field is required."]}
    response = admin_client.post(url, {**post, "arguments": '{"a": 1, "b": 2}', "arg__a": "5", "arg__b": "5"})
    assert response.context["form"].errors == {
        "arguments": ["Both the JSON box and the fields are filled in, and they differ: empty one of them."]
    }
    assert not AuditEvent.objects.exists()


def test_try_it_without_a_form_able_input_schema_has_the_json_box_only(admin_client: Client) -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object"}}}}
    tool = Tool.objects.create(name="echo_all", handler_key="demo.echo_arguments", input_schema=schema)
    url = f"{LIST}{tool.pk}/try/"
    page = admin_client.get(url).content.decode()
    assert 'name="arg__' not in page
    assert admin_client.get(url).context["form"].argument_fields is None
    response = admin_client.post(url, {"arguments": '{"items": [{"x": 1}]}', "protocol_version": "2025-11-25"})
    assert response.context["trial"].result["structuredContent"] == {"items": [{"x": 1}]}


def test_drf_view_routes_and_methods_are_dropdowns_and_its_own_checks_still_apply(admin_client: Client) -> None:
    route, method = "config__drf.view__route", "config__drf.view__method"
    page = admin_client.get(ADD).content.decode()
    assert f'<select name="{route}"' in page
    assert '<option value="book-detail">book-detail</option>' in page
    assert f'<select name="{method}"' in page
    drf = {**FORM, "name": "api_book", "handler_key": "drf.view"}
    # The route does not answer DELETE: the kind's own check, on the config.
    errors = _errors(admin_client.post(ADD, {**drf, route: "book-detail", method: "DELETE"}))
    assert errors == {"handler_config": ["Route 'book-detail' does not answer DELETE; it answers GET, PATCH."]}
    assert _errors(admin_client.post(ADD, {**drf, route: "nowhere", method: "GET"})) == {
        route: ["Select a valid choice. nowhere is not one of the available choices."]
    }
    response = admin_client.post(ADD, {**drf, route: "book-detail", method: "PATCH"})
    assert response.status_code == 302, _errors(response)
    tool = Tool.objects.get(name="api_book")
    assert tool.handler_config == {"route": "book-detail", "method": "PATCH"}
    assert tool.input_schema["required"] == ["pk"]


def test_a_stored_config_the_site_no_longer_offers_is_shown_and_refused_clearly(admin_client: Client) -> None:
    tool = Tool.objects.create(
        name="gone", handler_key="celery.task", handler_config={"task": "demo.gone", "timeout": "x"}, input_schema={}
    )
    change = f"{LIST}{tool.pk}/change/"
    page = admin_client.get(change).content.decode()
    assert '<option value="demo.gone" selected>demo.gone (not available)</option>' in page
    # As a browser posts it (the value that does not fit a number field shows its default).
    assert f'name="{TIMEOUT}" value="30.0"' in page
    stored = '{"task": "demo.gone", "timeout": "x"}'
    base = {**FORM, "name": "gone", "handler_key": "celery.task", "input_schema": '{"type": "object"}'}
    base |= {"handler_config": stored, TASK: "demo.gone", TIMEOUT: "30.0"}
    errors = _errors(admin_client.post(change, base))
    assert list(errors) == ["handler_config"]
    assert errors["handler_config"][0].startswith("task: 'demo.gone' is not one of [")
    assert errors["handler_config"][1] == "timeout: 'x' is not of type 'number'"
    # Picking an offered task in its field: the fields are read.
    assert admin_client.post(change, {**base, TASK: "demo.divide"}).status_code == 302
    tool.refresh_from_db()
    assert tool.handler_config == {"task": "demo.divide", "timeout": 30}
