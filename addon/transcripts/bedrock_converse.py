"""Placeholder until this format's transcriber is written."""

from __future__ import annotations

from typing import Any

from .base import AnswerAssembler, other
from .model import Conversation, Message

WIRE_FORMAT = "bedrock_converse"


class _Transcriber:
    wire_format = WIRE_FORMAT

    def request(self, doc: Any, path: str, memo: Any = None) -> Conversation:
        return Conversation(WIRE_FORMAT, messages=[Message("?", [other("body", doc)], "body")])

    def assembler(self) -> AnswerAssembler:
        return _Assembler()


class _Assembler(AnswerAssembler):
    def event(self, payload: dict[str, Any], name: str | None) -> None:
        pass

    def document(self, doc: dict[str, Any]) -> None:
        pass


TRANSCRIBER = _Transcriber()
