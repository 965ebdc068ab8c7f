"""Gemini's native wire format: `generateContent` and `streamGenerateContent` on the Gemini API and Vertex AI.

Gemini hands its reasoning state back as an opaque `thoughtSignature` on the part it belongs to: the first
`functionCall` part of each step, or a text part when a step has no function call (Gemini 2.5 signs the first
answer part, Gemini 3 the last one, in a stream often an empty text part at the very end). The next request must
carry every signature on the same part of the same model content; Gemini 3 refuses (400) a current-turn step
whose first function call lacks one.

Function call signatures live on the captured call (`ToolCallRef.fields`) and are found again by
`functionCall.id` or, since Gemini 3 returns calls without ids and clients invent their own, by name and
arguments.

Text-part signatures are optional for validation, so they get a simple treatment. A response's signed answer is
keyed by a hash of its answer text (every non-thought text part, concatenated: clients merge streamed pieces
into one part), and the record says whether the signature came on the first or on a later answer part. A model
content whose function calls hit the cache, or without function calls and with the same answer text, gets the
signature back on its first or its last answer text part, unless one of its non-call parts already carries a
signature. Requests without any function call are never parsed (see `may_need_repair`), so a text-only
conversation passes through untouched: parsing every chat to restore an optional value costs more than it gains.
A signature on a `thought: true` part is not captured; no capture shows one.

When nothing is cached for a Gemini 3 model content of the current turn (everything after the most recent user
content with a part that is not a `functionResponse`) and its first function call still has no signature, the
`llm_signature_placeholder` setting decides: Google's documented dummy value (literal on Vertex AI paths, base64
on the Gemini API), nothing, or a value of the user's choosing. Every placeholder is reported as degraded.
"""

from __future__ import annotations

from typing import Any

from ...dialects.gemini import GEMINI_SIGNATURE_MISSING, VERTEX_SIGNATURE_MISSING
from ...shared.records import RepairAction, Violation
from ..base import CacheView, ForeignLookup, RecordReader, RepairContext, Routed, SentValue, call_lookup_keys, item_at
from .foreign import remove_foreign_signatures
from .parts import (
    METHODS,
    NAME,
    SIGNATURE_KEYS,
    SIGNED_TEXT_PART,
    call_parts,
    is_model_content,
    path_model,
    text_key,
)
from .reader import GeminiReader
from .recover import recover_contents
from .repair import (
    PLACEHOLDER_BASE64,
    PLACEHOLDER_PHRASE,
    answer_text,
    call_positions,
    repair_contents,
    unsigned_current_calls,
)
from .sent import sent_values


class GeminiNative(Routed):
    body_marker = b'"contents"'
    name = NAME
    operation = "generate_content"  # its `gen_ai.operation.name` in OpenTelemetry's GenAI conventions
    items_key = "contents"
    text_fields = frozenset({SIGNED_TEXT_PART})
    maskable_fields: frozenset[str] = frozenset()
    signed_fields = frozenset(SIGNATURE_KEYS)
    signed_markers = (b'"thoughtSignature"', b'"thought_signature"')
    opaque_keys = frozenset(SIGNATURE_KEYS)
    opaque_list_keys: frozenset[str] = frozenset()
    opaque_data_types: frozenset[str] = frozenset()

    def opaque_fragments(self, doc: Any, data_types: frozenset[str]) -> list[tuple[tuple[Any, ...], Any]]:
        return []  # a streamed thoughtSignature comes whole, on the part it belongs to

    def remove_foreign(self, doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
        contents = doc.get("contents") if isinstance(doc, dict) else None
        return (remove_foreign_signatures(contents, foreign) if isinstance(contents, list) else []), []

    def route(self, path: str) -> bool:
        route = path.split("?", 1)[0]
        return route.endswith(METHODS) and "/models/" in route

    def request_model(self, path: str, body: bytes, doc: Any | None) -> str | None:
        return path_model(path)

    def may_need_repair(self, body: bytes) -> bool:
        # Every repair hangs on a function call: its signature, a placeholder, or the text signature of a
        # history that holds one (text-only histories are left alone, see the module docstring).
        return b'"functionCall"' in body or b'"function_call"' in body

    def reader(self) -> GeminiReader:
        return GeminiReader()

    def lookup_keys(self, doc: Any, model: str | None) -> list[str]:
        contents = doc.get("contents") if isinstance(doc, dict) else None
        if not isinstance(contents, list):
            return []
        keys: list[str] = []
        for content in contents:
            if not is_model_content(content):
                continue
            calls = call_positions(content["parts"])
            if calls:
                keys += [key for _, _, call in calls for key in call_lookup_keys(model, *call_parts(call))]
            elif answer := answer_text(content["parts"]):
                keys.append(text_key(answer))
        return list(dict.fromkeys(keys))

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        contents = doc.get("contents") if isinstance(doc, dict) else None
        return repair_contents(contents, cache, context) if isinstance(contents, list) else []

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        contents = doc.get("contents") if isinstance(doc, dict) else None
        if not isinstance(contents, list) or "gemini-3" not in (path_model(context.path) or ""):
            return []
        vertex = "/projects/" in context.path.split("?", 1)[0]
        return [
            Violation(
                rule=VERTEX_SIGNATURE_MISSING if vertex else GEMINI_SIGNATURE_MISSING,
                location=f"contents[{index}].parts[{position}]",
                message=f"current-turn function call `{call_parts(call)[1]}` without its thought signature",
                tool_call_id=call_parts(call)[0],
            )
            for index, position, part, call in unsigned_current_calls(contents)
        ]

    def recover(self, doc: Any, context: RepairContext, refused: list[int] | None) -> list[RepairAction]:
        # Before sending, the repair's placeholder is all there is (see recover.py): only refused signatures change.
        contents = doc.get("contents") if isinstance(doc, dict) else None
        if not isinstance(contents, list) or refused == []:
            return []
        return recover_contents(contents, context, refused)

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        content = item_at(doc, self.items_key, index)
        return (
            [call_parts(call) for _, _, call in call_positions(content["parts"])] if is_model_content(content) else []
        )

    # llm_signature_placeholder stands in for a signature nothing was cached for (`placeholder_value`).
    signature_placeholder = True

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        return index if index is not None and 0 <= index < len(items) else None

    def sent_values(self, doc: Any, model: str | None, records: RecordReader) -> list[SentValue]:
        contents = doc.get("contents") if isinstance(doc, dict) else None
        if not isinstance(contents, list):
            return []
        return sent_values(contents, self.lookup_keys(doc, model), model, records)


__all__ = ["NAME", "PLACEHOLDER_BASE64", "PLACEHOLDER_PHRASE", "GeminiNative", "text_key"]
