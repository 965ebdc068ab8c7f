"""Anthropic Messages (`/v1/messages`, Claude on Vertex AI's rawPredict and on Bedrock's InvokeModel): content
blocks, thinking blocks with their signatures, redacted thinking, tool use and results, streamed block by block.

A stream is `message_start` (model, usage so far), then per block `content_block_start` (its type and first
fields), `content_block_delta`s (`text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`,
`citations_delta`) and `content_block_stop`, then `message_delta` (stop reason, final usage) and `message_stop`;
an `error` event can end it early. Bedrock's InvokeModelWithResponseStream carries the same events inside its
`chunk` frames.
"""

from __future__ import annotations

from typing import Any

from ...dialects.bedrock import INVOKE_STREAM, bedrock_route
from ...shared import jsoncodec
from ...shared.limits import MAX_CONTENT_BLOCKS
from ..assembly import (
    AnswerAssembler,
    ListTranscriber,
    as_str,
    block_list_message,
    block_list_parts,
    block_list_system,
    merge_usage,
    other,
    text_of,
    usage_from,
)
from ..conversation import Answer, Conversation, Message, Part, Usage
from .format import AnthropicMessages

WIRE_FORMAT = "anthropic_messages"
_FORMAT = AnthropicMessages()
MEDIA_TYPES = ("image", "document")
MAX_CITATIONS = 256  # citations kept per block; past it they are counted


