"""What the client answered: checked against the method's result shape and the form asked for."""

from __future__ import annotations

from typing import Any

from ..exceptions import InputUnavailable
from ..protocol import inputs
from ..protocol.inputs import ELICIT

__all__ = ["check_question", "checked_answer", "missing_capability"]


def check_question(method: str, params: dict[str, Any], version: str) -> None:
    """A handler's question must be one the protocol can carry (a programming error otherwise)."""
    if method not in inputs.METHODS:
        raise ValueError(f"Cannot ask the client {method!r}; use ctx.elicit or ctx.sample")
    if method == ELICIT:
        schema = params.get("requestedSchema")
        problems = inputs.form_schema_problems(schema)
        if not problems:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                problems = [exc.message]
        if problems:
            raise ValueError("Invalid elicitation form: " + "; ".join(problems))
        if isinstance(schema, dict) and not inputs.form_fits(schema, version):
            raise InputUnavailable(f"This form has multi-select fields, which protocol {version} cannot carry.")


def missing_capability(method: str, version: str) -> InputUnavailable:
    """L-6: the client did not declare that it can answer ``method``: an ``isError`` result, never a hang."""
    capability = next(iter(inputs.CAPABILITIES[method]))
    return InputUnavailable(
        f"This tool needs to ask {inputs.NAMES[method]}, but the client did not declare the "
        f"{capability} capability (or its protocol version {version} has none)."
    )


def checked_answer(method: str, params: dict[str, Any], answer: Any) -> dict[str, Any]:
    """The answer, or InputUnavailable saying what is wrong with it (an ``isError`` result).

    An accepted form's content must fit the form's schema (servers validate what they get).
    """
    problems = inputs.answer_problems(method, answer)
    if not problems and method == ELICIT and answer["action"] == "accept":
        from jsonschema import Draft202012Validator

        validator = Draft202012Validator(params["requestedSchema"])
        problems = [
            f"{'/'.join(map(str, e.absolute_path)) or '(form)'}: {e.message}"
            for e in sorted(validator.iter_errors(answer.get("content", {})), key=lambda e: list(e.absolute_path))
        ]
    if problems:
        raise InputUnavailable(f"The client's answer to {inputs.NAMES[method]} is not valid: " + "; ".join(problems))
    result: dict[str, Any] = answer
    return result
