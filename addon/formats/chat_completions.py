"""OpenAI-style `/chat/completions` with reasoning kept on the assistant message.

Covers GitHub Copilot's `reasoning_opaque` / `reasoning_text` (Gemini models)
and `reasoning_content` (DeepSeek thinking mode, Moonshot Kimi, Z.ai GLM). A
response carries the reasoning once per assistant turn, not per tool call, so a
turn's record is linked to every tool call id of that turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import jsoncodec
from ..records import ReasoningRecord, RepairAction, ToolCallRef
from ..sse_parser import SSEEvent
from .base import CacheView, CallHit, RepairContext, body_model, call_lookup_keys

NAME = "chat_completions"
REASONING_FIELDS = ("reasoning_text", "reasoning_opaque", "reasoning_content")
TEXT_FIELDS = frozenset({"reasoning_text", "reasoning_content"})
_EMPTY_CONTENT = (None, "", [])


@dataclass(slots=True)
class _ToolCallSlot:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _ChoiceState:
    fields: dict[str, list[str]] = field(default_factory=dict)
    calls: dict[int, _ToolCallSlot] = field(default_factory=dict)

    def add(self, part: dict[str, Any]) -> None:
        for name in REASONING_FIELDS:
            value = part.get(name)
            if isinstance(value, str):
                self.fields.setdefault(name, []).append(value)
        calls = part.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict):
                    self._add_call(call)

    def _add_call(self, call: dict[str, Any]) -> None:
        call_id = call.get("id") if isinstance(call.get("id"), str) else ""
        index = call.get("index")
        if not isinstance(index, int):
            # Without an index, a new id starts a new call and a bare fragment continues the last.
            known = any(slot.id == call_id for slot in self.calls.values())
            index = len(self.calls) if (call_id and not known) or not self.calls else max(self.calls)
        slot = self.calls.setdefault(index, _ToolCallSlot())
        if call_id and not slot.id:
            slot.id = call_id
        function = call.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if isinstance(name, str) and name and not slot.name:
                slot.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                slot.arguments.append(arguments)


def json_payloads(data: bytes) -> Iterator[Any]:
    """The JSON documents in one SSE event's data.

    Some recorded streams lack the blank line between events, which folds many
    `data:` lines into one event; each line is then a document of its own.
    """
    try:
        yield jsoncodec.loads(data)
        return
    except ValueError:
        if b"\n" not in data:
            return
    for line in data.split(b"\n"):
        try:
            yield jsoncodec.loads(line)
        except ValueError:
            continue


class ChatCompletionsReader:
    def __init__(self) -> None:
        self.response_id: str | None = None
        self.response_model: str | None = None
        self._choices: dict[int, _ChoiceState] = {}

    def feed_event(self, event: SSEEvent) -> None:
        data = event.data
        if data == b"[DONE]":
            return
        # Most chunks carry only answer text; parse just the ones that can matter.
        if self.response_id is not None and b"reasoning" not in data and b"tool_calls" not in data:
            return
        for doc in json_payloads(data):
            self._feed(doc, "delta")

    def feed_document(self, doc: Any) -> None:
        self._feed(doc, "message")

    def _feed(self, doc: Any, part_key: str) -> None:
        if not isinstance(doc, dict):
            return
        if self.response_id is None and isinstance(doc.get("id"), str):
            self.response_id = doc["id"]
        if self.response_model is None and isinstance(doc.get("model"), str):
            self.response_model = doc["model"]
        choices = doc.get("choices")
        if not isinstance(choices, list):
            return
        for position, choice in enumerate(choices):
            if not isinstance(choice, dict):
                continue
            part = choice.get(part_key)
            if not isinstance(part, dict):
                continue
            index = choice.get("index")
            self._choices.setdefault(index if isinstance(index, int) else position, _ChoiceState()).add(part)

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        records = []
        for state in self._choices.values():
            calls = [
                ToolCallRef(id=slot.id, name=slot.name, arguments=jsoncodec.join_text(slot.arguments))
                for slot in state.calls.values()
                if slot.id
            ]
            # A cut stream is only trusted once tool calls began: the reasoning before them is whole.
            if not state.fields or (not complete and not calls):
                continue
            records.append(
                ReasoningRecord(
                    wire_format=NAME,
                    fields={name: jsoncodec.join_text(parts) for name, parts in state.fields.items()},
                    tool_calls=calls,
                    response_id=self.response_id,
                    response_model=self.response_model,
                    complete=complete,
                )
            )
        return records


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _call_parts(call: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A request tool call's id, function name and arguments."""
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    name = function.get("name") if isinstance(function.get("name"), str) else None
    return call_id, name, function.get("arguments", "")


