"""The Anthropic Messages API (`POST /v1/messages`, and Amazon Bedrock's InvokeModel for Claude): thinking blocks
kept in the assistant's content.

With extended thinking on, a response starts with `thinking` blocks (the text
and a `signature`) and, rarely, `redacted_thinking` blocks (opaque `data`),
then `text` and `tool_use` blocks. While a tool loop is in progress the next
request must carry those blocks back, unchanged, at the start of the assistant
message that holds the `tool_use` blocks; otherwise the API answers 400
("a final `assistant` message must start with a thinking block").

Capture keeps every thinking block of a response exactly as the provider built
it (its keys in the provider's order, its text whole) and links them to the
response's `tool_use` ids. Repair puts them back into assistant messages of the
current tool loop that hold `tool_use` blocks and no thinking block at all.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ... import dialects
from ...dialects.anthropic import ANTHROPIC_THINKING_EXPECTED
from ...dialects.base import MessagesThinking
from ...dialects.bedrock import INVOKE, INVOKE_STREAM, bedrock_route
from ...dialects.vertex_anthropic import raw_predict_model
from ...shared import jsoncodec
from ...shared.limits import Budget, Parts
from ...shared.records import ReasoningRecord, RepairAction, ToolCallRef, Violation, canonical_arguments
from ..base import (
    CacheView,
    CallHit,
    ForeignLookup,
    RepairContext,
    ResumeRules,
    Routed,
    SignedBlocks,
    assistant_blocks,
    body_model,
    call_lookup_keys,
    event_documents,
    item_at,
    remove_foreign_blocks,
    user_turn_start,
)
from ..sse import SSEEvent

NAME = "anthropic_messages"
THINKING_TYPES = ("thinking", "redacted_thinking")
BLOCKS_FIELD = "thinking_blocks"  # the thinking blocks of a turn, in order, as the provider sent them
TEXT_FIELD = "thinking"  # their readable text, for the log only
# The block types of the whole response, only kept when a thinking block follows a non-thinking
# block (interleaved thinking), so that the blocks can be put back where they were.
LAYOUT_FIELD = "thinking_layout"
TEXT_FIELDS = frozenset({TEXT_FIELD})

# An event can matter only if its data holds one of these; `text_delta` events, the bulk of a
# stream, hold none of them unless their text does (then they are parsed and ignored).
_EVENT_MARKERS = (
    b'"message_start"',
    b'"content_block_start"',
    b'"thinking',  # "thinking" blocks and "thinking_delta"
    b'"signature_delta"',
    b'"input_json_delta"',
    b'"content_block_stop"',
    b'"message_stop"',
)


# Amazon Bedrock's InvokeModel routes take the Messages body without `model` (the path names it) and with
# `"anthropic_version": "bedrock-2023-05-31"`; InvokeModelWithResponseStream sends the stream's events inside AWS
# event-stream frames (addon/wire/event_stream.py), each one a `chunk` (anthropic-sdk-python lib/bedrock/_client.py and
# lib/bedrock/_stream_decoder.py).
_INVOKE_MARKER = b'"anthropic_version"'


def _bedrock_invoke(path: str) -> str | None:
    """The model a Bedrock InvokeModel path names; None for any other path."""
    route = bedrock_route(path)
    return route.model if route is not None and route.action in (INVOKE, INVOKE_STREAM) else None


def thinking_enabled(doc: Any) -> bool:
    """Whether a request turns thinking on: any `thinking.type` but "disabled"."""
    thinking = doc.get("thinking") if isinstance(doc, dict) else None
    if not isinstance(thinking, dict):
        return False
    kind = thinking.get("type")
    return isinstance(kind, str) and kind != "disabled"


def thinking_on(doc: Any, rules: MessagesThinking | None) -> bool:
    """Whether a request thinks: as its `thinking` field says, or, where it has none, as its provider does by
    default (DeepSeek's Anthropic-compatible API thinks unless told not to; Anthropic only when asked)."""
    if isinstance(doc, dict) and doc.get("thinking") is None:
        return rules is not None and rules.by_default
    return thinking_enabled(doc)


def is_thinking_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in THINKING_TYPES


# What an open block costs the answer's budget whatever it holds: an answer of countless empty blocks is bounded too.
_BLOCK_COST = 1024


@dataclass(slots=True)
class _Block:
    """One content block of a response as it is assembled from stream events."""

    start: dict[str, Any]  # the block as content_block_start (or the whole document) gave it
    thinking: Parts
    signature: Parts
    partial_json: Parts
    stopped: bool = False

    @classmethod
    def opened(cls, start: dict[str, Any], budget: Budget, *, stopped: bool = False) -> _Block:
        kind = start.get("type")
        if kind not in (*THINKING_TYPES, "tool_use"):
            start = {"type": kind}  # an answer's text is not needed, only where the block sits
        return cls(
            start,
            Parts("thinking", budget),
            Parts("signature", budget),
            Parts("tool call arguments", budget),
            stopped,
        )

    @property
    def type(self) -> str:
        kind = self.start.get("type")
        return kind if isinstance(kind, str) else ""

    def thinking_block(self) -> dict[str, Any]:
        """The block as the non-streamed response would hold it: deltas appended, keys in place."""
        block = dict(self.start)
        if self.thinking.pieces:
            block["thinking"] = jsoncodec.join_text([_text(block.get("thinking")), *self.thinking.pieces])
        if self.signature.pieces:
            block["signature"] = jsoncodec.join_text([_text(block.get("signature")), *self.signature.pieces])
        return block

    def tool_call(self, *, whole: bool) -> ToolCallRef | None:
        call_id = self.start.get("id")
        if not isinstance(call_id, str) or not call_id:
            return None
        name = self.start.get("name")
        if not isinstance(name, str) or not whole:
            # Input cut short: the id still links the call, a name+input fingerprint would be wrong.
            return ToolCallRef(id=call_id)
        streamed = jsoncodec.join_text(self.partial_json.pieces)
        arguments = canonical_arguments(streamed if streamed else self.start.get("input", {}))
        return ToolCallRef(id=call_id, name=name, arguments=arguments)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class AnthropicReader:
    markers: tuple[bytes, ...] | None = None  # no byte string marks every event this reader keeps

    def __init__(self) -> None:
        self.response_id: str | None = None
        self.response_model: str | None = None
        self._blocks: dict[int, _Block] = {}
        self._ended = False  # message_stop seen, or a whole document read
        self.unreadable = 0  # events that held no JSON (the capture says so in the log)
        self.budget = Budget()

    def feed_event(self, event: SSEEvent) -> None:
        data = event.data
        if self.budget.over is not None or not any(marker in data for marker in _EVENT_MARKERS):
            return
        # Dispatch on the data's own "type": with blank lines missing, one SSE event holds many.
        docs = list(event_documents(data))
        self.unreadable += not docs
        for doc in docs:
            if isinstance(doc, dict):
                self._event(doc)

    def skippable(self, data: bytes) -> bool:
        return not any(marker in data for marker in _EVENT_MARKERS)

    def _event(self, doc: dict[str, Any]) -> None:
        kind = doc.get("type")
        if kind == "message_start":
            self._message(doc.get("message"))
            return
        if kind == "message_stop":
            self._ended = True
            return
        index = doc.get("index")
        if not isinstance(index, int):
            return
        if kind == "content_block_start":
            block = doc.get("content_block")
            if isinstance(block, dict) and self._may_open(index, block):
                self._blocks[index] = _Block.opened(block, self.budget)
            return
        current = self._blocks.get(index)
        if current is None:
            return
        if kind == "content_block_stop":
            current.stopped = True
            return
        delta = doc.get("delta")
        if kind != "content_block_delta" or not isinstance(delta, dict):
            return
        delta_type = delta.get("type")
        if delta_type == "thinking_delta" and isinstance(delta.get("thinking"), str):
            current.thinking.append(delta["thinking"])
        elif delta_type == "signature_delta" and isinstance(delta.get("signature"), str):
            current.signature.append(delta["signature"])
        elif delta_type == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            current.partial_json.append(delta["partial_json"])

    def _message(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if self.response_id is None and isinstance(message.get("id"), str):
            self.response_id = message["id"]
        if self.response_model is None and isinstance(message.get("model"), str):
            self.response_model = message["model"]

    def feed_document(self, doc: Any) -> None:
        if not isinstance(doc, dict):
            return
        self._message(doc)
        self._ended = True
        content = doc.get("content")
        if not isinstance(content, list):
            return
        for index, block in enumerate(content):
            if isinstance(block, dict) and self._may_open(index, block):
                self._blocks[index] = _Block.opened(block, self.budget, stopped=True)

    def _may_open(self, index: int, block: dict[str, Any]) -> bool:
        """Whether the answer's budget holds one more block (a tool call counts as one, a redacted_thinking block
        by its size)."""
        if index in self._blocks:
            return True
        kind = block.get("type")
        if kind == "tool_use":
            return self.budget.take_call()
        if kind == "redacted_thinking":
            return self.budget.take("redacted_thinking", len(jsoncodec.dumps(block)))
        return self.budget.take("content block", _BLOCK_COST)

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        # Unless the message ended, only blocks that ended are whole: a thinking block cut before
        # its stop may lack its signature. (An overloaded_error event can end a stream early.)
        ended = complete and self._ended
        blocks = [self._blocks[index] for index in sorted(self._blocks)]
        blocks = [block for block in blocks if ended or block.stopped or block.type not in THINKING_TYPES]
        thinking = [block.thinking_block() for block in blocks if block.type in THINKING_TYPES]
        if not thinking:
            return []
        calls = [
            call
            for block in blocks
            if block.type == "tool_use"
            for call in [block.tool_call(whole=ended or block.stopped)]
            if call is not None
        ]
        fields: dict[str, Any] = {BLOCKS_FIELD: thinking}
        text = "\n\n".join(b["thinking"] for b in thinking if isinstance(b.get("thinking"), str) and b["thinking"])
        if text:
            fields[TEXT_FIELD] = text
        layout = [block.type for block in blocks]
        if layout[: len(thinking)] != [b["type"] for b in thinking]:
            fields[LAYOUT_FIELD] = layout
        return [
            ReasoningRecord(
                wire_format=NAME,
                fields=fields,
                tool_calls=calls,
                response_id=self.response_id,
                response_model=self.response_model,
                complete=complete,
            )
        ]


def _tool_uses(content: list[Any]) -> list[dict[str, Any]]:
    return [block for block in content if isinstance(block, dict) and block.get("type") == "tool_use"]


def _use_parts(block: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A request tool_use block's id, name and input."""
    call_id = block.get("id") if isinstance(block.get("id"), str) else None
    name = block.get("name") if isinstance(block.get("name"), str) else None
    return call_id, name, block.get("input", {})


def _has_tool_result(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def _opens_turn(message: Any) -> bool:
    return not isinstance(message, dict) or (message.get("role") == "user" and not _has_tool_result(message))


def _client_input(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "user"


def current_turn_start(messages: list[Any]) -> int:
    """Where the current tool loop begins (a user turn holding a `tool_result` continues it)."""
    return user_turn_start(messages, _has_tool_result)


def repair_targets(messages: list[Any], *, every_turn: bool = False) -> list[int]:
    """The assistant messages a repair may give thinking blocks back to.

    Those of the current tool loop plus the last assistant message, which is
    the one the API checks; earlier, finished turns may omit their thinking
    and are left as the client sent them, unless the provider wants every
    turn's back (`every_turn`). Only messages holding `tool_use` blocks and
    no thinking block at all qualify: a thinking block the client sent is
    never touched.
    """
    last = last_assistant(messages)
    candidates = set(range(0 if every_turn else current_turn_start(messages), len(messages)))
    if last is not None:
        candidates.add(last)
    targets = []
    for index in sorted(candidates):
        content = assistant_blocks(messages[index])
        if content and _tool_uses(content) and not any(is_thinking_block(block) for block in content):
            targets.append(index)
    return targets


def _find(content: list[Any], cache: CacheView) -> CallHit | None:
    for block in _tool_uses(content):
        hit = cache.call(*_use_parts(block))
        if hit is not None:
            return hit
    return None


def _cached_blocks(record: ReasoningRecord, refused: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The thinking blocks a record gives back, without those of a type the target cannot read."""
    blocks = record.fields.get(BLOCKS_FIELD)
    if not isinstance(blocks, list) or not blocks or not all(is_thinking_block(b) for b in blocks):
        return []
    return copy.deepcopy([block for block in blocks if block["type"] not in refused])


def restore_blocks(content: list[Any], blocks: list[dict[str, Any]], layout: Any) -> int:
    """Puts cached thinking blocks back into `content`; returns where the client's first block now is.

    Interleaved blocks go back to their captured places when the client kept
    every other block of the response in order; otherwise all lead.
    """
    if isinstance(layout, list) and len(layout) == len(content) + len(blocks):
        others = [kind for kind in layout if kind not in THINKING_TYPES]
        sent = [block.get("type") if isinstance(block, dict) else None for block in content]
        if others == sent:
            kept, cached = iter(content), iter(blocks)
            content[:] = [next(cached) if kind in THINKING_TYPES else next(kept) for kind in layout]
            return next(i for i, kind in enumerate(layout) if kind not in THINKING_TYPES)
    content[0:0] = blocks
    return len(blocks)


def _signed_value(block: Any) -> str | None:
    """The value the API verifies in a thinking block: its signature, or a redacted block's data."""
    if not is_thinking_block(block):
        return None
    value = block.get("signature" if block["type"] == "thinking" else "data")
    return value if isinstance(value, str) and value else None


def last_assistant(messages: list[Any]) -> int | None:
    """The index of the last assistant message with a content list: the one the API checks."""
    return max((i for i, m in enumerate(messages) if assistant_blocks(m) is not None), default=None)


def required_thinking(doc: Any, messages: list[Any]) -> dict[int, str]:
    """The assistant messages whose thinking blocks cannot go, each with why: with thinking on, the last assistant
    message when it holds `tool_use` blocks of the current tool loop (the API wants it to start with a thinking
    block), or every one with `tool_use` blocks where the provider wants every turn's thinking back."""
    model = doc.get("model") if isinstance(doc, dict) else None
    rules = dialects.messages_thinking(model if isinstance(model, str) else "")
    if not thinking_on(doc, rules):
        return {}
    if rules is not None and rules.every_turn:
        why = f"{rules.who} wants every tool turn's thinking back (go on with the model that issued it)"
        return {index: why for index, message in enumerate(messages) if _tool_uses(assistant_blocks(message) or [])}
    last = last_assistant(messages)
    if last is None or last < current_turn_start(messages) or not _tool_uses(assistant_blocks(messages[last]) or []):
        return {}
    return {
        last: "the current tool loop's last assistant message must start with its thinking (finish the loop on "
        "that model)"
    }


def remove_refused_blocks(messages: list[Any], rules: MessagesThinking) -> list[RepairAction]:
    """Takes out of the assistant messages the blocks of a type the provider cannot read, which it refuses the
    whole request for (a redacted_thinking block from Anthropic, sent to DeepSeek after a switch of model). A block
    that is all its message holds stays: the message cannot go empty."""
    actions: list[RepairAction] = []
    for index, message in enumerate(messages):
        content = assistant_blocks(message)
        if not content or not any(isinstance(b, dict) and b.get("type") in rules.refused_blocks for b in content):
            continue
        uses = _tool_uses(content)
        call_id = _use_parts(uses[0])[0] if uses else None
        removed = []
        for position in reversed(range(len(content))):  # from the end, so that positions before stay valid
            kind = content[position].get("type") if isinstance(content[position], dict) else None
            if kind not in rules.refused_blocks or len(content) == 1:
                continue
            del content[position]
            removed.append(
                RepairAction(
                    kind="foreign_removed",
                    location=f"messages[{index}].content[{position}]",
                    index=index,
                    fields=[kind],
                    tool_call_id=call_id,
                    reason=f"{rules.who} has no {kind} block",
                )
            )
        actions += reversed(removed)
    return actions


_THINKING_BLOCKS = SignedBlocks(
    content=assistant_blocks,
    signed_value=_signed_value,
    label=lambda block: block["type"],
    fields=lambda block: [block["type"]],
    first_call_id=lambda content: _use_parts(uses[0])[0] if (uses := _tool_uses(content)) else None,
)


def remove_foreign_thinking(doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
    """Drops the thinking blocks another model, host or account signed; earlier turns may lose their thinking
    (the API strips it anyway), the message the current tool loop ends with may not, so foreign blocks there stay."""
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list):
        return [], []
    return remove_foreign_blocks(messages, foreign, _THINKING_BLOCKS, lambda: required_thinking(doc, messages))


def every_turn_violations(messages: list[Any], rules: MessagesThinking) -> list[Violation]:
    """Where a provider wants every turn's thinking back: each assistant message with tool use and no thinking."""
    return [
        Violation(
            rule=rules.missing_rule,
            location=f"messages[{index}]",
            message=f"assistant message with tool use and no thinking block ({rules.who} wants every turn's back)",
            tool_call_id=_use_parts(_tool_uses(content)[0])[0],
        )
        for index, message in enumerate(messages)
        if (content := assistant_blocks(message))
        and _tool_uses(content)
        and not any(is_thinking_block(b) for b in content)
    ]


def refused_block_violations(messages: list[Any], rules: MessagesThinking) -> list[Violation]:
    """Each block of a type the provider cannot read."""
    return [
        Violation(
            rule=rules.refused_rule,
            location=f"messages[{index}].content[{position}]",
            message=f"{block['type']} block, which {rules.who} cannot read",
        )
        for index, message in enumerate(messages)
        for position, block in enumerate(assistant_blocks(message) or ())
        if isinstance(block, dict) and block.get("type") in rules.refused_blocks
    ]


class AnthropicMessages(Routed):
    body_marker = b'"messages"'
    name = NAME
    items_key = "messages"
    # The current tool loop starts at the last user message without a tool_result; thinking goes back per message.
    resume = ResumeRules(opens_turn=_opens_turn, ends_input=_client_input)
    text_fields = TEXT_FIELDS
    maskable_fields: frozenset[str] = frozenset()
    signed_fields = frozenset({"signature", "data"})
    signed_markers = (b'"signature"', b'"redacted_thinking"')
    opaque_keys = frozenset({"signature"})
    opaque_list_keys: frozenset[str] = frozenset()
    opaque_data_types = frozenset({"redacted_thinking"})

    def opaque_fragments(self, doc: Any, data_types: frozenset[str]) -> list[tuple[tuple[Any, ...], Any]]:
        """A thinking block's signature_delta, joined per content block; a redacted block's data comes whole."""
        if not isinstance(doc, dict) or doc.get("type") != "content_block_delta":
            return []
        delta = doc.get("delta")
        if not isinstance(delta, dict) or delta.get("type") != "signature_delta":
            return []
        return [(("block", jsoncodec.as_key(doc.get("index")), "signature"), delta.get("signature"))]

    def remove_foreign(self, doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
        return remove_foreign_thinking(doc, foreign)

    def route(self, path: str) -> bool:
        route = path.split("?", 1)[0].rstrip("/")
        # OpenAI's Assistants API has /v1/threads/{id}/messages, with no "messages" list in its body.
        return (
            (route.endswith("/messages") and "/threads/" not in route)
            or raw_predict_model(path) is not None
            or _bedrock_invoke(path) is not None
        )

    def claims(self, method: str, path: str, body: bytes) -> bool:
        # Bedrock's InvokeModel takes every model's own body; Claude's is the Messages body with its anthropic_version.
        return super().claims(method, path, body) and (_bedrock_invoke(path) is None or _INVOKE_MARKER in body)

    def request_model(self, path: str, body: bytes, doc: Any | None) -> str | None:
        # Claude on Vertex AI and on Bedrock's InvokeModel names the model in the path only.
        return raw_predict_model(path) or _bedrock_invoke(path) or body_model(body, doc)

    def may_need_repair(self, body: bytes) -> bool:
        # A repair needs thinking turned on and an assistant tool_use block to give blocks back to; where the body
        # does not say whether it thinks, or holds a block type some provider cannot read, its model's rules decide.
        if b'"tool_use"' in body and b'"thinking"' in body:
            return True
        rules = dialects.messages_thinking(body_model(body, None) or "")
        if rules is None:
            return False
        return b'"tool_use"' in body or any(b'"%s"' % kind.encode() in body for kind in rules.refused_blocks)

    def reader(self) -> AnthropicReader:
        return AnthropicReader()

    def lookup_keys(self, doc: Any, model: str | None) -> list[str]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        rules = dialects.messages_thinking(model or "")
        if not thinking_on(doc, rules) or not isinstance(messages, list):
            return []
        return [
            key
            for index in repair_targets(messages, every_turn=rules is not None and rules.every_turn)
            for block in _tool_uses(messages[index]["content"])
            for key in call_lookup_keys(model, *_use_parts(block))
        ]

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list):
            return []
        rules = dialects.messages_thinking(context.model or "", context.host, context.path)
        actions = remove_refused_blocks(messages, rules) if rules is not None else []
        if not thinking_on(doc, rules):
            return actions
        refused = rules.refused_blocks if rules is not None else frozenset()
        for index in repair_targets(messages, every_turn=rules is not None and rules.every_turn):
            content = messages[index]["content"]
            hit = _find(content, cache)
            blocks = _cached_blocks(hit.record, refused) if hit is not None else []
            if hit is None or not blocks:
                continue
            first = restore_blocks(content, blocks, hit.record.fields.get(LAYOUT_FIELD))
            actions.append(
                RepairAction(
                    kind="inserted",
                    location=f"messages[{index}].content[{first}]",
                    index=index,
                    fields=[block["type"] for block in blocks],
                    tool_call_id=hit.call.id,
                    response_id=hit.record.response_id,
                    via=hit.via,
                )
            )
        return actions

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list):
            return []
        rules = dialects.messages_thinking(context.model or "", context.host, context.path)
        violations = refused_block_violations(messages, rules) if rules is not None else []
        if not thinking_on(doc, rules):
            return violations
        if rules is not None and rules.every_turn:
            return violations + every_turn_violations(messages, rules)
        last = last_assistant(messages)
        content = assistant_blocks(messages[last]) if last is not None else None
        if not content or not _tool_uses(content) or is_thinking_block(content[0]):
            return violations
        found = content[0].get("type") if isinstance(content[0], dict) else type(content[0]).__name__
        return violations + [
            Violation(
                rule=ANTHROPIC_THINKING_EXPECTED,
                location=f"messages[{last}].content[0]",
                message=f"the final assistant message must start with a thinking block, found `{found}`",
                tool_call_id=_use_parts(_tool_uses(content)[0])[0],
            )
        ]

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        content = assistant_blocks(item_at(doc, self.items_key, index))
        return [_use_parts(block) for block in _tool_uses(content)] if content is not None else []

    # The repair sends no placeholder for a signature nothing was cached for.
    signature_placeholder = False

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        return index if index is not None and 0 <= index < len(items) else None
