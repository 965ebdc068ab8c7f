"""The OpenAI Responses API (OpenAI, Azure, GitHub Copilot's and xAI's `/responses`): input and output items.

A request's `input` and an answer's `output` are lists of items, each shown as one message: `message` items by
their role, every other item by its type ("reasoning", "function_call", "function_call_output", ...). A reasoning
item's summary and reasoning text are readable; its `encrypted_content` is opaque. Every item's `id` (`rs_…`,
`fc_…`, `msg_…`: the ids the API's errors name) goes in the message's note.

A streamed answer is read from the final `response.completed` (or `.incomplete`, `.failed`) response's `output`
when it has one; else from each item's `response.output_item.done` copy; else, for an item that never finished
(a stream cut short), from its `output_item.added` stub and the deltas that arrived, joined once at the end.
"""

from __future__ import annotations

from typing import Any

from ...dialects.openai import deployment_model
from ..assembly import AnswerAssembler, ListTranscriber, as_str, other, text_of, usage_from
from ..conversation import Answer, Conversation, Message, Part, Usage
from .items import NAME
from .stream import OutputItem, ResponsesStream

WIRE_FORMAT = NAME
_SETTINGS = ("reasoning", "include", "previous_response_id", "store")
_TEXT_TYPES = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})
_MEDIA_TYPES = frozenset({"input_image", "input_file", "input_audio"})
_FINISHED = frozenset({"response.completed", "response.incomplete", "response.failed"})
_STARTED = frozenset({"response.created", "response.in_progress", "response.queued"})


def _media_label(chunk: dict[str, Any]) -> str:
    url = chunk.get("image_url") or chunk.get("file_url")
    if isinstance(url, str):
        return url if not url.startswith("data:") else f"{url[: url.find(',') + 1 or 40]}… ({len(url)} characters)"
    for key in ("filename", "file_id"):
        if isinstance(chunk.get(key), str):
            return chunk[key]
    data = chunk.get("file_data") or chunk.get("data")
    return f"{len(data)} characters of data" if isinstance(data, str) else ""


def _content_parts(content: Any, where: str) -> list[Part]:
    """A message item's `content`: a string, or a list of input_text / output_text / input_image / refusal ..."""
    if content is None:
        return []
    if isinstance(content, str):
        return [Part("text", text=content)] if content else []
    if not isinstance(content, list):
        return [other(f"{where}.content", content)]
    parts: list[Part] = []
    for chunk in content:
        kind = chunk.get("type") if isinstance(chunk, dict) else None
        if kind in _TEXT_TYPES and isinstance(chunk.get("text"), str):
            parts.append(Part("text", text=chunk["text"]))
        elif kind == "refusal":
            parts.append(Part("text", text=text_of(chunk.get("refusal")), field="refusal"))
        elif kind in _MEDIA_TYPES:
            parts.append(Part("media", name=kind, text=_media_label(chunk)))
        else:
            parts.append(other(f"{where}.content", chunk))
    return parts


def _texts(entries: Any, field: str, where: str) -> list[Part]:
    """A reasoning item's `summary` or `content`: a list of {type, text}."""
    if entries is None:
        return []
    if isinstance(entries, str):
        return [Part("reasoning", text=entries, field=field)] if entries else []
    if not isinstance(entries, list):
        return [other(f"{where}.{field}", entries)]
    parts = []
    for entry in entries:
        text = entry.get("text") if isinstance(entry, dict) else None
        if isinstance(text, str):
            parts.append(Part("reasoning", text=text, field=field))
        else:
            parts.append(other(f"{where}.{field}", entry))
    return parts


def _output_text(output: Any) -> str:
    """A function call's output as text: a string as it is, a list of input_text parts joined."""
    if (
        isinstance(output, list)
        and output
        and all(isinstance(o, dict) and isinstance(o.get("text"), str) for o in output)
    ):
        return "\n".join(o["text"] for o in output)
    return text_of(output)


def item_message(item: Any, where: str) -> Message:
    """One input or output item as a message."""
    if not isinstance(item, dict):
        return Message("?", [other(where, item)], where)
    kind = as_str(item.get("type"))
    item_id = as_str(item.get("id"))
    note = f"id {item_id}" if item_id else ""
    if kind == "message" or (kind is None and "role" in item):
        role = as_str(item.get("role")) or "?"
        return Message(role, _content_parts(item.get("content"), where), where, note=note)
    if kind == "reasoning":
        parts = _texts(item.get("summary"), "summary", where) + _texts(item.get("content"), "content", where)
        encrypted = item.get("encrypted_content")
        if encrypted not in (None, ""):
            parts.append(Part.opaque("encrypted_content", encrypted))
        return Message("reasoning", parts, where, note=note)
    call_id = as_str(item.get("call_id"))
    if kind in ("function_call", "custom_tool_call"):
        arguments = item.get("arguments") if kind == "function_call" else item.get("input")
        part = Part("tool_call", text=text_of(arguments), call_id=call_id, name=as_str(item.get("name")))
        return Message(kind, [part], where, note=note)
    if kind in ("function_call_output", "custom_tool_call_output"):
        part = Part("tool_result", text=_output_text(item.get("output")), call_id=call_id)
        return Message(kind, [part], where, note=note)
    return Message(kind or "?", [other(where, item)], where, note=note)


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        name = tool.get("name") if isinstance(tool.get("name"), str) else tool.get("type")
        if isinstance(name, str):
            names.append(name)
    return names