def tool_result_text(content: Any) -> str:
    """A tool result's content as text: a string as it is, text blocks joined, anything else as JSON."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return text_of(content)
    texts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, dict) and block.get("type") in MEDIA_TYPES:
            texts.append(f"[{block['type']}: {media_label(block)}]")
        else:
            texts.append(text_of(block))
    return "\n".join(texts)


def media_label(block: dict[str, Any]) -> str:
    """What an image or document block holds, without its data: its media type and size, or where it is."""
    source = block.get("source")
    if not isinstance(source, dict):
        return text_of(source)
    kind = as_str(source.get("type")) or "?"
    media = as_str(source.get("media_type"))
    if isinstance(source.get("url"), str):
        return f"{kind} {source['url']}"
    if isinstance(source.get("file_id"), str):
        return f"{kind} {source['file_id']}"
    data = source.get("data")
    size = f"{len(data):,} characters" if isinstance(data, str) else type(data).__name__
    return ", ".join(piece for piece in (media, kind, size) if piece)


def block_parts(block: Any, where: str) -> list[Part]:
    """The parts of one content block (a request's or an answer's)."""
    if not isinstance(block, dict):
        return [other(where, block)]
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        parts = [Part("text", text=block["text"])]
        if block.get("citations"):
            parts.append(other(f"{where}.citations", block["citations"]))
        return parts
    if kind == "thinking":
        parts = [Part("reasoning", text=text_of(block.get("thinking")), field="thinking")]
        signature = block.get("signature")
        if signature not in (None, ""):
            parts.append(Part.opaque("signature", signature))
        return parts
    if kind == "redacted_thinking":
        data = block.get("data")
        return [Part.opaque("redacted_thinking", data if isinstance(data, str) else text_of(data))]
    if kind == "tool_use":
        call_id, name = as_str(block.get("id")), as_str(block.get("name"))
        return [Part("tool_call", text=text_of(block.get("input")), call_id=call_id, name=name)]
    if kind == "tool_result":
        text = tool_result_text(block.get("content"))
        if block.get("is_error") is True:
            text = f"[error] {text}"
        return [Part("tool_result", text=text, call_id=as_str(block.get("tool_use_id")))]
    if kind in MEDIA_TYPES:
        return [Part("media", name=kind, text=media_label(block))]
    return [other(where, block)]


def content_parts(content: Any, where: str) -> list[Part]:
    return block_list_parts(content, where, block_parts)


def message_of(message: Any, where: str) -> Message:
    return block_list_message(message, where, block_parts)


def _tool_names(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return []
    return [tool["name"] for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)]


def _settings(doc: dict[str, Any]) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if "thinking" in doc:
        settings["thinking"] = doc["thinking"]
    output = doc.get("output_config")
    if isinstance(output, dict) and "effort" in output:
        settings["output_config.effort"] = output["effort"]
    if "effort" in doc:
        settings["effort"] = doc["effort"]
    return settings


def _streamed_route(path: str) -> bool:
    """Whether the path asks for a stream whatever the body says: Vertex AI's streamRawPredict, Bedrock's
    InvokeModelWithResponseStream."""
    route = bedrock_route(path)
    return path.split("?", 1)[0].endswith(":streamRawPredict") or (route is not None and route.action == INVOKE_STREAM)


class AnthropicTranscriber(ListTranscriber):
    wire_format = WIRE_FORMAT
    items_key = "messages"

    def preamble(self, doc: dict[str, Any], path: str) -> Conversation:
        conversation = Conversation(WIRE_FORMAT)
        # Claude on Vertex AI and on Bedrock's InvokeModel names the model in the path only.
        conversation.model = _FORMAT.request_model(path, b"", doc)
        conversation.stream = doc.get("stream") is True or _streamed_route(path)
        conversation.messages += block_list_system(doc, block_parts)
        conversation.tools = _tool_names(doc.get("tools"))
        conversation.settings = _settings(doc)
        return conversation

    def message(self, item: Any, where: str) -> Message:
        return message_of(item, where)

    def assembler(self) -> AnthropicAssembler:
        return AnthropicAssembler()


def anthropic_usage(usage: Any) -> Usage:
    return usage_from(
        usage,
        input="input_tokens",
        output="output_tokens",
        cache_read="cache_read_input_tokens",
        cache_write="cache_creation_input_tokens",
    )


# A delta's type -> the field of the block it adds to, and the block type it implies when no start came.
_DELTAS = {
    "text_delta": ("text", "text"),
    "thinking_delta": ("thinking", "thinking"),
    "signature_delta": ("signature", "thinking"),
    "input_json_delta": ("partial_json", "tool_use"),
}


class _Block:
    __slots__ = ("start", "pieces", "citations", "stopped")

    def __init__(self, start: dict[str, Any]) -> None:
        self.start = start
        self.pieces: dict[str, list[str]] = {}
        self.citations: list[Any] = []
        self.stopped = False

    def whole(self) -> dict[str, Any]:
        """The block as a non-streamed answer would hold it."""
        block = dict(self.start)
        for name, pieces in self.pieces.items():
            if name == "partial_json":
                streamed = jsoncodec.join_text(pieces)
                try:
                    block["input"] = jsoncodec.loads(streamed) if streamed else block.get("input", {})
                except ValueError:  # cut short: what arrived, as it arrived
                    block["input"] = streamed
            else:
                block[name] = jsoncodec.join_text([as_str(block.get(name)) or "", *pieces])
        if self.citations:
            block["citations"] = [*(block.get("citations") or []), *self.citations]
        return block


class AnthropicAssembler(AnswerAssembler):
    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _Block] = {}
        self._role = "assistant"
        self._started = False  # a stream's message_start seen

    def event(self, payload: dict[str, Any], name: str | None) -> None:
        kind = payload.get("type")
        if kind == "message_start":
            self._started = True
            self._message(payload.get("message"))
        elif kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self.answer.finish = delta["stop_reason"]
            if isinstance(payload.get("usage"), dict):
                self.answer.usage = merge_usage(self.answer.usage, anthropic_usage(payload["usage"]))
        elif kind == "error" or (kind is None and isinstance(payload.get("error"), dict)):
            self.answer.problem = _problem(payload.get("error"))
        elif kind in ("content_block_start", "content_block_delta", "content_block_stop"):
            self._block_event(kind, payload)

    def _message(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if isinstance(message.get("model"), str):
            self.answer.model = message["model"]
        if isinstance(message.get("role"), str):
            self._role = message["role"]
        if isinstance(message.get("usage"), dict):
            self.answer.usage = merge_usage(self.answer.usage, anthropic_usage(message["usage"]))
        if isinstance(message.get("stop_reason"), str):
            self.answer.finish = message["stop_reason"]

    def _block_event(self, kind: str, payload: dict[str, Any]) -> None:
        index = payload.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < MAX_CONTENT_BLOCKS:
            return
        if kind == "content_block_start":
            start = payload.get("content_block")
            self._blocks[index] = _Block(dict(start) if isinstance(start, dict) else {"type": None, "value": start})
            return
        block = self._blocks.get(index)
        if kind == "content_block_stop":
            if block is not None:
                block.stopped = True
            return
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            return
        delta_type = delta.get("type")
        if delta_type == "citations_delta":
            if block is None:
                block = self._blocks[index] = _Block({"type": "text", "text": ""})
            if len(block.citations) < MAX_CITATIONS:
                block.citations.append(delta.get("citation"))
            return
        if delta_type not in _DELTAS:
            return
        name, implied = _DELTAS[delta_type]
        piece = delta.get(name)
        if not isinstance(piece, str):
            return
        if block is None:  # a delta whose start never came (or was cut): keep what arrived
            block = self._blocks[index] = _Block({"type": implied})
        self.kept.add(block.pieces.setdefault(name, []), piece)

    def document(self, doc: dict[str, Any]) -> None:
        answer = self.answer
        if doc.get("type") == "error" or (isinstance(doc.get("error"), dict) and "content" not in doc):
            answer.problem = _problem(doc.get("error"))
            return
        self._message(doc)
        content = doc.get("content")
        answer.messages.append(Message(self._role, content_parts(content, "content"), "content"))

    def finish(self) -> Answer:
        if self._blocks or self._started:
            parts = [
                part
                for index in sorted(self._blocks)
                for part in block_parts(self._blocks[index].whole(), f"content[{index}]")
            ]
            note = self.kept.note()
            if note is not None:
                parts.append(note)
            self.answer.messages.append(Message(self._role, parts, "content"))
        self._blocks.clear()
        return self.answer


def _problem(error: Any) -> str:
    if isinstance(error, dict):
        message, kind = as_str(error.get("message")), as_str(error.get("type"))
        if message:
            return f"{kind}: {message}" if kind else message
    return text_of(error) or "error"


TRANSCRIBER = AnthropicTranscriber()
