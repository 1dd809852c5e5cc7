"""Asking for input within tools/call: the asker an exchange gets, the input_required result,
and the answers legacy clients POST back (``ctx.elicit``, ``ctx.sample``; ``mcp_tools.asking``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..asking import ReplayAsker, RequestState, StateRefused, StreamAsker, open_state, record_answer, seal_state
from ..catalog import CompiledTool
from ..protocol import errors as e
from ..protocol import inputs
from ..protocol.jsonrpc import Response
from ..protocol.shaping import shape_result
from ..runner import error
from ..tasking.service import reachable_tasks
from ..types import Asker, Principal
from .exchange import Exchange
from .sessions import Session

__all__ = ["accept_answer", "asker_for", "input_required"]

logger = logging.getLogger("mcp_tools")


def asker_for(ex: Exchange, tool: CompiledTool, arguments: dict[str, Any], params: Mapping[str, Any]) -> Asker | None:
    """Who answers the handler's questions in this call; a bad requestState is -32602 (T-D2)."""
    if ex.modern is not None:
        answers, nonce = _answers_so_far(ex.principal, tool, arguments, params)
        return ReplayAsker(ex.modern.client_capabilities, ex.revision.version, answers, nonce)
    if ex.session is not None:
        return StreamAsker(ex.revision.version, ex.session.pk, ex.principal.key, ex.emit, ex.cancelled)
    return None


def _answers_so_far(
    principal: Principal, tool: CompiledTool, arguments: dict[str, Any], params: Mapping[str, Any]
) -> tuple[dict[str, dict[str, Any]], str]:
    """The answers of earlier rounds and this one, and the nonce of the state they came in."""
    token = params.get("requestState")
    responses = params.get("inputResponses")
    if responses is not None and not isinstance(responses, dict):
        raise e.invalid_params("tools/call params.inputResponses must be an object")
    if token is None:
        return {}, ""  # answers without a state answer nothing we asked; the handler asks again
    try:
        state = open_state(token, principal, tool.name, arguments)
    except StateRefused as exc:
        raise e.invalid_params(exc.message) from exc
    answers = dict(state.answers)
    for key, asked in state.pending.items():
        if responses is None or key not in responses:
            continue  # T-D1: a missing answer is asked for again, not an error
        problems = inputs.answer_problems(asked["m"], responses[key])
        if problems:
            raise e.invalid_params(f"inputResponses[{key!r}] is malformed: " + "; ".join(problems))
        answers[key] = {"d": asked["d"], "r": responses[key]}
    return answers, state.nonce  # answers to keys never asked are ignored (T-D1)


def input_required(
    ex: Exchange, tool: CompiledTool, arguments: dict[str, Any], asker: Asker | None, requests: dict[str, Any]
) -> dict[str, Any]:
    """The handler needs answers: an InputRequiredResult (2026-07-28, T-D1), or an isError result."""
    if ex.modern is None or not isinstance(asker, ReplayAsker):
        # Only a handler raising InputNeeded itself gets here: legacy askers ask on the stream.
        logger.warning("Tool %r raised InputNeeded, which this call cannot carry", tool.name)
        return shape_result(error(f"Tool {tool.name!r} needs input this client cannot give."), ex.revision)
    methods = [str(request.get("method")) for request in requests.values()]
    missing = [m for m in methods if not asker.can(m)]
    if missing:
        raise inputs.missing_capability(missing)  # LD-7, T-D1: never an undeclared kind of request
    pending = {
        key: {"m": str(request["method"]), "d": inputs.request_digest(request["method"], request["params"])}
        for key, request in requests.items()
    }
    state = seal_state(ex.principal, tool.name, arguments, RequestState(answers=asker.used, pending=pending))
    return {"resultType": "input_required", "inputRequests": requests, "requestState": state}


def accept_answer(message: Response, session: Session, principal: Principal) -> None:
    """A legacy client's answer to a request of ours: hand it to the process that waits for it."""
    # A task's request only from a token that still reaches the task (its tool's scopes).
    reachable = reachable_tasks(principal).values("pk")
    record_answer(session.pk, principal.key, message.id, message.result, message.error, tasks=reachable)
