"""Amazon Bedrock's Converse API (`/model/{modelId}/converse`, `/converse-stream`): content blocks tagged by their
one key (`text`, `reasoningContent`, `toolUse`, `toolResult`, `image`, `document`, ...), the model named in the
path.

A streamed answer's blocks are assembled by `stream.py`, as the capture's are, with their text kept; this module
reads the message's own events (role, stop reason, usage, exceptions) and shows the blocks as parts. The AWS SDKs
hand the events to their callers wrapped in their name (`{"contentBlockDelta": {...}}`); an event in that shape is
read too.
"""

from __future__ import annotations

from typing import Any

from ...dialects.bedrock import CONVERSE_STREAM, bedrock_route
from ...shared import jsoncodec
from ..assembly import (
    AnswerAssembler,
    ListTranscriber,
    as_str,
    block_list_message,
    block_list_parts,
    block_list_system,
    other,
    text_of,
    usage_from,
)
from ..blocks import Block
from ..conversation import Answer, Conversation, Message, Part, Usage
from .format import BedrockConverse
from .stream import BLOCK_EVENTS, REASONING, TOOL_USE, ConverseStream, block_kind

WIRE_FORMAT = "bedrock_converse"
_FORMAT = BedrockConverse()
MEDIA_KINDS = ("image", "document", "video", "audio")
_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
)
# additionalModelRequestFields that set a model's reasoning (Claude's `thinking`, Bedrock's first spelling of it,
# Nova's `reasoningConfig`, OpenAI-style `reasoning_effort`).
_SETTINGS = ("thinking", "reasoning_config", "reasoningConfig", "reasoning_effort")


def media_label(kind: str, value: Any) -> str:
    """What an image, document or video block holds, without its bytes: its format and size, or where it is."""
    if not isinstance(value, dict):
        return text_of(value)
    source = value.get("source")
    where = ""
    if isinstance(source, dict):
        data = source.get("bytes")
        location = source.get("s3Location")
        if isinstance(data, str):
            where = f"{len(data):,} characters of base64"
        elif isinstance(location, dict) and isinstance(location.get("uri"), str):
            where = location["uri"]
        elif isinstance(source.get("text"), str):
            where = f"{len(source['text']):,} characters of text"
        elif source:
            where = block_kind(source) or ""
    return ", ".join(p for p in (as_str(value.get("name")), as_str(value.get("format")), where) if p)


