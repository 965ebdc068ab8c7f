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

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from ...dialects.gemini import GEMINI_SIGNATURE_MISSING, VERTEX_SIGNATURE_MISSING
from ...shared import jsoncodec
from ...shared.limits import Budget
from ...shared.records import (
    CONTENT_KEY_PREFIXES,
    ReasoningRecord,
    RepairAction,
    ToolCallRef,
    Violation,
    canonical_arguments,
)
from ..base import CacheView, CallHit, ForeignLookup, RepairContext, Routed, call_lookup_keys, event_documents, item_at
from ..sse import SSEEvent

NAME = "gemini_native"
SIGNATURE = "thoughtSignature"
SIGNATURE_SNAKE = "thought_signature"
SIGNATURE_KEYS = (SIGNATURE, SIGNATURE_SNAKE)
FUNCTION_CALL_KEYS = ("functionCall", "function_call")
FUNCTION_RESPONSE_KEYS = ("functionResponse", "function_response")
# Record field saying which answer text part carried a text signature: "first" or "last".
SIGNED_TEXT_PART = "signedTextPart"
TEXT_KEY_PREFIX = CONTENT_KEY_PREFIXES[1]  # "gemini-text:"
METHODS = (":generateContent", ":streamGenerateContent")
# Google's documented dummy signature; the Gemini API has taken it base64-encoded, Vertex AI as the literal text.
PLACEHOLDER_PHRASE = "skip_thought_signature_validator"
PLACEHOLDER_BASE64 = base64.b64encode(PLACEHOLDER_PHRASE.encode()).decode()
# Part keys that only a snake_case request uses; such a request gets `thought_signature` on its text parts.
_SNAKE_PART_KEYS = frozenset({"function_call", "function_response", SIGNATURE_SNAKE, "inline_data", "file_data"})
# Chunks holding one of these are read; others (answer text) only when a text signature may need their text.
_STATE_MARKERS = (b"ignature", b"unctionCall", b"unction_call")


def path_model(path: str) -> str | None:
    """The model named in a `…/models/{model}:method` path."""
    route = path.split("?", 1)[0]
    head, colon, _ = route.rpartition(":")
    _, found, model = head.rpartition("/models/")
    if not colon or not found or not model or "/" in model:
        return None
    return model


