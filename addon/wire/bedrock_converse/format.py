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
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ...dialects.anthropic import ANTHROPIC_SIGNATURE_MISSING, ANTHROPIC_THINKING_EXPECTED
from ...dialects.bedrock import CONVERSE, CONVERSE_STREAM, bedrock_route
from ...shared import jsoncodec
from ...shared.limits import MAX_CONTENT_BLOCKS, Budget, Parts
from ...shared.records import ReasoningRecord, RepairAction, ToolCallRef, Violation, canonical_arguments
from ..base import (
    CacheView,
    CallHit,
    ForeignLookup,
    RepairContext,
    Routed,
    SignedBlocks,
    assistant_blocks,
    call_lookup_keys,
    event_documents,
    item_at,
    remove_foreign_blocks,
    user_turn_start,
)
from ..sse import SSEEvent

NAME = "bedrock_converse"
REASONING = "reasoningContent"
TOOL_USE = "toolUse"
BLOCKS_FIELD = "reasoning_blocks"  # the reasoningContent blocks of a turn, in order, as the provider sent them
TEXT_FIELD = "reasoning_text"  # their readable text, for the log only
# The kinds of the answer's blocks, only kept when a reasoning block follows another kind of block (interleaved
# thinking), so that the blocks can be put back where they were.
LAYOUT_FIELD = "reasoning_layout"
_BLOCK_COST = 1024  # what an open block costs the answer's budget whatever it holds


def block_kind(block: Any) -> str | None:
    """A content block's tag: its one key (a Converse block is a union of members, exactly one of them set)."""
    if not isinstance(block, dict) or not block:
        return None
    return next(iter(block))


def is_reasoning_block(block: Any) -> bool:
    return isinstance(block, dict) and isinstance(block.get(REASONING), dict)


def thinking_enabled(doc: Any) -> bool:
    """Whether a request turns Claude's extended thinking on: `additionalModelRequestFields.thinking` (or, as Bedrock's
    first Claude 3.7 documentation spelled it, `reasoning_config`) of any type but "disabled"."""
    extra = doc.get("additionalModelRequestFields") if isinstance(doc, dict) else None
    if not isinstance(extra, dict):
        return False
    for key in ("thinking", "reasoning_config"):
        setting = extra.get(key)
        if isinstance(setting, dict) and isinstance(setting.get("type"), str) and setting["type"] != "disabled":
            return True
    return False


@dataclass(slots=True)
class _Block:
    """One content block of an answer as it is assembled from stream events."""

    kind: str  # REASONING, TOOL_USE, or another member's name
    whole: dict[str, Any] | None  # the block as a whole document gave it
    text: Parts
    signature: Parts
    redacted: Parts
    tool_input: Parts
    tool_use: dict[str, Any] | None = None  # contentBlockStart's toolUse: its id and name
    stopped: bool = False

    @classmethod
    def opened(cls, kind: str, budget: Budget, whole: dict[str, Any] | None = None) -> _Block:
        parts = [Parts(what, budget) for what in ("reasoning text", "signature", "redactedContent", "tool input")]
        return cls(kind, whole, *parts, stopped=whole is not None)

    def reasoning_block(self) -> dict[str, Any]:
        """The block as the non-streamed answer would hold it."""
        if self.whole is not None:
            return self.whole
        if self.redacted.pieces:
            return {REASONING: {"redactedContent": jsoncodec.join_text(self.redacted.pieces)}}
        text: dict[str, Any] = {"text": jsoncodec.join_text(self.text.pieces)}
        if self.signature.pieces:
            text["signature"] = jsoncodec.join_text(self.signature.pieces)
        return {REASONING: {"reasoningText": text}}

    def tool_call(self, *, whole: bool) -> ToolCallRef | None:
        use = self.whole.get(TOOL_USE) if self.whole is not None else self.tool_use
        call_id = use.get("toolUseId") if isinstance(use, dict) else None
        if not isinstance(call_id, str) or not call_id:
            return None
        name = use.get("name")
        if not isinstance(name, str) or not whole:
            return ToolCallRef(id=call_id)  # input cut short: the id still links the call
        streamed = jsoncodec.join_text(self.tool_input.pieces)
        return ToolCallRef(id=call_id, name=name, arguments=canonical_arguments(streamed or use.get("input", {})))


