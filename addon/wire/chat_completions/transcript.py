"""Chat Completions (OpenAI and every host that copies it): messages, their reasoning fields, streamed deltas.

Reasoning comes back under several names: `reasoning_content` (DeepSeek, Kimi, GLM, Qwen), `reasoning_text` with an
opaque `reasoning_opaque` (GitHub Copilot), `reasoning` and `reasoning_details` (OpenRouter), Mistral's thinking
chunks inside `content`, MiniMax's `<think>` block at the start of `content`, and a Gemini `thought_signature` on a
call's `extra_content` (Gemini's OpenAI-compatible endpoint).
"""

from __future__ import annotations

from typing import Any

from ...shared.limits import MAX_CHOICES, MAX_CONTENT_BLOCKS, MAX_TOOL_CALLS
from ..assembly import AnswerAssembler, AnswerLimits, ListTranscriber, other, text_of, usage_from
from ..conversation import Answer, Conversation, Message, Part, Usage
from .fields import DIALECT_FIELDS, THINK_CLOSE, THINK_OPEN

WIRE_FORMAT = "chat_completions"
READABLE_FIELDS = ("reasoning_content", "reasoning_text", "reasoning")
OPAQUE_FIELDS = ("reasoning_opaque", *DIALECT_FIELDS)
_SETTINGS = ("reasoning_effort", "reasoning", "thinking", "enable_thinking", "thinking_budget", "include_reasoning")


def _content_parts(content: Any, where: str) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return _think_split(content)
    if not isinstance(content, list):
        return [other(f"{where}.content", content)]
    parts: list[Part] = []
    for chunk in content:
        kind = chunk.get("type") if isinstance(chunk, dict) else None
        if kind == "text":
            parts += _think_split(text_of(chunk.get("text")))
        elif kind == "thinking":  # Mistral: {"type": "thinking", "thinking": [{"type": "text", "text": ...}]}
            inner = chunk.get("thinking")
            texts = [text_of(c.get("text")) for c in inner if isinstance(c, dict)] if isinstance(inner, list) else []
            parts.append(Part("reasoning", text="".join(texts) or text_of(inner), field="thinking"))
        elif kind in ("image_url", "input_audio", "file", "image"):
            parts.append(Part("media", name=kind, text=_media_label(chunk)))
        else:
            parts.append(other(f"{where}.content", chunk))
    return parts


def _media_label(chunk: dict[str, Any]) -> str:
    url = chunk.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if isinstance(url, str):
        return url if not url.startswith("data:") else f"{url[: url.find(',') + 1 or 40]}… ({len(url)} characters)"
    return ""


def _think_split(text: str) -> list[Part]:
    """MiniMax sends its reasoning as a `<think>` block at the start of the content, and wants it back there."""
    stripped = text.lstrip()
    if stripped.startswith(THINK_OPEN) and THINK_CLOSE in stripped:
        thought, _, rest = stripped[len(THINK_OPEN) :].partition(THINK_CLOSE)
        parts = [Part("reasoning", text=thought.strip("\n"), field="<think>")]
        return parts + ([Part("text", text=rest.lstrip("\n"))] if rest.strip() else [])
    return [Part("text", text=text)] if text else []


def _reasoning_parts(message: dict[str, Any], first_call: str | None) -> list[Part]:
    parts: list[Part] = []
    for name in READABLE_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            parts.append(Part("reasoning", text=value, field=name))
    for name in OPAQUE_FIELDS:
        value = message.get(name)
        if value not in (None, ""):
            parts.append(Part.opaque(name, value, first_call))
    details = message.get("reasoning_details")
    if isinstance(details, list):
        for position, entry in enumerate(details):
            if not isinstance(entry, dict):
                continue
            field = f"reasoning_details[{position}]"
            text = entry.get("text") if isinstance(entry.get("text"), str) else entry.get("summary")
            if isinstance(text, str) and text:
                parts.append(Part("reasoning", text=text, field=field))
            for key in ("signature", "data"):
                if isinstance(entry.get(key), str) and entry[key]:
                    parts.append(Part.opaque(f"{field}.{key}", entry[key], first_call))
    return parts


