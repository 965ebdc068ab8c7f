"""The interface every wire format's transcriber implements, and the answer assembler they share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import orjson

from ..shared import jsoncodec
from ..shared.limits import Budget
from ..shared.records import ReasoningRecord
from .base import event_documents
from .conversation import Answer, Conversation, Message, Part, Usage
from .sse import SSEEvent

# An answer is assembled for people to read; past this much text per message the rest is counted, not kept.
MAX_ASSEMBLED_CHARS = 4 * 1024 * 1024
# What a request's conversation is read to: past it, one message says how many more the body holds.
MAX_TRANSCRIBED_ITEMS = 100_000
T = TypeVar("T")


class Transcriber(Protocol):
    wire_format: str  # formats.WireFormat.name
    # Byte strings one of which every stream event holds that says the answer's model, id, usage or why it stopped.
    summary_markers: tuple[bytes, ...]

    def request(self, doc: Any, path: str, memo: MessageMemo | None = None) -> Conversation:
        """The conversation a request body asks about (`path`: the request's path, which names the model on some
        routes). Never raises for a body of the wrong shape: what it cannot read becomes an "other" part."""
        ...

    def assembler(self) -> AnswerAssembler:
        """A fresh assembler for one answer."""
        ...


class MessageMemo:
    """Messages already read, by their JSON and place: a client sends the same history again on every turn, and a
    report of a long session would otherwise read it again each time. The messages it hands out are shared, and
    never changed (a comparison marks copies)."""

    def __init__(self, limit: int = 500_000) -> None:
        self._messages: dict[tuple[bytes, str], Message] = {}
        self._limit = limit

    def get(self, item: Any, where: str, read: Callable[[Any, str], Message]) -> Message:
        try:
            key = (orjson.dumps(item), where)
        except TypeError:  # not JSON as orjson writes it (an integer past 64 bits): read it every time
            return read(item, where)
        found = self._messages.get(key)
        if found is None:
            if len(self._messages) >= self._limit:
                self._messages.clear()
            found = self._messages[key] = read(item, where)
        return found


class ListTranscriber:
    """A format whose request holds its conversation in one top-level list (`items_key`), one message per item,
    with what else the body says (model, system prompt, tools, settings) read by `preamble`."""

    wire_format: str
    items_key: str

    def preamble(self, doc: dict[str, Any], path: str) -> Conversation:
        raise NotImplementedError

    def message(self, item: Any, where: str) -> Message:
        raise NotImplementedError

    def lone_item(self, value: Any) -> Message:
        """What the body holds under `items_key` when that is not a list: shown as it is, unless a format reads it."""
        return Message("?", [other(self.items_key, value)], self.items_key)

    def request(self, doc: Any, path: str, memo: MessageMemo | None = None) -> Conversation:
        if not isinstance(doc, dict):  # what the path says (the model, on some routes) still holds
            conversation = self.preamble({}, path)
            conversation.messages.append(Message("?", [other("body", doc)], "body"))
            return conversation
        conversation = self.preamble(doc, path)
        items = doc.get(self.items_key)
        if items is not None and not isinstance(items, list):
            conversation.messages.append(self.lone_item(items))
        elif isinstance(items, list):
            key, read = self.items_key, self.message
            shown = items[:MAX_TRANSCRIBED_ITEMS]
            if memo is None:
                conversation.messages += [read(item, f"{key}[{i}]") for i, item in enumerate(shown)]
            else:
                conversation.messages += [memo.get(item, f"{key}[{i}]", read) for i, item in enumerate(shown)]
            if len(items) > len(shown):
                more = Part("other", text=f"{len(items) - len(shown):,} more items, not read here", field="cut")
                conversation.messages.append(Message("?", [more], f"{key}[{len(shown)}:]"))
        return conversation


class AnswerLimits:
    """What the assembly of one answer keeps: its streamed text in pieces (joined once, at the end) up to
    MAX_ASSEMBLED_CHARS in all, and so many entries of each kind (choices, candidates, items, tool calls). Past
    either the rest is counted, not kept, and `note` says how much."""

    __slots__ = ("kept", "dropped", "entries_left_out")

    def __init__(self) -> None:
        self.kept = 0
        self.dropped = 0
        self.entries_left_out = 0

    def add(self, pieces: list[str], piece: str) -> None:
        if self.kept + len(piece) <= MAX_ASSEMBLED_CHARS:
            pieces.append(piece)
            self.kept += len(piece)
        else:
            self.dropped += len(piece)

    def slot(self, slots: dict[Any, T], key: Any, make: Callable[[], T], limit: int) -> T | None:
        """The entry of `slots` under `key`, made when new; None once `slots` holds `limit` (counted)."""
        found = slots.get(key)
        if found is None:
            if len(slots) >= limit:
                self.entries_left_out += 1
                return None
            found = slots[key] = make()
        return found

    def note(self) -> Part | None:
        said = []
        if self.dropped:
            said.append(f"{self.dropped:,} more characters streamed")
        if self.entries_left_out:
            said.append(f"{self.entries_left_out:,} pieces of the answer past its bounds (choices, items, calls)")
        return Part("other", text="; ".join(said) + ", not kept here", field="cut") if said else None


class TextPieces:
    """One streamed text of an answer, kept as its pieces and joined once; past MAX_ASSEMBLED_CHARS only counted."""

    __slots__ = ("chars", "left_out", "pieces")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.chars = 0
        self.left_out = 0

    def add(self, piece: str) -> None:
        if self.chars + len(piece) > MAX_ASSEMBLED_CHARS:
            self.left_out += len(piece)
            return
        self.pieces.append(piece)
        self.chars += len(piece)

    def text(self) -> str:
        return "".join(self.pieces)


class AnswerAssembler:
    """Assembles one answer from its stream events or its whole body. It takes the place of a format's
    ResponseReader in `hooks.response_tap.read_recorded`, so a recorded stream is split the way the proxy splits it.

    Subclasses implement `event(data, name)` (one stream event's JSON) and `document(doc)` (a whole body); both
    fill `self.answer`.
    """

    markers = None  # every event matters
    unreadable = 0

    def __init__(self) -> None:
        self.budget = Budget()
        self.answer = Answer()
        self.kept = AnswerLimits()

    def feed_event(self, event: SSEEvent) -> None:
        self.answer.streamed = True
        data = event.data.strip()
        if not data or data == b"[DONE]":
            return
        # A recorded stream without the blank line between events folds many `data:` lines into one event: each
        # line is then a document of its own, as the proxy's readers take it.
        found = False
        for payload in event_documents(data):
            found = True
            self.answer.events += 1
            if isinstance(payload, dict):
                self.event(payload, event.event)
        if not found:
            self.unreadable += 1
            self.answer.unreadable += 1

    def feed_document(self, doc: Any) -> None:
        if isinstance(doc, list):  # Gemini's streamGenerateContent without alt=sse: one JSON array of chunks
            for chunk in doc:
                if isinstance(chunk, dict):
                    self.answer.events += 1
                    self.event(chunk, None)
            return
        if isinstance(doc, dict):
            self.document(doc)

    def skippable(self, data: bytes) -> bool:
        return False

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        return []

    def event(self, payload: dict[str, Any], name: str | None) -> None:
        raise NotImplementedError

    def document(self, doc: dict[str, Any]) -> None:
        raise NotImplementedError

    def finish(self) -> Answer:
        """The answer, once every event is in: parts that were assembled piece by piece are joined here."""
        return self.answer


def text_of(value: Any) -> str:
    """A value as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return jsoncodec.dumps(value).decode("utf-8", "replace")
    except (TypeError, ValueError):
        return repr(value)


def other(where: str, value: Any) -> Part:
    """A piece the transcriber does not know, kept as JSON text so nothing is hidden."""
    return Part("other", text=text_of(value), field=where)


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def block_list_parts(content: Any, where: str, block_parts: Callable[[Any, str], list[Part]]) -> list[Part]:
    """The parts of a content that is a string or a list of blocks (Anthropic, Bedrock Converse), each block read by
    the format's `block_parts`."""
    if isinstance(content, str):
        return [Part("text", text=content)] if content else []
    if not isinstance(content, list):
        return [] if content is None else [other(where, content)]
    return [part for i, block in enumerate(content) for part in block_parts(block, f"{where}[{i}]")]


def block_list_system(doc: dict[str, Any], block_parts: Callable[[Any, str], list[Part]]) -> list[Message]:
    """The top-level `system` of Anthropic and Bedrock Converse (a string or a list of blocks), as a message."""
    system = doc.get("system")
    if system in (None, "", []):
        return []
    return [Message("system", block_list_parts(system, "system", block_parts), "system")]


def block_list_message(message: Any, where: str, block_parts: Callable[[Any, str], list[Part]]) -> Message:
    """A message of a role and a content of blocks (Anthropic, Bedrock Converse)."""
    if not isinstance(message, dict):
        return Message("?", [other(where, message)], where)
    role = as_str(message.get("role")) or "?"
    return Message(role, block_list_parts(message.get("content"), f"{where}.content", block_parts), where)


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_from(doc: Any, **paths: str) -> Usage:
    """A Usage read from `doc` by dotted paths: usage_from(u, input="prompt_tokens", reasoning="a.b")."""
    found: dict[str, int | None] = {}
    for name, path in paths.items():
        value: Any = doc
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        found[name] = as_int(value)
    return Usage(**found)


def merge_usage(old: Usage, new: Usage) -> Usage:
    """Usage reported in pieces over a stream (Anthropic's message_start, then message_delta): the later wins."""
    return Usage(
        **{
            name: getattr(new, name) if getattr(new, name) is not None else getattr(old, name)
            for name in Usage.__slots__
        }
    )


__all__ = [
    "Answer",
    "AnswerAssembler",
    "Conversation",
    "ListTranscriber",
    "Message",
    "MessageMemo",
    "Part",
    "TextPieces",
    "Transcriber",
    "Usage",
]