def reasoning_text(block: dict[str, Any]) -> str:
    reasoning = block.get(REASONING)
    text = reasoning.get("reasoningText") if isinstance(reasoning, dict) else None
    value = text.get("text") if isinstance(text, dict) else None
    return value if isinstance(value, str) else ""


class ConverseReader:
    markers: tuple[bytes, ...] | None = None  # the event type, which stops carry alone, is not in the data

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._ended = False  # messageStop seen, or a whole document read
        self.unreadable = 0
        self.budget = Budget()

    def skippable(self, data: bytes) -> bool:
        # An event can matter only if it is not a delta (starts, stops, the message's stop) or a delta of reasoning or
        # of a tool use: the text deltas, most of a stream, are neither unless their text says so (then they are read
        # and ignored).
        return b'"delta"' in data and b'"reasoningContent"' not in data and b'"toolUse"' not in data

    def feed_event(self, event: SSEEvent) -> None:
        if self.budget.over is not None:
            return
        docs = list(event_documents(event.data))
        self.unreadable += not docs
        for doc in docs:
            if isinstance(doc, dict):
                self._event(event.event, doc)

    def _event(self, kind: str | None, doc: dict[str, Any]) -> None:
        if kind == "messageStop":
            self._ended = True
            return
        index = doc.get("contentBlockIndex")
        if not isinstance(index, int) or kind not in ("contentBlockStart", "contentBlockDelta", "contentBlockStop"):
            return
        if not self._takes(index):
            return
        if kind == "contentBlockStop":
            if index in self._blocks:
                self._blocks[index].stopped = True
            return
        member = doc.get("start" if kind == "contentBlockStart" else "delta")
        if not isinstance(member, dict):
            return
        if isinstance(member.get(TOOL_USE), dict):
            block = self._open(index, TOOL_USE)
            if block is not None and kind == "contentBlockStart":
                block.tool_use = member[TOOL_USE]
            elif block is not None and isinstance(member[TOOL_USE].get("input"), str):
                block.tool_input.append(member[TOOL_USE]["input"])
        elif isinstance(member.get(REASONING), dict):
            block = self._open(index, REASONING)
            piece = member[REASONING]
            if block is None:
                return
            for key, parts in (
                ("text", block.text),
                ("signature", block.signature),
                ("redactedContent", block.redacted),
            ):
                if isinstance(piece.get(key), str):
                    parts.append(piece[key])

    def _takes(self, index: int) -> bool:
        """Whether a content block index is within the bound; past it the answer is read on but not cached."""
        if 0 <= index < MAX_CONTENT_BLOCKS:
            return True
        self.budget.refuse(f"it has a content block index outside 0 to {MAX_CONTENT_BLOCKS - 1}")
        return False

    def _open(self, index: int, kind: str) -> _Block | None:
        block = self._blocks.get(index)
        if block is not None:
            return block if block.kind == kind else None
        if not (self.budget.take_call() if kind == TOOL_USE else self.budget.take("content block", _BLOCK_COST)):
            return None
        block = self._blocks[index] = _Block.opened(kind, self.budget)
        return block

    def feed_document(self, doc: Any) -> None:
        output = doc.get("output") if isinstance(doc, dict) else None
        message = output.get("message") if isinstance(output, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        self._ended = True
        if not isinstance(content, list):
            return
        for index, block in enumerate(content):
            kind = block_kind(block)
            if kind not in (REASONING, TOOL_USE) or not isinstance(block[kind], dict):
                continue
            if not self._takes(index):
                return
            cost = len(jsoncodec.dumps(block)) if kind == REASONING else 0
            if self.budget.take_call() if kind == TOOL_USE else self.budget.take(REASONING, cost):
                self._blocks[index] = _Block.opened(kind, self.budget, whole=block)

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        # Unless the message ended, only blocks that ended are whole: a reasoning block cut before its stop may lack
        # its signature.
        ended = complete and self._ended
        indexes = sorted(self._blocks)
        kept = [i for i in indexes if ended or self._blocks[i].stopped or self._blocks[i].kind != REASONING]
        reasoning = [self._blocks[i].reasoning_block() for i in kept if self._blocks[i].kind == REASONING]
        if not reasoning:
            return []
        calls = [
            call
            for i in kept
            if self._blocks[i].kind == TOOL_USE
            for call in [self._blocks[i].tool_call(whole=ended or self._blocks[i].stopped)]
            if call is not None
        ]
        fields: dict[str, Any] = {BLOCKS_FIELD: reasoning}
        text = "\n\n".join(t for block in reasoning if (t := reasoning_text(block)))
        if text:
            fields[TEXT_FIELD] = text
        # Blocks the reader did not keep (answer text) sit at the indexes between the ones it did (all below
        # MAX_CONTENT_BLOCKS).
        layout: list[str] = []
        for i in indexes:
            layout += ["text"] * (i - len(layout))
            layout.append(self._blocks[i].kind)
        if layout[: len(reasoning)] != [REASONING] * len(reasoning):
            fields[LAYOUT_FIELD] = layout
        return [ReasoningRecord(wire_format=NAME, fields=fields, tool_calls=calls, complete=complete)]


def _tool_uses(content: list[Any]) -> list[dict[str, Any]]:
    return [block[TOOL_USE] for block in content if isinstance(block, dict) and isinstance(block.get(TOOL_USE), dict)]


def _use_parts(use: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A request toolUse's id, name and input."""
    call_id = use.get("toolUseId") if isinstance(use.get("toolUseId"), str) else None
    name = use.get("name") if isinstance(use.get("name"), str) else None
    return call_id, name, use.get("input", {})


def _has_tool_result(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(block_kind(block) == "toolResult" for block in content)


def current_turn_start(messages: list[Any]) -> int:
    """Where the current tool loop begins (a user turn holding a toolResult continues it)."""
    return user_turn_start(messages, _has_tool_result)


def last_assistant(messages: list[Any]) -> int | None:
    return max((i for i, m in enumerate(messages) if assistant_blocks(m) is not None), default=None)


def repair_targets(messages: list[Any]) -> list[int]:
    """The assistant messages of the current tool loop (and the last one) holding toolUse blocks and no reasoning
    block: a reasoning block the client sent is never touched, and finished turns may omit theirs."""
    last = last_assistant(messages)
    candidates = set(range(current_turn_start(messages), len(messages)))
    if last is not None:
        candidates.add(last)
    return [
        index
        for index in sorted(candidates)
        if (content := assistant_blocks(messages[index]))
        and _tool_uses(content)
        and not any(is_reasoning_block(block) for block in content)
    ]


def _find(content: list[Any], cache: CacheView) -> CallHit | None:
    for use in _tool_uses(content):
        hit = cache.call(*_use_parts(use))
        if hit is not None:
            return hit
    return None


def _cached_blocks(record: ReasoningRecord) -> list[dict[str, Any]]:
    blocks = record.fields.get(BLOCKS_FIELD)
    if not isinstance(blocks, list) or not blocks or not all(is_reasoning_block(b) for b in blocks):
        return []
    return copy.deepcopy(blocks)


def restore_blocks(content: list[Any], blocks: list[dict[str, Any]], layout: Any) -> int:
    """Puts cached reasoning blocks back into `content`; returns where the client's first block now is. Interleaved
    blocks go back to their captured places when the client kept every other block of the answer in order."""
    if isinstance(layout, list) and len(layout) == len(content) + len(blocks):
        if [kind for kind in layout if kind != REASONING] == [block_kind(block) for block in content]:
            kept, cached = iter(content), iter(blocks)
            content[:] = [next(cached) if kind == REASONING else next(kept) for kind in layout]
            return next(i for i, kind in enumerate(layout) if kind != REASONING)
    content[0:0] = blocks
    return len(blocks)


def _members(blocks: list[dict[str, Any]]) -> list[str]:
    """What a repair inserted, for people: `reasoningContent.reasoningText` or `…redactedContent` per block."""
    return [f"{REASONING}.{block_kind(block[REASONING]) or '?'}" for block in blocks]


def _signed_value(block: Any) -> str | None:
    """The value Claude verifies in a reasoning block: its signature, or the redacted blob."""
    reasoning = block.get(REASONING) if isinstance(block, dict) else None
    if not isinstance(reasoning, dict):
        return None
    text = reasoning.get("reasoningText")
    value = text.get("signature") if isinstance(text, dict) else reasoning.get("redactedContent")
    return value if isinstance(value, str) and value else None


def required_reasoning_at(doc: Any, messages: list[Any]) -> int | None:
    """The assistant message whose reasoning cannot go: with thinking on, the last assistant message when it holds
    toolUse blocks of the current tool loop."""
    if not thinking_enabled(doc):
        return None
    last = last_assistant(messages)
    if last is None or last < current_turn_start(messages) or not _tool_uses(assistant_blocks(messages[last]) or []):
        return None
    return last


_REASONING_BLOCKS = SignedBlocks(
    content=assistant_blocks,
    signed_value=_signed_value,
    label=lambda block: "reasoningContent",
    fields=lambda block: _members([block]),
    first_call_id=lambda content: _use_parts(uses[0])[0] if (uses := _tool_uses(content)) else None,
)
_LOOP_END_KEEPS = (
    "the current tool loop's last assistant message must start with its reasoning (finish the loop on that model)"
)


def remove_foreign_reasoning(doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
    """Drops the reasoning blocks another model, host or account signed; as for Anthropic, the last assistant
    message of the current tool loop keeps its own, and a block that is all its message holds stays."""
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list):
        return [], []

    def required() -> dict[int, str]:
        index = required_reasoning_at(doc, messages)
        return {} if index is None else {index: _LOOP_END_KEEPS}

    return remove_foreign_blocks(messages, foreign, _REASONING_BLOCKS, required)


class BedrockConverse(Routed):
    body_marker = b'"messages"'
    name = NAME
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
        return [
            key
            for index in repair_targets(messages)
            for use in _tool_uses(messages[index]["content"])
            for key in call_lookup_keys(model, *_use_parts(use))
        ]

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not thinking_enabled(doc) or not isinstance(messages, list):
            return []
        actions = []
        for index in repair_targets(messages):
            content = messages[index]["content"]
            hit = _find(content, cache)
            blocks = _cached_blocks(hit.record) if hit is not None else []
            if hit is None or not blocks:
                continue
            first = restore_blocks(content, blocks, hit.record.fields.get(LAYOUT_FIELD))
            actions.append(
                RepairAction(
                    kind="inserted",
                    location=f"messages[{index}].content[{first}]",
                    index=index,
                    fields=_members(blocks),
                    tool_call_id=hit.call.id,
                    response_id=hit.record.response_id,
                    via=hit.via,
                )
            )
        return actions

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list) or not thinking_enabled(doc):
            return []
        found = []
        for index, message in enumerate(messages):
            for position, block in enumerate(assistant_blocks(message) or ()):
                reasoning = block.get(REASONING) if isinstance(block, dict) else None
                text = reasoning.get("reasoningText") if isinstance(reasoning, dict) else None
                if isinstance(text, dict) and not text.get("signature"):
                    found.append(
                        Violation(
                            rule=ANTHROPIC_SIGNATURE_MISSING,
                            location=f"messages[{index}].content[{position}]",
                            message="reasoningText without its signature (Claude takes no unsigned thinking)",
                        )
                    )
        last = last_assistant(messages)
        content = assistant_blocks(messages[last]) if last is not None else None
        if content and _tool_uses(content) and not is_reasoning_block(content[0]):
            kind = block_kind(content[0]) or type(content[0]).__name__
            found.append(
                Violation(
                    rule=ANTHROPIC_THINKING_EXPECTED,
                    location=f"messages[{last}].content[0]",
                    message=f"the final assistant message must start with a reasoningContent block, found `{kind}`",
                    tool_call_id=_use_parts(_tool_uses(content)[0])[0],
                )
            )
        return found

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        content = assistant_blocks(item_at(doc, self.items_key, index))
        return [_use_parts(use) for use in _tool_uses(content)] if content is not None else []

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