def _call_parts(calls: Any) -> list[Part]:
    parts: list[Part] = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        name = function.get("name") if isinstance(function.get("name"), str) else None
        parts.append(Part("tool_call", text=text_of(function.get("arguments")), call_id=call_id, name=name))
        extra = call.get("extra_content")
        google = extra.get("google") if isinstance(extra, dict) else None
        signature = google.get("thought_signature") if isinstance(google, dict) else None
        signature = signature or function.get("thought_signature")
        if isinstance(signature, str) and signature:
            parts.append(Part.opaque("thought_signature", signature, call_id))
    return parts


def message_of(message: Any, where: str) -> Message:
    if not isinstance(message, dict):
        return Message("?", [other(where, message)], where)
    role = message.get("role") if isinstance(message.get("role"), str) else "?"
    calls = message.get("tool_calls")
    first_call = None
    if isinstance(calls, list) and calls and isinstance(calls[0], dict) and isinstance(calls[0].get("id"), str):
        first_call = calls[0]["id"]
    if role == "tool":
        call_id = message.get("tool_call_id") if isinstance(message.get("tool_call_id"), str) else None
        result = _content_parts(message.get("content"), where)
        text = "\n".join(p.text for p in result)
        return Message(role, [Part("tool_result", text=text, call_id=call_id, name=message.get("name"))], where)
    parts = _reasoning_parts(message, first_call) + _content_parts(message.get("content"), where) + _call_parts(calls)
    return Message(role, parts, where)


class ChatTranscriber(ListTranscriber):
    wire_format = WIRE_FORMAT
    items_key = "messages"

    def preamble(self, doc: dict[str, Any], path: str) -> Conversation:
        return Conversation(
            WIRE_FORMAT,
            model=doc.get("model") if isinstance(doc.get("model"), str) else None,
            stream=doc.get("stream") is True,
            tools=_tool_names(doc.get("tools")),
            settings={key: doc[key] for key in _SETTINGS if key in doc},
        )

    def message(self, item: Any, where: str) -> Message:
        return message_of(item, where)

    def assembler(self) -> ChatAssembler:
        return ChatAssembler()


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str):
            names.append(name)
    return names


def chat_usage(usage: Any) -> Usage:
    found = usage_from(
        usage,
        input="prompt_tokens",
        output="completion_tokens",
        reasoning="completion_tokens_details.reasoning_tokens",
        cache_read="prompt_tokens_details.cached_tokens",
        total="total_tokens",
    )
    if found.cache_read is None:  # DeepSeek reports its context cache this way
        found.cache_read = usage_from(usage, cache_read="prompt_cache_hit_tokens").cache_read
    return found


