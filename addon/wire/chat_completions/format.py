"""OpenAI-style `/chat/completions`, with reasoning kept on the assistant message and its tool calls.

Covers GitHub Copilot (`reasoning_opaque`, `reasoning_text`), DeepSeek, Kimi,
GLM and Qwen (`reasoning_content`, and Qwen's encrypted thinking), OpenRouter
and MiniMax (`reasoning_details`), MiniMax's `<think>` block in `content`,
Gemini's OpenAI-compatible endpoint (`extra_content`), LiteLLM (`__thought__`
ids, `provider_specific_fields`) and Mistral (thinking chunks in `content`);
`fields.py` says how each is gathered. A
response carries its reasoning once per assistant turn, so a turn's record is
linked to every tool call of that turn.

What goes back depends on who serves the request (addon/dialects/): the turns
whose reasoning its provider reads, and whether its reasoning rides in `content`.

The work is split by job: `stream.py` assembles an answer (for the capture's `reader.py` and for `transcript.py`),
`repair.py` puts a request right, `foreign.py` takes values issued elsewhere out of it, and `check.py` says which
rules it breaks; `messages.py` reads a request's messages for all three. This class ties them together.
"""

from __future__ import annotations

from typing import Any

from ...dialects.openai import deployment_model
from ...shared.records import RepairAction, Violation
from ..base import (
    CacheView,
    ForeignLookup,
    RecordReader,
    RepairContext,
    ResumeRules,
    Routed,
    SentValue,
    body_model,
    call_lookup_keys,
    item_at,
)
from .check import check_messages, refused_field_violations
from .fields import DIALECT_FIELDS, THINK_FIELD, THINKING_FIELD, opaque_delta_fragments
from .foreign import remove_foreign_values
from .messages import block_to_message, call_parts, is_assistant, tool_calls
from .reader import NAME, ChatCompletionsReader
from .recover import recover_messages
from .repair import repair_messages


def _opens_turn(message: Any) -> bool:
    return not isinstance(message, dict) or message.get("role") == "user"


def _client_input(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") in _CLIENT_ROLES


_CLIENT_ROLES = frozenset({"user", "tool", "function", "system", "developer"})


class ChatCompletions(Routed):
    body_marker = b'"messages"'
    name = NAME
    operation = "chat"  # its `gen_ai.operation.name` in OpenTelemetry's GenAI conventions
    items_key = "messages"
    # The current tool loop starts after the last user message; a split turn is two assistant messages in a row.
    resume = ResumeRules(opens_turn=_opens_turn, ends_input=_client_input)
    # Readable text, logged as such (Mistral's thinking chunks as their JSON).
    text_fields = frozenset({"reasoning_text", "reasoning_content", THINKING_FIELD, THINK_FIELD})
    # DeepSeek, Kimi, GLM and Qwen read reasoning_content as text (DeepSeek takes "" too), MiniMax its <think> block;
    # Copilot's reasoning_text travels with the signed reasoning_opaque and is kept exact.
    maskable_fields = frozenset({"reasoning_content", THINK_FIELD})
    signed_fields = frozenset({"reasoning_opaque", "thought_signature", "signature", "data", *DIALECT_FIELDS})
    signed_markers = (
        b'"reasoning_opaque"',
        b'"thought_signature"',
        b'"reasoning_details"',
        *(b'"%s"' % name.encode() for name in DIALECT_FIELDS),
    )
    # Copilot's reasoning_opaque; OpenRouter's reasoning_details signatures; thought_signature of the Gemini
    # OpenAI-compatible extra_content and of LiteLLM's provider_specific_fields, which also lists them; the
    # dialects' own opaque fields.
    opaque_keys = frozenset({"reasoning_opaque", "signature", "thought_signature", *DIALECT_FIELDS})
    opaque_list_keys = frozenset({"thought_signatures"})
    opaque_data_types = frozenset({"reasoning.encrypted"})  # OpenRouter's encrypted reasoning_details entry

    def opaque_fragments(self, doc: Any, data_types: frozenset[str]) -> list[tuple[tuple[Any, ...], Any]]:
        return opaque_delta_fragments(doc, data_types)

    def remove_foreign(self, doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        return remove_foreign_values(messages, foreign) if isinstance(messages, list) else ([], [])

    def route(self, path: str) -> bool:
        route = path.split("?", 1)[0].rstrip("/")
        return route.endswith("/chat/completions")

    def request_model(self, path: str, body: bytes, doc: Any | None) -> str | None:
        return deployment_model(path) or body_model(body, doc)

    def may_need_repair(self, body: bytes) -> bool:
        # Every repair here concerns an assistant message that holds tool calls.
        return b'"tool_calls"' in body

    def reader(self) -> ChatCompletionsReader:
        return ChatCompletionsReader()

    def lookup_keys(self, doc: Any, model: str | None) -> list[str]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list):
            return []
        return [
            key
            for message in messages
            if is_assistant(message)
            for call in tool_calls(message)
            for key in call_lookup_keys(model, *call_parts(call))
        ]

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        return repair_messages(doc, messages, cache, context) if isinstance(messages, list) else []

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        return check_messages(messages, context, doc) if isinstance(messages, list) else []

    def recover(self, doc: Any, context: RepairContext, refused: list[int] | None) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        return recover_messages(doc, messages, context, refused) if isinstance(messages, list) else []

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        message = item_at(doc, self.items_key, index)
        return [call_parts(call) for call in tool_calls(message)] if is_assistant(message) else []

    # The repair sends no placeholder for a signature nothing was cached for.
    signature_placeholder = False

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        if position is not None:  # Gemini's count of its contents, passed on by Copilot or OpenRouter
            return block_to_message(items, position)
        return index if index is not None and 0 <= index < len(items) else None

    def sent_values(self, doc: Any, model: str | None, records: RecordReader) -> list[SentValue]:
        return []  # not judged: its refused values are not held against the capture


__all__ = [
    "NAME",
    "ChatCompletions",
    "ChatCompletionsReader",
    "check_messages",
    "refused_field_violations",
    "remove_foreign_values",
]
