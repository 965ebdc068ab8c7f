"""Amazon Bedrock's Converse API (`POST /model/{modelId}/converse`, `/converse-stream`): reasoning blocks kept in the
assistant's content.

Content blocks are tagged by their one key, not by a `type`: `text`, `toolUse`, `toolResult`, `reasoningContent`
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ContentBlock.html). With Claude's extended
thinking on (`additionalModelRequestFields.thinking`), an answer that calls tools starts with `reasoningContent`
blocks, each either `reasoningText` (the text and its `signature`) or `redactedContent` (an opaque blob, base64 in
JSON) (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ReasoningContentBlock.html). Bedrock
hands the conversation to Claude as Anthropic messages, so Anthropic's rules hold: the final assistant message of a
tool loop must start with its reasoning, unchanged, and its errors are Anthropic's texts in Bedrock's envelope
("The model returned the following errors: messages.1.content.0.type: Expected `thinking` or `redacted_thinking`,
but found `text`…", https://github.com/langchain-ai/langchain-aws/issues/844).

ConverseStream sends AWS event-stream frames (addon/wire/event_stream.py), whose `:event-type` names the event:
`messageStart`, `contentBlockStart` (only for a tool use), `contentBlockDelta` (`text`, `reasoningContent` with
`text`, `signature` or `redactedContent`, `toolUse` with a piece of `input`), `contentBlockStop`, `messageStop`,
`metadata` (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html; the
pydantic-ai cassettes in tests/fixtures/bedrock/ show them).

Capture keeps each reasoning block as the non-streamed answer holds it and links it to the answer's tool use ids.
Repair puts the blocks back, first, into assistant messages of the current tool loop that hold `toolUse` blocks and
no reasoning block, as pydantic-ai's replay (the cassette `test_bedrock_anthropic_tool_with_thinking`) sends them.

The work is split by job: `stream.py` assembles an answer's blocks (for the capture's `reader.py` and for
`transcript.py`), `repair.py` puts a request right, `foreign.py` takes reasoning signed elsewhere out of it, and
`check.py` says which rules it breaks; `messages.py` reads a request's messages for all three. This class ties them
together.
"""

from __future__ import annotations

from typing import Any

from ...dialects.bedrock import CONVERSE, CONVERSE_STREAM, bedrock_route
from ...shared import jsoncodec
from ...shared.records import RepairAction, Violation
from ..base import (
    CacheView,
    ForeignLookup,
    RecordReader,
    RepairContext,
    Routed,
    SentValue,
    assistant_blocks,
    call_lookup_keys,
    item_at,
)
from ..block_repair import mangled_targets
from .check import check_messages
from .foreign import remove_foreign_reasoning
from .messages import thinking_enabled, tool_uses, use_parts
from .reader import NAME, TEXT_FIELD, ConverseReader
from .recover import recover_messages
from .repair import BLOCKS, repair_messages, repair_targets
from .stream import REASONING


class BedrockConverse(Routed):
    body_marker = b'"messages"'
    name = NAME
    operation = "chat"  # its `gen_ai.operation.name` in OpenTelemetry's GenAI conventions
    items_key = "messages"
    text_fields = frozenset({TEXT_FIELD})
    maskable_fields: frozenset[str] = frozenset()
    signed_fields = frozenset({"signature", "redactedContent"})
    signed_markers = (b'"signature"', b'"redactedContent"')
    opaque_keys = frozenset({"signature", "redactedContent"})
    opaque_list_keys: frozenset[str] = frozenset()
    opaque_data_types: frozenset[str] = frozenset()

    def route(self, path: str) -> bool:
        route = bedrock_route(path)
        return route is not None and route.action in (CONVERSE, CONVERSE_STREAM)

    def request_model(self, path: str, body: bytes, doc: Any | None) -> str | None:
        route = bedrock_route(path)
        return route.model if route is not None else None

    def may_need_repair(self, body: bytes) -> bool:
        return b'"toolUse"' in body and (b'"thinking"' in body or b'"reasoning_config"' in body)

    def reader(self) -> ConverseReader:
        return ConverseReader()

    def lookup_keys(self, doc: Any, model: str | None) -> list[str]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not thinking_enabled(doc) or not isinstance(messages, list):
            return []
        # With the messages whose reasoning may be mangled, whatever the request asked: their capture tells.
        targets = repair_targets(messages) + mangled_targets(messages, BLOCKS)
        return [
            key
            for index in targets
            for use in tool_uses(messages[index]["content"])
            for key in call_lookup_keys(model, *use_parts(use))
        ]

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not thinking_enabled(doc) or not isinstance(messages, list):
            return []
        return repair_messages(doc, messages, cache, context)

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list) or not thinking_enabled(doc):
            return []
        return check_messages(messages)

    def recover(self, doc: Any, context: RepairContext, refused: list[int] | None) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list) or not thinking_enabled(doc):
            return []
        return recover_messages(doc, messages, context, refused)

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        content = assistant_blocks(item_at(doc, self.items_key, index))
        return [use_parts(use) for use in tool_uses(content)] if content is not None else []

    def remove_foreign(self, doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
        return remove_foreign_reasoning(doc, foreign)

    def opaque_fragments(self, doc: Any, data_types: frozenset[str]) -> list[tuple[tuple[Any, ...], Any]]:
        """A reasoning block's signature deltas, joined per content block (Bedrock sends it in one; the reader would
        join several)."""
        delta = doc.get("delta") if isinstance(doc, dict) else None
        reasoning = delta.get(REASONING) if isinstance(delta, dict) else None
        if not isinstance(reasoning, dict) or "signature" not in reasoning:
            return []
        return [(("converse", jsoncodec.as_key(doc.get("contentBlockIndex")), "signature"), reasoning["signature"])]

    # The repair sends no placeholder for a signature nothing was cached for.
    signature_placeholder = False

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        return index if index is not None and 0 <= index < len(items) else None

    def sent_values(self, doc: Any, model: str | None, records: RecordReader) -> list[SentValue]:
        return []  # its texts name the block they refuse: not judged


__all__ = ["NAME", "BedrockConverse", "ConverseReader"]