class _Choice:
    """One choice's deltas, joined at the end: a 2,000-event answer is 2,000 pieces, joined once."""

    def __init__(self, kept: AnswerLimits) -> None:
        self.kept = kept
        self.role = "assistant"
        self.pieces: dict[str, list[str]] = {}  # field ("content", "reasoning_content", ...) -> its pieces
        self.details: dict[int, dict[str, list[str]]] = {}
        self.calls: dict[int, dict[str, Any]] = {}

    def add(self, delta: dict[str, Any]) -> None:
        for name in ("content", *READABLE_FIELDS, *OPAQUE_FIELDS):
            value = delta.get(name)
            if isinstance(value, str) and value:
                self.kept.add(self.pieces.setdefault(name, []), value)
            elif name == "content" and isinstance(value, list):  # Mistral's chunks in a stream
                for chunk in value:
                    if not isinstance(chunk, dict):
                        continue
                    if chunk.get("type") == "text":
                        self.kept.add(self.pieces.setdefault("content", []), text_of(chunk.get("text")))
                    elif chunk.get("type") == "thinking" and isinstance(chunk.get("thinking"), list):
                        texts = [text_of(c.get("text")) for c in chunk["thinking"] if isinstance(c, dict)]
                        self.kept.add(self.pieces.setdefault("thinking", []), "".join(texts))
        details = delta.get("reasoning_details")
        for position, entry in enumerate(details if isinstance(details, list) else []):
            if isinstance(entry, dict):
                index = entry.get("index") if isinstance(entry.get("index"), int) else position
                slot = self.kept.slot(self.details, index, dict, MAX_CONTENT_BLOCKS)
                if slot is None:
                    continue
                for key in ("text", "summary", "signature", "data"):
                    if isinstance(entry.get(key), str) and entry[key]:
                        self.kept.add(slot.setdefault(key, []), entry[key])
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict):
                continue
            index = call.get("index") if isinstance(call.get("index"), int) else len(self.calls)
            slot = self.kept.slot(self.calls, index, lambda: {"arguments": []}, MAX_TOOL_CALLS)
            if slot is None:
                continue
            if isinstance(call.get("id"), str):
                slot["id"] = call["id"]
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            if isinstance(function.get("name"), str):
                slot["name"] = function["name"]
            if isinstance(function.get("arguments"), str):
                self.kept.add(slot["arguments"], function["arguments"])
            if isinstance(call.get("extra_content"), dict):
                slot["extra_content"] = call["extra_content"]

    def message(self, where: str) -> Message:
        message: dict[str, Any] = {"role": self.role}
        for name, pieces in self.pieces.items():
            message[name] = "".join(pieces)
        thinking = message.pop("thinking", None)
        if self.details:
            message["reasoning_details"] = [
                {key: "".join(pieces) for key, pieces in self.details[index].items()} for index in sorted(self.details)
            ]
        if self.calls:
            message["tool_calls"] = [
                {
                    **({"id": slot["id"]} if "id" in slot else {}),
                    "function": {"name": slot.get("name"), "arguments": "".join(slot["arguments"])},
                    **({"extra_content": slot["extra_content"]} if "extra_content" in slot else {}),
                }
                for slot in (self.calls[index] for index in sorted(self.calls))
            ]
        result = message_of(message, where)
        if thinking:
            result.parts.insert(0, Part("reasoning", text=thinking, field="thinking"))
        return result


class ChatAssembler(AnswerAssembler):
    def __init__(self) -> None:
        super().__init__()
        self._choices: dict[int, _Choice] = {}

    def event(self, payload: dict[str, Any], name: str | None) -> None:
        answer = self.answer
        if isinstance(payload.get("model"), str):
            answer.model = payload["model"]
        if isinstance(payload.get("usage"), dict):
            answer.usage = chat_usage(payload["usage"])
        if isinstance(payload.get("error"), dict):
            answer.problem = text_of(payload["error"].get("message") or payload["error"])
        for position, choice in enumerate(self._choice_list(payload)):
            if not isinstance(choice, dict):
                continue
            index = choice.get("index") if isinstance(choice.get("index"), int) else position
            state = self.kept.slot(self._choices, index, lambda: _Choice(self.kept), MAX_CHOICES)
            if state is None:
                continue
            delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            state.add(delta)
            if isinstance(choice.get("finish_reason"), str):
                answer.finish = choice["finish_reason"]

    def document(self, doc: dict[str, Any]) -> None:
        answer = self.answer
        answer.model = doc.get("model") if isinstance(doc.get("model"), str) else None
        answer.usage = chat_usage(doc.get("usage"))
        for position, choice in enumerate(self._choice_list(doc)):
            if not isinstance(choice, dict):
                continue
            answer.messages.append(message_of(choice.get("message"), f"choices[{position}]"))
            if isinstance(choice.get("finish_reason"), str):
                answer.finish = choice["finish_reason"]

    def _choice_list(self, doc: dict[str, Any]) -> list[Any]:
        choices = doc.get("choices")
        if not isinstance(choices, list):
            return []
        self.kept.entries_left_out += max(0, len(choices) - MAX_CHOICES)
        return choices[:MAX_CHOICES]

    def finish(self) -> Answer:
        for index in sorted(self._choices):
            self.answer.messages.append(self._choices[index].message(f"choices[{index}]"))
        self._choices.clear()
        note = self.kept.note()
        if note is not None and self.answer.messages:
            self.answer.messages[-1].parts.append(note)
        return self.answer


TRANSCRIBER = ChatTranscriber()
