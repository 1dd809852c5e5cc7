"""The editor's form fields: indented JSON with placed syntax errors, icons and names as text."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from mcp_tools.admin.forms import IconsField, NamesField, PrettyJSONField

ICONS = [
    {"src": "https://example.com/a.png", "mimeType": "image/svg+xml", "sizes": ["any"], "theme": "light"},
    {"src": "data:image/png;base64,AAAA", "sizes": ["16x16", "32x32"]},
]


def test_json_is_shown_indented_and_an_empty_value_as_an_empty_box() -> None:
    field = PrettyJSONField()
    assert field.prepare_value({"type": "object", "properties": {}}) == '{\n  "type": "object",\n  "properties": {}\n}'
    assert field.prepare_value(None) == ""


def test_a_json_syntax_error_names_its_line_and_column() -> None:
    with pytest.raises(ValidationError) as info:
        PrettyJSONField().clean('{\n  "a": 1\n  "b": 2\n}')
    assert info.value.messages == ["Invalid JSON at line 3, column 3: Expecting ',' delimiter."]


def test_icons_round_trip_through_their_lines() -> None:
    field = IconsField()
    text = field.prepare_value(ICONS)
    assert text == "https://example.com/a.png image/svg+xml any light\ndata:image/png;base64,AAAA 16x16,32x32"
    assert field.clean(text) == ICONS
    assert field.clean("") == []


def test_every_bad_icon_line_is_named() -> None:
    with pytest.raises(ValidationError) as info:
        IconsField().clean("https://ok/a.png\nfile:///etc/passwd\nhttps://x/b.png image/png grey")
    assert info.value.messages == [
        "Line 2: the icon URL must start with https: or data:",
        "Line 3: 'grey' is not a MIME type, sizes (48x48) or light/dark",
    ]


def test_names_are_split_on_commas_and_spaces() -> None:
    field = NamesField(required=False)
    assert field.clean("password, token\napi_key") == ["password", "token", "api_key"]
    assert field.prepare_value(["a", "b"]) == "a, b"