def _find(message: dict[str, Any], cache: CacheView) -> CallHit | None:
    for call in _tool_calls(message):
        hit = cache.call(*_call_parts(call))
        if hit is not None:
            return hit
    return None


def _is_assistant(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "assistant"


def _has_tool_calls(message: dict[str, Any]) -> bool:
    return isinstance(message.get("tool_calls"), list) and bool(message["tool_calls"])


def _has_reasoning(message: dict[str, Any]) -> bool:
    return any(message.get(name) is not None for name in REASONING_FIELDS)


def _is_split_pair(first: Any, second: Any, cache: CacheView) -> bool:
    """A turn the client sent as two assistant messages: text/reasoning, then tool calls."""
    if not (_is_assistant(first) and _is_assistant(second)):
        return False
    if _has_tool_calls(first) or not _has_tool_calls(second):
        return False
    if second.get("content") not in _EMPTY_CONTENT or _has_reasoning(second):
        return False
    return _has_reasoning(first) or _find(second, cache) is not None


def _merge(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    merged = dict(first)
    for key, value in second.items():
        if key != "content" and merged.get(key) in _EMPTY_CONTENT:
            merged[key] = value
    return merged


class ChatCompletions:
    name = NAME
    text_fields = TEXT_FIELDS

    def claims(self, method: str, path: str, body: bytes) -> bool:
        if method != "POST":
            return False
        route = path.split("?", 1)[0].rstrip("/")
        return route.endswith("/chat/completions") and b'"messages"' in body

    def request_model(self, path: str, body: bytes, doc: Any | None) -> str | None:
        return body_model(body, doc)

    def may_need_repair(self, body: bytes) -> bool:
        # Every repair here concerns an assistant message that holds tool calls.
        return b'"tool_calls"' in body

    def reader(self) -> ChatCompletionsReader:
        return ChatCompletionsReader()

    def lookup_keys(self, doc: Any, model: str | None) -> list[str]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list):
            return []
        return [
            key
            for message in messages
            if _is_assistant(message)
            for call in _tool_calls(message)
            for key in call_lookup_keys(model, *_call_parts(call))
        ]

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list):
            return []
        actions: list[RepairAction] = []
        index = 0
        while index + 1 < len(messages):
            if _is_split_pair(messages[index], messages[index + 1], cache):
                messages[index : index + 2] = [_merge(messages[index], messages[index + 1])]
                actions.append(RepairAction(kind="merged", location=f"messages[{index}]", index=index))
            index += 1
        for index, message in enumerate(messages):
            if not (_is_assistant(message) and _has_tool_calls(message)):
                continue
            if message.get("content") == []:
                message["content"] = None
                actions.append(RepairAction(kind="content_null", location=f"messages[{index}]", index=index))
            actions.extend(_restore(index, message, cache))
        return actions


def _restore(index: int, message: dict[str, Any], cache: CacheView) -> list[RepairAction]:
    hit = _find(message, cache)
    if hit is None:
        return []
    record = hit.record
    restored = [name for name, value in record.fields.items() if message.get(name) is None]
    for name in restored:
        message[name] = record.fields[name]
    if not restored:
        return []
    return [
        RepairAction(
            kind="restored",
            location=f"messages[{index}]",
            index=index,
            fields=restored,
            tool_call_id=hit.call.id,
            response_id=record.response_id,
            via=hit.via,
        )
    ]
