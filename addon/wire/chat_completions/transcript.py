"""Chat Completions (OpenAI and every host that copies it): messages, their reasoning fields, streamed deltas.

Reasoning comes back under several names: `reasoning_content` (DeepSeek, Kimi, GLM, Qwen), `reasoning_text` with an
opaque `reasoning_opaque` (GitHub Copilot), `reasoning` and `reasoning_details` (OpenRouter), Mistral's thinking
chunks inside `content`, MiniMax's `<think>` block at the start of `content`, and a Gemini `thought_signature` on a
call's `extra_content` (Gemini's OpenAI-compatible endpoint).
"""

from __future__ import annotations

from typing import Any

from ...shared.limits import MAX_CHOICES
from ..assembly import AnswerAssembler, ListTranscriber, other, text_of, usage_from
from ..conversation import Answer, Conversation, Message, Part, Usage
from .fields import DIALECT_FIELDS, THINK_CLOSE, THINK_OPEN
from .keep import AnswerKeep
from .stream import ChatStream, Choice

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
    # The events that say the answer's model, id, usage and why it stopped (its last chunks; each chunk names its id
    # and model): an answer read for its summary alone reads no other (ReadingAndAssembling).
    # OpenAI sends `"usage":null` on every chunk when stream_options asks for usage: only an object is a summary.
    summary_markers = (b'"usage":{', b'"usage": {', b'"finish_reason":"', b'"finish_reason": "')
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
    if found.reasoning is None:  # GitHub Copilot: a top-level `usage.reasoning_tokens` (its Gemini 3 captures)
        found.reasoning = usage_from(usage, reasoning="reasoning_tokens").reasoning
    return found


def _message_of(choice: Choice, where: str) -> Message:
    """A streamed choice as the message it amounts to, read as a whole one is."""
    message: dict[str, Any] = {"role": "assistant"}
    for name, text in choice.texts.items():
        message[name] = "".join(text.pieces)
    if choice.details:
        message["reasoning_details"] = choice.details.entries()
    if choice.calls:
        message["tool_calls"] = [
            {
                **({"id": slot.id} if slot.id else {}),
                "function": {"name": slot.name or None, "arguments": "".join(slot.arguments.pieces)},
                **({"extra_content": slot.fields["extra_content"]} if "extra_content" in slot.fields else {}),
            }
            for slot in (choice.calls[index] for index in sorted(choice.calls))
        ]
    result = message_of(message, where)
    thinking = choice.chunks.text() if choice.chunks else ""
    if thinking:
        result.parts.insert(0, Part("reasoning", text=thinking, field="thinking"))
    return result


class ChatAssembler(AnswerAssembler):
    """An answer assembled as the capture assembles it (stream.py), with its text, within AnswerLimits."""

    def __init__(self) -> None:
        super().__init__()
        self._stream = ChatStream(AnswerKeep(self.kept), keep_text=True)

    def event(self, payload: dict[str, Any], name: str | None) -> None:
        answer = self.answer
        if isinstance(payload.get("model"), str):
            answer.model = payload["model"]
        if isinstance(payload.get("id"), str):
            answer.id = payload["id"]
        if isinstance(payload.get("usage"), dict):
            answer.usage = chat_usage(payload["usage"])
        if isinstance(payload.get("error"), dict):
            answer.problem = text_of(payload["error"].get("message") or payload["error"])
        choices = payload.get("choices")
        if isinstance(choices, list) and len(choices) > MAX_CHOICES:  # the rest counted, not read
            payload = {**payload, "choices": self._choice_list(payload)}
        stream = self._stream
        stream.feed(payload)
        if stream.finish is not None:
            answer.finish = stream.finish

    def document(self, doc: dict[str, Any]) -> None:
        answer = self.answer
        answer.model = doc.get("model") if isinstance(doc.get("model"), str) else None
        answer.id = doc.get("id") if isinstance(doc.get("id"), str) else None
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
        choices = self._stream.choices
        for index in sorted(choices):
            self.answer.messages.append(_message_of(choices[index], f"choices[{index}]"))
        choices.clear()
        note = self.kept.note()
        if note is not None and self.answer.messages:
            self.answer.messages[-1].parts.append(note)
        return self.answer


TRANSCRIBER = ChatTranscriber()
