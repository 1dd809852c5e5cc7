"""mcp_tools.storable: NUL shown as U+FFFD in text and JSON, the rest left as it is."""

from __future__ import annotations

from mcp_tools import storable


def test_text_and_json_show_nul_as_the_replacement_character() -> None:
    assert storable.text("a\x00b\x00") == "a\ufffdb\ufffd"
    value = {"k\x00": ["x", {"y": "z\x00"}, 1, None, True], "plain": "p"}
    assert storable.json_value(value) == {"k\ufffd": ["x", {"y": "z\ufffd"}, 1, None, True], "plain": "p"}
    assert value["k\x00"][1] == {"y": "z\x00"}  # the caller's value is not changed


def test_what_holds_no_nul_is_the_same_object() -> None:
    text = "no nul here"
    value = {"a": [1, "b", {"c": "d"}]}
    assert storable.text(text) is text
    assert storable.json_value(value) is value
    assert storable.lookable("t_abc")
    assert not storable.lookable("t_a\x00")


def test_keys_that_become_one_are_one_and_deep_values_are_shown() -> None:
    assert storable.json_value({"a\x00": 1, "a\ufffd": 2}) == {"a\ufffd": 2}
    deep: object = "z\x00"
    for _ in range(200):
        deep = [{"k": deep}]
    shown = storable.json_value(deep)
    for _ in range(200):
        shown = shown[0]["k"]
    assert shown == "z\ufffd"
