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
from ...shared.limits import MAX_CONTENT_BLOCKS
from ..assembly import MAX_ASSEMBLED_CHARS, AnswerAssembler, ListTranscriber, as_str, other, text_of, usage_from
from ..conversation import Answer, Conversation, Message, Part, Usage
from .format import NAME

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


class _Pieces:
    """One streamed text, kept as its pieces and joined once; past MAX_ASSEMBLED_CHARS only counted."""

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


class _Item:
    """One output item of a stream: its latest whole copy (added, then done) and the deltas that arrived."""

    __slots__ = ("added", "arguments", "content", "done", "reasoning", "summary")

    def __init__(self) -> None:
        self.added: dict[str, Any] | None = None
        self.done: dict[str, Any] | None = None
        self.content: dict[int, _Pieces] = {}  # output text (and refusal) by content_index
        self.summary: dict[int, _Pieces] = {}  # reasoning summary text by summary_index
        self.reasoning: dict[int, _Pieces] = {}  # reasoning text by content_index
        self.arguments = _Pieces()  # a function call's arguments, a custom tool call's input

    def message(self, where: str) -> Message:
        if self.done is not None:
            return item_message(self.done, where)
        item: dict[str, Any] = dict(self.added) if self.added is not None else {}
        kind = item.get("type")
        if kind is None:  # no stub arrived: judge the item by its deltas
            kind = "function_call" if self.arguments.pieces else "reasoning" if self.summary or self.reasoning else None
            item["type"] = kind or "message"
            if kind is None:
                item.setdefault("role", "assistant")
        if self.content:
            item["content"] = [{"type": "output_text", "text": self.content[i].text()} for i in sorted(self.content)]
        if self.summary:
            item["summary"] = [{"type": "summary_text", "text": self.summary[i].text()} for i in sorted(self.summary)]
        if self.reasoning:
            item["content"] = [
                {"type": "reasoning_text", "text": self.reasoning[i].text()} for i in sorted(self.reasoning)
            ]
        if self.arguments.pieces:
            item["input" if item["type"] == "custom_tool_call" else "arguments"] = self.arguments.text()
        message = item_message(item, where)
        left_out = (
            sum(p.left_out for p in (*self.content.values(), *self.summary.values(), *self.reasoning.values()))
            + self.arguments.left_out
        )
        if left_out:
            message.note = ", ".join(filter(None, (message.note, f"{left_out:,} characters left out")))
        return message


def _index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class ResponsesAssembler(AnswerAssembler):
    def __init__(self) -> None:
        super().__init__()
        self._items: dict[int, _Item] = {}
        self._highest = -1  # the highest output index so far: an item without one comes after it
        self._by_id: dict[str, int] = {}
        self._final: list[Any] | None = None  # the terminal response's output, when it had one

    def _item(self, payload: dict[str, Any], item_id: str | None = None) -> _Item:
        """The slot of the item an event is about: by its output_index, else by its item id, else the latest."""
        index = _index(payload.get("output_index"))
        item_id = item_id or as_str(payload.get("item_id"))
        if index is None:
            if item_id is not None:
                index = self._by_id.get(item_id, self._highest + 1)
            else:
                index = max(self._highest, 0)
        slot = self.kept.slot(self._items, index, _Item, MAX_CONTENT_BLOCKS)
        if slot is None:
            return _Item()  # past the bound: read, not kept
        self._highest = max(self._highest, index)
        if item_id is not None and len(self._by_id) < MAX_CONTENT_BLOCKS:
            self._by_id.setdefault(item_id, index)
        return slot

    def _response(self, response: Any) -> None:
        """A response object (created, completed, a JSON answer): the answer's model, usage, status and error."""
        if not isinstance(response, dict):
            return
        answer = self.answer
        if isinstance(response.get("model"), str):
            answer.model = response["model"]
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
            response = payload.get("response")
            self._response(response)
            if kind in _FINISHED and isinstance(response, dict):
                output = response.get("output")
                if isinstance(output, list) and output:
                    self._final = output
            return
        if kind == "error":
            self.answer.problem = _problem(payload.get("error")) or _problem(payload) or "error"
            return
        if not isinstance(kind, str) or not kind.startswith("response."):
            return
        delta = payload.get("delta")
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = payload.get("item")
            if isinstance(item, dict):
                slot = self._item(payload, as_str(item.get("id")))
                if kind.endswith("added"):
                    slot.added = item
                else:
                    slot.done = item
        elif not isinstance(delta, str):
            return
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            self._pieces(self._item(payload).content, payload.get("content_index")).add(delta)
        elif kind == "response.reasoning_summary_text.delta":
            self._pieces(self._item(payload).summary, payload.get("summary_index")).add(delta)
        elif kind == "response.reasoning_text.delta":
            self._pieces(self._item(payload).reasoning, payload.get("content_index")).add(delta)
        elif kind in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta"):
            self._item(payload).arguments.add(delta)

    def _pieces(self, slots: dict[int, _Pieces], index: Any) -> _Pieces:
        return self.kept.slot(slots, _index(index) or 0, _Pieces, MAX_CONTENT_BLOCKS) or _Pieces()

    def document(self, doc: dict[str, Any]) -> None:
        self._response(doc)
        output = doc.get("output")
        if isinstance(output, list):
            for index, item in enumerate(output):
                self.answer.messages.append(item_message(item, f"output[{index}]"))
        elif output is not None:
            self.answer.messages.append(Message("?", [other("output", output)], "output"))

    def finish(self) -> Answer:
        if self._final is not None:
            for index, item in enumerate(self._final):
                self.answer.messages.append(item_message(item, f"output[{index}]"))
        else:
            for index in sorted(self._items):
                self.answer.messages.append(self._items[index].message(f"output[{index}]"))
        note = self.kept.note()
        if note is not None:
            self.answer.messages.append(Message("?", [note], "output"))
        self._items.clear()
        self._final = None
        return self.answer


TRANSCRIBER = ResponsesTranscriber()
