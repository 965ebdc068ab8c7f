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

The work is split by job: `stream.py` assembles an answer's blocks (for the capture's `reader.py` and for
`transcript.py`), `repair.py` puts a request right, `foreign.py` takes thinking signed elsewhere out of it, and
`check.py` says which rules it breaks; `messages.py` reads a request's messages for all three. This class ties them
together.
"""

from __future__ import annotations

from typing import Any

from ... import dialects
from ...dialects.bedrock import INVOKE, INVOKE_STREAM, bedrock_route
from ...dialects.vertex_anthropic import raw_predict_model
from ...shared import jsoncodec
from ...shared.records import RepairAction, Violation
from ..base import (
    CacheView,
    ForeignLookup,
    RecordReader,
    RepairContext,
    ResumeRules,
    Routed,
    SentValue,
    assistant_blocks,
    body_model,
    call_lookup_keys,
    item_at,
)
from ..block_repair import mangled_targets
from .check import check_messages
from .foreign import remove_foreign_thinking
from .messages import has_tool_result, thinking_on, tool_uses, use_parts
from .reader import NAME, TEXT_FIELDS, AnthropicReader
from .recover import recover_messages
from .repair import BLOCKS, repair_messages, repair_targets

# Amazon Bedrock's InvokeModel routes take the Messages body without `model` (the path names it) and with
# `"anthropic_version": "bedrock-2023-05-31"`; InvokeModelWithResponseStream sends the stream's events inside AWS
# event-stream frames (addon/wire/event_stream.py), each one a `chunk` (anthropic-sdk-python lib/bedrock/_client.py and
# lib/bedrock/_stream_decoder.py).
_INVOKE_MARKER = b'"anthropic_version"'


def _bedrock_invoke(path: str) -> str | None:
    """The model a Bedrock InvokeModel path names; None for any other path."""
    route = bedrock_route(path)
    return route.model if route is not None and route.action in (INVOKE, INVOKE_STREAM) else None


def _opens_turn(message: Any) -> bool:
    return not isinstance(message, dict) or (message.get("role") == "user" and not has_tool_result(message))


def _client_input(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "user"


class AnthropicMessages(Routed):
    body_marker = b'"messages"'
    name = NAME
    operation = "chat"  # its `gen_ai.operation.name` in OpenTelemetry's GenAI conventions
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
        targets = repair_targets(messages, every_turn=rules is not None and rules.every_turn)
        # Messages whose thinking may be mangled, whatever the request asked: their capture tells.
        targets += mangled_targets(messages, BLOCKS)
        return [
            key
            for index in targets
            for block in tool_uses(messages[index]["content"])
            for key in call_lookup_keys(model, *use_parts(block))
        ]

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        return repair_messages(doc, messages, cache, context) if isinstance(messages, list) else []

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        return check_messages(doc, messages, context) if isinstance(messages, list) else []

    def recover(self, doc: Any, context: RepairContext, refused: list[int] | None) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        return recover_messages(doc, messages, context, refused) if isinstance(messages, list) else []

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        content = assistant_blocks(item_at(doc, self.items_key, index))
        return [use_parts(block) for block in tool_uses(content)] if content is not None else []

    # The repair sends no placeholder for a signature nothing was cached for.
    signature_placeholder = False

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        return index if index is not None and 0 <= index < len(items) else None

    def sent_values(self, doc: Any, model: str | None, records: RecordReader) -> list[SentValue]:
        return []  # its texts name the block they refuse: not judged


__all__ = ["NAME", "AnthropicMessages", "AnthropicReader"]