def text_key(answer: str) -> str:
    """The cache key of a signed answer: its answer text, hashed (the record itself is bound to the model)."""
    return TEXT_KEY_PREFIX + hashlib.sha256(answer.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def part_signature(part: dict[str, Any]) -> str | None:
    for key in SIGNATURE_KEYS:
        value = part.get(key)
        if isinstance(value, str):
            return value
    return None


def has_signature(part: dict[str, Any]) -> bool:
    """Whether the client put any value in a signature field (null counts as none)."""
    return any(part.get(key) is not None for key in SIGNATURE_KEYS)


def function_call(part: dict[str, Any]) -> dict[str, Any] | None:
    for key in FUNCTION_CALL_KEYS:
        call = part.get(key)
        if isinstance(call, dict):
            return call
    return None


def is_answer_text(part: Any) -> bool:
    return isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("thought") is not True


def call_parts(call: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A function call's id, name and arguments (absent arguments are the empty object)."""
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    name = call.get("name") if isinstance(call.get("name"), str) else None
    arguments = call.get("args")
    return call_id, name, {} if arguments is None else arguments


def _answer_digest() -> Any:
    return hashlib.sha256()


@dataclass(slots=True)
class _CandidateState:
    budget: Budget  # the reader's, shared by its candidates
    calls: list[ToolCallRef] = field(default_factory=list)
    # The answer text is only needed as a key: it is hashed as it streams, never kept whole.
    answer_digest: Any = field(default_factory=_answer_digest)
    answer_chars: int = 0
    answer_parts: int = 0
    text_signature: str | None = None
    signed_part: Literal["first", "last"] = "first"

    def add(self, part: dict[str, Any]) -> None:
        signature = part_signature(part)
        if signature is not None and not self.budget.take(SIGNATURE, len(signature)):
            return
        call = function_call(part)
        if call is not None:
            if not self.budget.take_call():
                return
            call_id, name, arguments = call_parts(call)
            self.calls.append(
                ToolCallRef(
                    id=call_id or "",
                    name=name or "",
                    arguments=canonical_arguments(arguments),
                    fields={SIGNATURE: signature} if signature is not None else {},
                )
            )
            return
        if not is_answer_text(part):
            return
        if signature is not None and self.text_signature is None:
            self.text_signature = signature
            self.signed_part = "last" if self.answer_parts else "first"
        self.answer_digest.update(part["text"].encode("utf-8", "surrogatepass"))
        self.answer_chars += len(part["text"])
        self.answer_parts += 1


class GeminiReader:
    """Reads one `GenerateContentResponse`, a stream of them (each SSE `data:` is whole), or a JSON array of them."""

    markers: tuple[bytes, ...] | None = None  # no byte string marks every event this reader keeps

    def __init__(self) -> None:
        self.response_id: str | None = None
        self.response_model: str | None = None
        self._states: dict[int, _CandidateState] = {}
        self.unreadable = 0  # events that held no JSON (the capture says so in the log)
        self.budget = Budget()

    def feed_event(self, event: SSEEvent) -> None:
        if self.budget.over is not None or self.skippable(event.data):
            return
        docs = list(event_documents(event.data))
        self.unreadable += not docs
        for doc in docs:
            self._feed(doc)

    def skippable(self, data: bytes) -> bool:
        return b'"text"' not in data and not any(marker in data for marker in _STATE_MARKERS)

    def feed_document(self, doc: Any) -> None:
        # streamGenerateContent without alt=sse answers with a JSON array of responses.
        for item in doc if isinstance(doc, list) else [doc]:
            self._feed(item)

    def _feed(self, doc: Any) -> None:
        if not isinstance(doc, dict):
            return
        if self.response_id is None and isinstance(doc.get("responseId"), str):
            self.response_id = doc["responseId"]
        if self.response_model is None and isinstance(doc.get("modelVersion"), str):
            self.response_model = doc["modelVersion"]
        _read_candidates(doc.get("candidates"), self._states, self.budget)

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        records = []
        for state in self._states.values():
            # The text of a cut stream is not the text the client will send back.
            text_signed = state.text_signature is not None and complete
            if not text_signed and not any(call.fields for call in state.calls):
                continue
            fields = {SIGNATURE: state.text_signature, SIGNED_TEXT_PART: state.signed_part} if text_signed else {}
            answer_key = TEXT_KEY_PREFIX + state.answer_digest.hexdigest()[:32]
            records.append(
                ReasoningRecord(
                    wire_format=NAME,
                    fields=fields,
                    tool_calls=state.calls,
                    extra_keys=[answer_key] if text_signed and state.answer_chars else [],
                    response_id=self.response_id,
                    response_model=self.response_model,
                    complete=complete,
                )
            )
        return records


def _read_candidates(candidates: Any, states: dict[int, _CandidateState], budget: Budget) -> None:
    if not isinstance(candidates, list):
        return
    for position, candidate in enumerate(candidates):
        if not isinstance(candidate, dict):
            continue
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list):
            continue
        index = candidate.get("index")
        key = index if isinstance(index, int) else position
        state = states.get(key)
        if state is None:
            state = states[key] = _CandidateState(budget)
        for part in parts:
            if isinstance(part, dict):
                state.add(part)


def _is_model(content: Any) -> bool:
    return isinstance(content, dict) and content.get("role") == "model" and isinstance(content.get("parts"), list)


def _is_ordinary_user(content: Any) -> bool:
    """A user content with something other than function results: where the current turn begins."""
    if not isinstance(content, dict) or content.get("role") == "model":
        return False
    parts = content.get("parts")
    if not isinstance(parts, list):
        return False
    return any(isinstance(p, dict) and not any(k in p for k in FUNCTION_RESPONSE_KEYS) for p in parts)


def current_turn_start(contents: list[Any]) -> int:
    """The index after the most recent user content with an ordinary part: Gemini validates from there on."""
    for index in range(len(contents) - 1, -1, -1):
        if _is_ordinary_user(contents[index]):
            return index + 1
    return 0


def _answer_text(parts: list[Any]) -> str:
    return jsoncodec.join_text([part["text"] for part in parts if is_answer_text(part)])


def _call_positions(parts: list[Any]) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(position, part, functionCall) of every function call part."""
    found = []
    for position, part in enumerate(parts):
        call = function_call(part) if isinstance(part, dict) else None
        if call is not None:
            found.append((position, part, call))
    return found


def uses_snake_case(contents: list[Any]) -> bool:
    return any(
        isinstance(part, dict) and not _SNAKE_PART_KEYS.isdisjoint(part)
        for content in contents
        if isinstance(content, dict) and isinstance(content.get("parts"), list)
        for part in content["parts"]
    )


def signature_key(part: dict[str, Any], snake: bool) -> str:
    """The spelling to write a signature in: the part's own, else the request's."""
    if SIGNATURE_SNAKE in part:
        return SIGNATURE_SNAKE
    if SIGNATURE in part or "functionCall" in part:
        return SIGNATURE
    return SIGNATURE_SNAKE if snake or "function_call" in part else SIGNATURE


def placeholder_value(context: RepairContext) -> str | None:
    """What to send for a signature nothing was cached for, or None when no placeholder is wanted."""
    model = context.model or path_model(context.path) or ""
    if "gemini-3" not in model or context.placeholder == "off":
        return None
    if context.placeholder == "auto":
        return PLACEHOLDER_PHRASE if "/projects/" in context.path.split("?", 1)[0] else PLACEHOLDER_BASE64
    return context.placeholder


def remove_foreign_signatures(contents: list[Any], foreign: ForeignLookup) -> list[RepairAction]:
    """Takes off each thought signature another model, host or account issued (Gemini answers "Corrupted thought
    signature."). Signatures are optional on earlier turns; a current-turn call left without one gets the
    placeholder from the repair that follows, as any call with nothing cached does."""
    sites = [
        (index, position, part, key, part[key])
        for index, content in enumerate(contents)
        if _is_model(content)
        for position, part in enumerate(content["parts"])
        if isinstance(part, dict)
        for key in SIGNATURE_KEYS
        if isinstance(part.get(key), str) and part[key]
    ]
    why = foreign([value for *_, value in sites])
    actions = []
    for index, position, part, key, value in sites:
        if value not in why:
            continue
        del part[key]
        call = function_call(part)
        actions.append(
            RepairAction(
                kind="foreign_removed",
                location=f"contents[{index}].parts[{position}]",
                index=index,
                fields=[key],
                tool_call_id=call_parts(call)[0] if call is not None else None,
                reason=why[value],
            )
        )
    return actions


class GeminiNative(Routed):
    body_marker = b'"contents"'
    name = NAME
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
            if not _is_model(content):
                continue
            calls = _call_positions(content["parts"])
            if calls:
                keys += [key for _, _, call in calls for key in call_lookup_keys(model, *call_parts(call))]
            elif answer := _answer_text(content["parts"]):
                keys.append(text_key(answer))
        return list(dict.fromkeys(keys))

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        contents = doc.get("contents") if isinstance(doc, dict) else None
        if not isinstance(contents, list):
            return []
        snake = uses_snake_case(contents)
        actions: list[RepairAction] = []
        for index, content in enumerate(contents):
            if _is_model(content):
                actions += _restore(index, content["parts"], cache, snake)
        placeholder = placeholder_value(context)
        if placeholder is None:
            return actions
        for index, position, part, call in unsigned_current_calls(contents):
            key = signature_key(part, snake)
            part[key] = placeholder
            actions.append(
                RepairAction(
                    kind="placeholder",
                    location=f"contents[{index}].parts[{position}]",
                    index=index,
                    fields=[key],
                    tool_call_id=call_parts(call)[0],
                    degraded=True,
                )
            )
        return actions

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

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        content = item_at(doc, self.items_key, index)
        return [call_parts(call) for _, _, call in _call_positions(content["parts"])] if _is_model(content) else []

    # llm_signature_placeholder stands in for a signature nothing was cached for (`placeholder_value`).
    signature_placeholder = True

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        return index if index is not None and 0 <= index < len(items) else None


def unsigned_current_calls(contents: list[Any]) -> list[tuple[int, int, dict[str, Any], dict[str, Any]]]:
    """(content index, part position, part, functionCall) of each current-turn step whose first call is unsigned:
    what Gemini 3 refuses."""
    found = []
    for index in range(current_turn_start(contents), len(contents)):
        content = contents[index]
        calls = _call_positions(content["parts"]) if _is_model(content) else []
        if calls and not has_signature(calls[0][1]):
            found.append((index, *calls[0]))
    return found


def _restore(index: int, parts: list[Any], cache: CacheView, snake: bool) -> list[RepairAction]:
    actions: list[RepairAction] = []
    # A signature goes on one part only, even when two calls share name and arguments (one fingerprint).
    present = {part_signature(part) for part in parts if isinstance(part, dict)} - {None}
    first_hit: CallHit | None = None
    calls = _call_positions(parts)
    for position, part, call in calls:
        call_id, name, arguments = call_parts(call)
        hit = cache.call(call_id, name, arguments)
        if hit is None:
            continue
        first_hit = first_hit or hit
        signature = hit.call.fields.get(SIGNATURE)
        if not isinstance(signature, str) or has_signature(part) or signature in present:
            continue
        key = signature_key(part, snake)
        part[key] = signature
        present.add(signature)
        actions.append(
            RepairAction(
                kind="restored",
                location=f"contents[{index}].parts[{position}]",
                index=index,
                fields=[key],
                tool_call_id=call_id or hit.call.id or None,
                response_id=hit.record.response_id,
                via=hit.via,
            )
        )
    if first_hit is not None:
        record = first_hit.record
    elif not calls and (answer := _answer_text(parts)):
        record = cache.record(text_key(answer))
    else:
        record = None
    if record is not None:
        actions += _restore_text(index, parts, record, present, snake)
    return actions


def _restore_text(
    index: int, parts: list[Any], record: ReasoningRecord, present: set[str | None], snake: bool
) -> list[RepairAction]:
    signature = record.fields.get(SIGNATURE)
    if not isinstance(signature, str) or signature in present:
        return []
    if any(isinstance(p, dict) and function_call(p) is None and has_signature(p) for p in parts):
        return []
    answers = [position for position, part in enumerate(parts) if is_answer_text(part)]
    if not answers:
        return []
    position = answers[0] if record.fields.get(SIGNED_TEXT_PART) == "first" else answers[-1]
    key = signature_key(parts[position], snake)
    parts[position][key] = signature
    return [
        RepairAction(
            kind="restored",
            location=f"contents[{index}].parts[{position}]",
            index=index,
            fields=[key],
            response_id=record.response_id,
        )
    ]
