"""2026-07-28: questions end the run (``InputNeeded``); the retry runs the handler again with
the answers at hand, so everything before a question runs once per round."""

from __future__ import annotations

from typing import Any

from ..exceptions import InputNeeded
from ..protocol import inputs
from .answers import check_question, checked_answer
from .state import redeem

__all__ = ["ReplayAsker"]


class ReplayAsker:
    """Answers ``ctx.elicit``/``ctx.sample`` from earlier rounds, or raises the question.

    ``answers`` maps a question's key to ``{"d": digest, "r": answer}``; an answer is used only
    for the very question it answered (same key, same digest), so a question that changed
    between rounds (another total in a confirmation) is asked again.

    A confirmation of work that must not run twice (``ctx.elicit(..., once=True)``) is used
    only by the first run that carries the ``requestState`` it was answered with (``redeem``):
    a replay of that retry is asked the question again, as a fresh call would be.
    """

    __slots__ = ("_last", "answers", "capabilities", "count", "nonce", "redeemed", "used", "version")

    def __init__(
        self, capabilities: dict[str, Any], version: str, answers: dict[str, dict[str, Any]], nonce: str = ""
    ) -> None:
        self.capabilities = capabilities
        self.version = version
        self.answers = answers
        self.nonce = nonce  # of the requestState this run was given
        self.used: dict[str, dict[str, Any]] = {}  # the answers this run consumed, in order
        self.count = 0
        self.redeemed = False
        self._last: tuple[str, dict[str, Any]] | None = None  # the last question answered from the state

    def can(self, method: str) -> bool:
        return inputs.client_can(method, self.capabilities, self.version)

    def ask(self, method: str, params: dict[str, Any], key: str | None) -> dict[str, Any]:
        check_question(method, params, self.version)
        self.count += 1
        key = key or f"{'elicit' if method == inputs.ELICIT else 'sample'}-{self.count}"
        if key in self.used:
            raise ValueError(f"Question key {key!r} was already used in this call")
        shaped = inputs.shape_params(method, params, self.version)
        digest = inputs.request_digest(method, shaped)
        known = self.answers.get(key)
        if known is not None and known.get("d") == digest:
            self.used[key] = known
            self._last = (key, {"method": method, "params": shaped})
            return checked_answer(method, params, known.get("r"))
        # The service refuses (-32021) a question the client did not declare it can answer.
        raise InputNeeded({key: {"method": method, "params": shaped}})

    def redeem(self) -> None:
        """The last answer authorizes work that must not run twice: use this run's state for
        it, or, if a run already did, drop the answer and ask the question again."""
        if self._last is None or self.redeemed:
            return
        if redeem(self.nonce):
            self.redeemed = True
            return
        key, question = self._last
        self.used.pop(key, None)
        raise InputNeeded({key: question})