class ResponsesTranscriber(ListTranscriber):
    wire_format = WIRE_FORMAT
    # The events that say the answer's model, id, usage and why it stopped (the response object's own events): an
    # answer read for its summary alone reads no other (ReadingAndAssembling).
    summary_markers = (b'"response.created"', b'"response.completed"', b'"response.incomplete"', b'"response.failed"')
    items_key = "input"

    def preamble(self, doc: dict[str, Any], path: str) -> Conversation:
        conversation = Conversation(WIRE_FORMAT)
        conversation.model = as_str(doc.get("model")) or deployment_model(path)
        conversation.stream = doc.get("stream") is True
        instructions = doc.get("instructions")
        if isinstance(instructions, str) and instructions:
            conversation.messages.append(Message("system", [Part("text", text=instructions)], "instructions"))
        elif isinstance(instructions, list):  # a prompt template's instructions come back as input items
            parts = [p for index, i in enumerate(instructions) for p in item_message(i, f"instructions[{index}]").parts]
            conversation.messages.append(Message("system", parts, "instructions"))
        elif instructions is not None:
            conversation.messages.append(Message("system", [other("instructions", instructions)], "instructions"))
        conversation.tools = _tool_names(doc.get("tools"))
        conversation.settings = {key: doc[key] for key in _SETTINGS if doc.get(key) is not None}
        return conversation

    def message(self, item: Any, where: str) -> Message:
        return item_message(item, where)

    def lone_item(self, value: Any) -> Message:
        if isinstance(value, str):  # `input` as one user message's text
            return Message("user", [Part("text", text=value)], "input")
        return super().lone_item(value)

    def assembler(self) -> ResponsesAssembler:
        return ResponsesAssembler()


def responses_usage(usage: Any) -> Usage:
    return usage_from(
        usage,
        input="input_tokens",
        output="output_tokens",
        reasoning="output_tokens_details.reasoning_tokens",
        cache_read="input_tokens_details.cached_tokens",
        total="total_tokens",
    )


def _problem(error: Any) -> str | None:
    if isinstance(error, dict):
        return text_of(error.get("message") or error)
    if isinstance(error, str) and error:
        return error
    return None


def output_item_message(item: OutputItem, where: str) -> Message:
    """A streamed output item as one message, with how much of its text was left out."""
    found, left_out = item.assembled()
    message = item_message(found, where)
    if left_out:
        message.note = ", ".join(filter(None, (message.note, f"{left_out:,} characters left out")))
    return message


class ResponsesAssembler(AnswerAssembler):
    def __init__(self) -> None:
        super().__init__()
        self.stream = ResponsesStream(keep_text=True, kept=self.kept)

    def _response(self, response: Any) -> None:
        """A response object (created, completed, a JSON answer): the answer's model, usage, status and error."""
        if not isinstance(response, dict):
            return
        answer = self.answer
        if isinstance(response.get("model"), str):
            answer.model = response["model"]
        if isinstance(response.get("id"), str):
            answer.id = response["id"]
        if isinstance(response.get("usage"), dict):
            answer.usage = responses_usage(response["usage"])
        incomplete = response.get("incomplete_details")
        reason = incomplete.get("reason") if isinstance(incomplete, dict) else None
        if isinstance(reason, str):
            answer.finish = reason
        elif isinstance(response.get("status"), str):
            answer.finish = response["status"]
        problem = _problem(response.get("error"))
        if problem:
            answer.problem = problem

    def event(self, payload: dict[str, Any], name: str | None) -> None:
        kind = payload.get("type") if isinstance(payload.get("type"), str) else name
        if kind in _STARTED or kind in _FINISHED:
            self._response(payload.get("response"))
        elif kind == "error":
            self.answer.problem = _problem(payload.get("error")) or _problem(payload) or "error"
            return
        self.stream.event(payload, name)

    def document(self, doc: dict[str, Any]) -> None:
        self._response(doc)
        self.stream.response(doc)

    def finish(self) -> Answer:
        output = self.stream.output
        if isinstance(output, list):
            for index, item in enumerate(output):
                self.answer.messages.append(item_message(item, f"output[{index}]"))
        elif output is not None:
            self.answer.messages.append(Message("?", [other("output", output)], "output"))
        else:
            items = self.stream.items
            for index in sorted(items):
                self.answer.messages.append(output_item_message(items[index], f"output[{index}]"))
        note = self.kept.note()
        if note is not None:
            self.answer.messages.append(Message("?", [note], "output"))
        self.stream.items.clear()
        self.stream.output = None
        return self.answer


TRANSCRIBER = ResponsesTranscriber()
