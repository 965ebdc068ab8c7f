"""Conversations as people read them, through the transcriber each wire format registers (addon/wire).

The content view, the offline report and the comparisons between turns read requests and answers only through
`conversation` and `read_answer`.
"""

from __future__ import annotations

from typing import Any

from ..answer.tap import read_recorded
from ..wire import TRANSCRIBERS
from ..wire.assembly import MessageMemo
from ..wire.conversation import Answer, Conversation, Message, Part, Usage


def conversation(wire_format: str, doc: Any, path: str = "", memo: MessageMemo | None = None) -> Conversation:
    """The conversation a request body of `wire_format` carries (`memo`: messages read before, to be reused)."""
    return TRANSCRIBERS[wire_format].request(doc, path, memo)


def read_answer(wire_format: str, body: bytes, *, sse: bool, aws_frames: bool = False) -> Answer:
    """The answer a recorded (decoded) response body holds: a JSON document, an SSE stream or AWS event-stream
    frames, split and read the way the proxy reads them as they pass."""
    assembler = TRANSCRIBERS[wire_format].assembler()
    problem = read_recorded(assembler, body, sse=sse, aws_frames=aws_frames)
    answer = assembler.finish()
    answer.problem = answer.problem or problem
    return answer


__all__ = [
    "TRANSCRIBERS",
    "MessageMemo",
    "Answer",
    "Conversation",
    "Message",
    "Part",
    "Usage",
    "conversation",
    "read_answer",
]
