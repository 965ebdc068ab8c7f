"""Anthropic Messages (`/v1/messages`, Claude on Vertex AI's rawPredict and on Bedrock's InvokeModel): content
blocks, thinking blocks with their signatures, redacted thinking, tool use and results, streamed block by block.

A streamed answer's blocks are assembled by `stream.py`, as the capture's are, with their text kept; this module
reads the message's own events (model, usage, stop reason, errors) and shows the blocks as parts.
"""

from __future__ import annotations

from typing import Any

from ...dialects.bedrock import INVOKE_STREAM, bedrock_route
from ...shared import jsoncodec
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
from ..blocks import Block
from ..conversation import Answer, Conversation, Message, Part, Usage
from .format import AnthropicMessages
from .stream import DELTA, START, STOP, MessagesStream

WIRE_FORMAT = "anthropic_messages"
_FORMAT = AnthropicMessages()
MEDIA_TYPES = ("image", "document")


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
    # The events that say the answer's model, id, usage and why it stopped (message_start, message_delta): an answer
    # read for its summary alone reads no other (ReadingAndAssembling).
    summary_markers = (b'"message_start"', b'"message_delta"')
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
    # Its input_tokens leaves out what was read from or written to the cache.
    found = usage_from(
        usage,
        input="input_tokens",
        output="output_tokens",
        cache_read="cache_read_input_tokens",
        cache_write="cache_creation_input_tokens",
    )
    found.cache_in_input = False
    return found


def whole_block(block: Block) -> dict[str, Any]:
    """A streamed block as a non-streamed answer would hold it."""
    whole = dict(block.start)
    for name, held in block.pieces.items():
        if name == "partial_json":
            streamed = jsoncodec.join_text(held.pieces)
            try:
                whole["input"] = jsoncodec.loads(streamed) if streamed else whole.get("input", {})
            except ValueError:  # cut short: what arrived, as it arrived
                whole["input"] = streamed
        else:
            whole[name] = block.joined(name, whole.get(name))
    if block.citations:
        whole["citations"] = [*(whole.get("citations") or []), *block.citations]
    return whole


def streamed_parts(block: Block, where: str) -> list[Part]:
    return block_parts(whole_block(block), where)


class AnthropicAssembler(AnswerAssembler):
    def __init__(self) -> None:
        super().__init__()
        self._stream = MessagesStream(keep_text=True, kept=self.kept)
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
        elif kind in (START, DELTA, STOP):
            self._stream.event(kind, payload)

    def _message(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if isinstance(message.get("model"), str):
            self.answer.model = message["model"]
        if isinstance(message.get("id"), str):
            self.answer.id = message["id"]
        if isinstance(message.get("role"), str):
            self._role = message["role"]
        if isinstance(message.get("usage"), dict):
            self.answer.usage = merge_usage(self.answer.usage, anthropic_usage(message["usage"]))
        if isinstance(message.get("stop_reason"), str):
            self.answer.finish = message["stop_reason"]

    def document(self, doc: dict[str, Any]) -> None:
        answer = self.answer
        if doc.get("type") == "error" or (isinstance(doc.get("error"), dict) and "content" not in doc):
            answer.problem = _problem(doc.get("error"))
            return
        self._message(doc)
        content = doc.get("content")
        answer.messages.append(Message(self._role, content_parts(content, "content"), "content"))

    def finish(self) -> Answer:
        if self._stream.blocks or self._started:
            self.answer.messages.append(self._stream.message(self._role, "content", "content", streamed_parts))
        self._stream.blocks.clear()
        return self.answer


def _problem(error: Any) -> str:
    if isinstance(error, dict):
        message, kind = as_str(error.get("message")), as_str(error.get("type"))
        if message:
            return f"{kind}: {message}" if kind else message
    return text_of(error) or "error"


TRANSCRIBER = AnthropicTranscriber()