def tool_result_text(content: Any) -> str:
    """A toolResult's content as text: text members joined, json members as JSON text, anything else as JSON."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return text_of(content)
    texts = []
    for block in content:
        kind = block_kind(block)
        if kind == "text" and isinstance(block["text"], str):
            texts.append(block["text"])
        elif kind == "json":
            texts.append(text_of(block["json"]))
        elif kind in MEDIA_KINDS:
            texts.append(f"[{kind}: {media_label(kind, block[kind])}]")
        else:
            texts.append(text_of(block))
    return "\n".join(texts)


def reasoning_parts(reasoning: Any, where: str) -> list[Part]:
    if not isinstance(reasoning, dict):
        return [other(where, {REASONING: reasoning})]
    parts: list[Part] = []
    text = reasoning.get("reasoningText")
    if isinstance(text, dict):
        parts.append(Part("reasoning", text=text_of(text.get("text")), field=REASONING))
        if text.get("signature") not in (None, ""):
            parts.append(Part.opaque("signature", text["signature"]))
    if "redactedContent" in reasoning:
        value = reasoning["redactedContent"]
        parts.append(Part.opaque("redactedContent", value if isinstance(value, str) else text_of(value)))
    return parts or [other(where, {REASONING: reasoning})]


def block_parts(block: Any, where: str) -> list[Part]:
    """The parts of one content block (a request's or an answer's)."""
    kind = block_kind(block)
    if kind is None:
        return [other(where, block)]
    value = block[kind]
    if kind == "text" and isinstance(value, str):
        return [Part("text", text=value)]
    if kind == REASONING:
        return reasoning_parts(value, where)
    if kind == TOOL_USE and isinstance(value, dict):
        call_id, name = as_str(value.get("toolUseId")), as_str(value.get("name"))
        return [Part("tool_call", text=text_of(value.get("input")), call_id=call_id, name=name)]
    if kind == "toolResult" and isinstance(value, dict):
        text = tool_result_text(value.get("content"))
        if value.get("status") == "error":
            text = f"[error] {text}"
        return [Part("tool_result", text=text, call_id=as_str(value.get("toolUseId")))]
    if kind in MEDIA_KINDS:
        return [Part("media", name=kind, text=media_label(kind, value))]
    return [other(where, block)]


def content_parts(content: Any, where: str) -> list[Part]:
    return block_list_parts(content, where, block_parts)


def message_of(message: Any, where: str) -> Message:
    return block_list_message(message, where, block_parts)


def _tool_names(config: Any) -> list[str]:
    tools = config.get("tools") if isinstance(config, dict) else None
    names = []
    for tool in tools if isinstance(tools, list) else []:
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            names.append(spec["name"])
    return names


class ConverseTranscriber(ListTranscriber):
    wire_format = WIRE_FORMAT
    # The events that say the answer's usage and why it stopped (messageStop, metadata): an answer read for its
    # summary alone reads no other (ReadingAndAssembling).
    summary_markers = (b'"stopReason"', b'"usage"')
    items_key = "messages"

    def preamble(self, doc: dict[str, Any], path: str) -> Conversation:
        route = bedrock_route(path)
        conversation = Conversation(WIRE_FORMAT, model=_FORMAT.request_model(path, b"", doc))
        conversation.stream = route is not None and route.action == CONVERSE_STREAM
        conversation.messages += block_list_system(doc, block_parts)
        conversation.tools = _tool_names(doc.get("toolConfig"))
        extra = doc.get("additionalModelRequestFields")
        if isinstance(extra, dict):
            conversation.settings = {key: extra[key] for key in _SETTINGS if key in extra}
        return conversation

    def message(self, item: Any, where: str) -> Message:
        return message_of(item, where)

    def assembler(self) -> ConverseAssembler:
        return ConverseAssembler()


def converse_usage(usage: Any) -> Usage:
    # Its input_tokens leaves out what was read from or written to the cache.
    found = usage_from(
        usage,
        input="inputTokens",
        output="outputTokens",
        total="totalTokens",
        cache_read="cacheReadInputTokens",
        cache_write="cacheWriteInputTokens",
    )
    found.cache_in_input = False
    return found


def streamed_parts(block: Block, where: str) -> list[Part]:
    """A streamed block's parts: its reasoning, its text and its tool call, whichever of them came at its index."""
    joined = {name: jsoncodec.join_text(held.pieces) for name, held in block.pieces.items()}
    parts: list[Part] = []
    if "reasoning" in joined or "signature" in joined or "redactedContent" in joined:
        reasoning: dict[str, Any] = {}
        if "reasoning" in joined or "signature" in joined:
            reasoning["reasoningText"] = {"text": joined.get("reasoning", "")}
            if "signature" in joined:
                reasoning["reasoningText"]["signature"] = joined["signature"]
        if "redactedContent" in joined:
            reasoning["redactedContent"] = joined["redactedContent"]
        parts += reasoning_parts(reasoning, where)
    if "text" in joined:
        parts.append(Part("text", text=joined["text"]))
    if block.start is not None or "input" in joined:
        use = block.start or {}
        streamed = joined.get("input", "")
        try:
            arguments = text_of(jsoncodec.loads(streamed)) if streamed else text_of(use.get("input", {}))
        except ValueError:  # cut short: what arrived, as it arrived
            arguments = streamed
        call_id, name = as_str(use.get("toolUseId")), as_str(use.get("name"))
        parts.append(Part("tool_call", text=arguments, call_id=call_id, name=name))
    return parts


class ConverseAssembler(AnswerAssembler):
    def __init__(self) -> None:
        super().__init__()
        self._stream = ConverseStream(keep_text=True, kept=self.kept)
        self._role = "assistant"
        self._started = False  # a stream's messageStart seen

    def event(self, payload: dict[str, Any], name: str | None) -> None:
        if len(payload) == 1:  # an event wrapped in its name, as the AWS SDKs hand them over
            ((key, value),) = payload.items()
            if isinstance(value, dict) and (key in _EVENTS or key.endswith("Exception")):
                name, payload = key, value
        if name == "messageStart":
            self._started = True
            if isinstance(payload.get("role"), str):
                self._role = payload["role"]
        elif name in BLOCK_EVENTS:
            self._stream.event(name, payload)
        elif name == "messageStop":
            if isinstance(payload.get("stopReason"), str):
                self.answer.finish = payload["stopReason"]
        elif name == "metadata":
            if isinstance(payload.get("usage"), dict):
                self.answer.usage = converse_usage(payload["usage"])
        elif name is not None and name.endswith("Exception"):
            message = as_str(payload.get("message"))
            self.answer.problem = f"{name}: {message}" if message else name

    def document(self, doc: dict[str, Any]) -> None:
        answer = self.answer
        output = doc.get("output")
        if output is None and isinstance(doc.get("message"), str):  # Bedrock's error body: {"message": "..."}
            answer.problem = doc["message"]
            return
        message = output.get("message") if isinstance(output, dict) else None
        if isinstance(doc.get("stopReason"), str):
            answer.finish = doc["stopReason"]
        answer.usage = converse_usage(doc.get("usage"))
        if isinstance(message, dict):
            answer.messages.append(message_of(message, "output.message"))
        elif output is not None:
            answer.messages.append(Message("?", [other("output", output)], "output"))

    def finish(self) -> Answer:
        if self._stream.blocks or self._started:
            message = self._stream.message(self._role, "output.message", "output.message.content", streamed_parts)
            self.answer.messages.append(message)
        self._stream.blocks.clear()
        return self.answer


TRANSCRIBER = ConverseTranscriber()
