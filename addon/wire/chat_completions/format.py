"""OpenAI-style `/chat/completions`, with reasoning kept on the assistant message and its tool calls.

Covers GitHub Copilot (`reasoning_opaque`, `reasoning_text`), DeepSeek, Kimi,
GLM and Qwen (`reasoning_content`, and Qwen's encrypted thinking), OpenRouter
and MiniMax (`reasoning_details`), MiniMax's `<think>` block in `content`,
Gemini's OpenAI-compatible endpoint (`extra_content`), LiteLLM (`__thought__`
ids, `provider_specific_fields`) and Mistral (thinking chunks in `content`);
`chat_fields` says how each is assembled. A
response carries its reasoning once per assistant turn, so a turn's record is
linked to every tool call of that turn.

What goes back depends on who serves the request (addon/dialects/): the turns
whose reasoning its provider reads, and whether its reasoning rides in `content`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ... import dialects
from ...dialects.base import REASONING_CONTENT_MISSING, TOOL_RESULT_ORPHANED, Dialect
from ...dialects.mistral import MESSAGE_FIELD_NOT_PERMITTED
from ...dialects.openai import CONTENT_EMPTY_ARRAY, deployment_model
from ...shared import jsoncodec
from ...shared.limits import MAX_CHOICES, Budget, Parts
from ...shared.records import ReasoningRecord, RepairAction, ToolCallRef, Violation
from ..base import (
    CacheView,
    CallHit,
    ForeignLookup,
    RepairContext,
    ResumeRules,
    Routed,
    body_model,
    call_lookup_keys,
    event_documents,
    item_at,
)
from ..sse import SSEEvent
from .fields import (
    CALL_FIELDS,
    DETAILS_FIELD,
    DIALECT_FIELDS,
    MESSAGE_FIELDS,
    STREAM_MARKERS,
    TEXT_FIELDS,
    THINK_FIELD,
    THINKING_FIELD,
    WHOLE_FIELDS,
    DetailAssembler,
    ThinkBlock,
    ThinkingChunks,
    call_field,
    is_missing,
    litellm_short_id,
    message_lacks,
    opaque_delta_fragments,
    put_back,
    put_back_think,
    set_call_field,
)

NAME = "chat_completions"
_EMPTY_CONTENT = (None, "", [])


# Unpacked for the checks below, which see every chunk: plain `in`/`find` beat a loop or a regex alternation there.
# The dialects' own markers are looked for only in chunks that hold none of the first four.
_REASONING, _TOOL_CALLS, _EXTRA_CONTENT, _THINKING, *_DIALECT_MARKERS = STREAM_MARKERS
# A chunk whose content is a non-empty string: the answer's content begins (or goes on) in it.
_CONTENT_TEXT = re.compile(rb'"content"\s*:\s*"[^"]')


def _interesting(data: bytes) -> bool:
    """Whether a chunk holds anything this reader keeps, judged by its STREAM_MARKERS and only past `"delta"`
    (every kept field is inside the delta). Chunks that hold none carry only answer text and are not parsed."""
    start = data.find(b'"delta"')
    if start < 0:
        return True  # not a delta chunk: let the parser look
    return (
        data.find(_REASONING, start) >= 0
        or data.find(_TOOL_CALLS, start) >= 0
        or data.find(_EXTRA_CONTENT, start) >= 0
        or data.find(_THINKING, start) >= 0
        or any(data.find(marker, start) >= 0 for marker in _DIALECT_MARKERS)
    )


def _marked(data: bytes) -> bool:
    return (
        _REASONING in data
        or _TOOL_CALLS in data
        or _EXTRA_CONTENT in data
        or _THINKING in data
        or any(marker in data for marker in _DIALECT_MARKERS)
    )


_KEPT = frozenset({*TEXT_FIELDS, *WHOLE_FIELDS, DETAILS_FIELD, "tool_calls", "content"})
# Chunks set aside for a batch parse are parsed early past this, so memory stays bounded.
MAX_PENDING_BYTES = 4 * 1024 * 1024


@dataclass(slots=True)
class _ToolCallSlot:
    arguments: Parts
    id: str = ""
    name: str = ""
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _ChoiceState:
    budget: Budget  # the reader's, shared by its choices
    streamed: bool  # read from stream deltas, not from a whole message
    texts: dict[str, Parts] = field(default_factory=dict)
    whole: dict[str, Any] = field(default_factory=dict)
    details: DetailAssembler | None = None
    chunks: ThinkingChunks | None = None  # Mistral's thinking chunks, from content arrays
    calls: dict[int, _ToolCallSlot] = field(default_factory=dict)
    # calls that came without an index: where each id went, and the call a bare fragment continues
    call_ids: dict[str, int] = field(default_factory=dict)
    last_call: int = -1
    # The content's leading `<think>` block, while it is read (None before any content text, and when not looked for)
    think: ThinkBlock | None = None
    content_seen: bool = False  # content text came: a block can only be at its start

    @property
    def think_open(self) -> bool:
        """Whether the content read so far may still be, or be in, a leading `<think>` block."""
        return self.think is not None and self.think.open

    def add(self, part: dict[str, Any], think: bool = False) -> None:
        """Adds one delta (or message); `think`: its content is read for a leading `<think>` block (only where the
        reader saw every piece of the content before it)."""
        # Most deltas hold one or two keys: visit the kept ones present, in the provider's order.
        for name, value in part.items():
            if name not in _KEPT:
                continue
            if name == "content":
                # Answer text comes as a string, read for a leading <think> block (MiniMax); an array may hold
                # Mistral's thinking chunks.
                if isinstance(value, list):
                    if self.chunks is None:
                        self.chunks = ThinkingChunks(self.budget, streamed=self.streamed)
                    self.chunks.add(value)
                elif think and isinstance(value, str) and value:
                    self._content(value)
            elif name in TEXT_FIELDS:
                if isinstance(value, str):
                    texts = self.texts.get(name)
                    if texts is None:
                        texts = self.texts[name] = Parts(name, self.budget)
                    texts.append(value)
            elif name in WHOLE_FIELDS:
                if value is not None and self.budget.take(name, len(jsoncodec.dumps(value))):
                    self.whole[name] = value
            elif name == DETAILS_FIELD:
                if isinstance(value, list):
                    if self.details is None:
                        self.details = DetailAssembler(self.budget)
                    self.details.add(value)
            elif isinstance(value, list):  # tool_calls
                for call in value:
                    if isinstance(call, dict):
                        self._add_call(call)

    def _content(self, text: str) -> None:
        if self.think is None:
            if self.content_seen:
                return
            self.think = ThinkBlock(self.budget)
        self.content_seen = True
        self.think.add(text)

    def _add_call(self, call: dict[str, Any]) -> None:
        call_id = call.get("id") if isinstance(call.get("id"), str) else ""
        index = call.get("index")
        if not isinstance(index, int):
            # Without an index, a new id starts a new call and a bare fragment continues the last.
            if call_id and call_id not in self.call_ids or not self.calls:
                index = len(self.calls)
            else:
                index = self.last_call
        slot = self.calls.get(index)
        if slot is None:
            if not self.budget.take_call():
                return
            slot = self.calls[index] = _ToolCallSlot(Parts("tool call arguments", self.budget))
        self.last_call = max(self.last_call, index)
        if call_id and not slot.id:
            slot.id = call_id
            self.call_ids.setdefault(call_id, index)
        function = call.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if isinstance(name, str) and name and not slot.name:
                slot.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                slot.arguments.append(arguments)
        for name in CALL_FIELDS:
            value = call_field(call, name)
            if value is not None and self.budget.take(name, len(jsoncodec.dumps(value))):
                slot.fields[name] = value

    def fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            name: jsoncodec.join_text(parts.pieces) for name, parts in self.texts.items() if parts.pieces
        }
        fields.update(self.whole)
        if self.details:
            fields[DETAILS_FIELD] = self.details.entries()
        if self.chunks:
            fields[THINKING_FIELD] = self.chunks.chunks()
        block = self.think.value() if self.think is not None else None
        if block is not None:
            fields[THINK_FIELD] = block
        return fields

    def tool_calls(self) -> list[ToolCallRef]:
        return [
            ToolCallRef(
                id=slot.id,
                name=slot.name,
                arguments=jsoncodec.join_text(slot.arguments.pieces),
                aliases=[short] if (short := litellm_short_id(slot.id)) else [],
                fields=slot.fields,
            )
            for slot in self.calls.values()
            if slot.id or slot.name
        ]


class ChatCompletionsReader:
    """Reads chat completion chunks. While a stream passes, the chunks that matter are only set aside;
    they are parsed in one batch when the records are asked for, so the stream is never held up by it.

    The content's first text is parsed as it comes, to tell whether the answer starts with a `<think>` block; the
    chunks of such a block are parsed as they come until the answer text after it begins. From then on, and in
    answers without a block, content chunks are passed over unparsed; content arrays that hold Mistral's thinking
    chunks carry the `"thinking"` marker and are set aside as the reasoning fields are."""

    def __init__(self) -> None:
        self.response_id: str | None = None
        self.response_model: str | None = None
        self._choices: dict[int, _ChoiceState] = {}
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.unreadable = 0  # events that held no JSON (the capture says so in the log)
        self.budget = Budget()
        # Where the content stands: None before its first text, True while a leading <think> block is read, False
        # once the answer text began (with or without a block before it).
        self._thinking: bool | None = None
        # How many choices may still be in a leading <think> block, and how many had content text: kept as chunks
        # are read, for `_settle` not to look at every choice after each chunk.
        self._open_blocks = 0
        self._content_begun = 0

    def feed_event(self, event: SSEEvent) -> None:
        data = event.data
        if data == b"[DONE]" or self.budget.over is not None:  # nothing more is kept of an answer over a bound
            return
        if self.response_id is None:  # the first chunk is read at once: the rest is judged by it
            self._parse(data, think=True)
            self._settle()
            return
        if self._thinking is not False and (self._thinking or _CONTENT_TEXT.search(data)):
            self._drain()  # what was set aside comes first
            self._parse(data, think=True)
            self._settle()
            return
        # A chunk of one event was judged whole already; this cheaper test sorts chunks of several.
        if not _marked(data):
            return
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes > MAX_PENDING_BYTES:
            self._drain()

    def _parse(self, data: bytes, think: bool = False) -> None:
        try:
            self._feed(orjson.loads(data), "delta", think)
        except orjson.JSONDecodeError:
            docs = list(event_documents(data))
            self.unreadable += not docs
            for doc in docs:
                self._feed(doc, "delta", think)

    def _settle(self) -> None:
        """Where the content stands, after chunks were read for a `<think>` block."""
        if self._open_blocks:
            self._thinking = True
        elif self._content_begun:
            self._thinking = False

    def _drain(self) -> None:
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        try:
            docs = orjson.loads(b"[" + b",".join(pending) + b"]")  # one parse for the whole batch
        except orjson.JSONDecodeError:
            for data in pending:
                self._parse(data)
            return
        for doc in docs:
            self._feed(doc, "delta")

    def skippable(self, data: bytes) -> bool:
        return self.response_id is not None and self._thinking is False and not _interesting(data)

    @property
    def markers(self) -> tuple[bytes, ...] | None:
        """What the events this reader keeps contain, once the first event has been read and the content has begun
        (not with a `<think>` block, or after it)."""
        return STREAM_MARKERS if self.response_id is not None and self._thinking is False else None

    def feed_document(self, doc: Any) -> None:
        self._feed(doc, "message", True)

    def _feed(self, doc: Any, part_key: str, think: bool = False) -> None:
        if type(doc) is not dict:
            return
        if self.response_id is None and isinstance(doc.get("id"), str):
            self.response_id = doc["id"]
        if self.response_model is None and isinstance(doc.get("model"), str):
            self.response_model = doc["model"]
        choices = doc.get("choices")
        if type(choices) is not list:
            return
        states = self._choices
        for position, choice in enumerate(choices):
            if type(choice) is not dict:
                continue
            part = choice.get(part_key)
            if type(part) is not dict:
                continue
            index = choice.get("index")
            key = index if type(index) is int else position
            state = states.get(key)
            if state is None:
                if len(states) >= MAX_CHOICES:
                    self.budget.refuse(f"it has more than {MAX_CHOICES} choices")
                    return
                state = states[key] = _ChoiceState(self.budget, streamed=part_key == "delta")
            if not think:
                state.add(part)
                continue
            was_open, had_content = state.think_open, state.content_seen
            state.add(part, think)
            self._open_blocks += state.think_open - was_open
            self._content_begun += state.content_seen - had_content

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        self._drain()
        records = []
        for state in self._choices.values():
            record = ReasoningRecord(
                wire_format=NAME,
                fields=state.fields(),
                tool_calls=state.tool_calls(),
                response_id=self.response_id,
                response_model=self.response_model,
                complete=complete,
            )
            has_state = record.has_state or any(call.aliases for call in record.tool_calls)
            # A cut stream is only trusted once tool calls began: the reasoning before them is whole.
            if has_state and (complete or record.tool_calls):
                records.append(record)
        return records


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _call_parts(call: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A request tool call's id, function name and arguments."""
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    name = function.get("name") if isinstance(function.get("name"), str) else None
    return call_id, name, function.get("arguments", "")


def _is_assistant(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "assistant"


def _has_tool_calls(message: dict[str, Any]) -> bool:
    return isinstance(message.get("tool_calls"), list) and bool(message["tool_calls"])


def _has_reasoning(message: dict[str, Any]) -> bool:
    return any(not message_lacks(message, name) for name in (*MESSAGE_FIELDS, THINKING_FIELD))


def _first_hit(message: dict[str, Any], cache: CacheView) -> tuple[str | None, CallHit] | None:
    """The first of a message's tool calls found in the cache: its id as sent, and the hit."""
    for call in _tool_calls(message):
        parts = _call_parts(call)
        hit = cache.call(*parts)
        if hit is not None:
            return parts[0], hit
    return None


def _is_split_pair(first: Any, second: Any, cache: CacheView) -> bool:
    """A turn the client sent as two assistant messages: text/reasoning, then tool calls."""
    if not (_is_assistant(first) and _is_assistant(second)):
        return False
    if _has_tool_calls(first) or not _has_tool_calls(second):
        return False
    if second.get("content") not in _EMPTY_CONTENT or _has_reasoning(second):
        return False
    return _has_reasoning(first) or _first_hit(second, cache) is not None


def _merge(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    merged = dict(first)
    for key, value in second.items():
        if key != "content" and merged.get(key) in _EMPTY_CONTENT:
            merged[key] = value
    return merged


_SIGNATURE_PATH = ("extra_content", "google", "thought_signature")


def _call_id(call: dict[str, Any] | None) -> str | None:
    call_id = call.get("id") if call is not None else None
    return call_id if isinstance(call_id, str) else None


def _signed_sites(message: dict[str, Any]) -> Iterator[tuple[str, Any, Any, str | None]]:
    """(where, how to remove it, value, tool call id) of each signed value of an assistant message: Copilot's
    `reasoning_opaque`, OpenRouter's signed or encrypted `reasoning_details` entries, a call's Gemini
    `thought_signature`. How to remove is a list and the position to take out of it, or a dict and the path of
    keys to the value; the id is the call's, or for values of the whole message its first call's."""
    calls = _tool_calls(message)
    first = _call_id(calls[0]) if calls else None
    for name in ("reasoning_opaque", *DIALECT_FIELDS):
        opaque = message.get(name)
        if isinstance(opaque, str) and opaque:
            yield name, (message, (name,)), opaque, first
    details = message.get(DETAILS_FIELD)
    if isinstance(details, list):
        for position, entry in enumerate(details):
            for key in ("signature", "data"):
                value = entry.get(key) if isinstance(entry, dict) else None
                if isinstance(value, str) and value:
                    yield f"{DETAILS_FIELD}[{position}]", (details, position), value, first
                    break
    for position, call in enumerate(calls):
        extra = call.get("extra_content")
        google = extra.get("google") if isinstance(extra, dict) else None
        value = google.get("thought_signature") if isinstance(google, dict) else None
        if isinstance(value, str) and value:
            yield f"tool_calls[{position}].extra_content", (call, _SIGNATURE_PATH), value, _call_id(call)


def _take_out(container: Any, what: Any) -> None:
    """Removes a value found by `_signed_sites`; objects it leaves empty go with it (`extra_content: {google: {}}`
    is no more than the client would have sent without the signature)."""
    if isinstance(container, list):
        del container[what]  # sites are taken out from the last, so the positions before stay valid
        return
    parents = [container]
    for key in what[:-1]:
        parents.append(parents[-1][key])
    del parents[-1][what[-1]]
    for parent, key in zip(reversed(parents[:-1]), reversed(what[:-1])):
        if parent[key]:
            break
        del parent[key]


def remove_foreign_values(
    messages: list[Any], foreign: ForeignLookup
) -> tuple[list[RepairAction], list[tuple[int, str]]]:
    """Removes signed values another model, host or account issued from finished turns (providers take earlier
    turns without them). The current tool loop's values stay: there the provider wants them, and takes no
    substitute, so the note says to finish the loop on the model that issued them."""
    sites = [
        (index, *site)
        for index, message in enumerate(messages)
        if _is_assistant(message)
        for site in _signed_sites(message)
    ]
    why = foreign([site[3] for site in sites])
    if not why:
        return [], []
    current = set(_current_turn(messages))
    actions, kept = [], []
    for index, where, (container, what), value, call_id in reversed(sites):  # list entries go from the last
        reason = why.get(value)
        if reason is None:
            continue
        location = f"messages[{index}]"
        if index in current:
            kept.append((index, f"{where} of {location} {reason}; left in place: the current tool loop needs it"))
            continue
        _take_out(container, what)
        actions.append(
            RepairAction(
                kind="foreign_removed",
                location=location,
                index=index,
                fields=[where],
                tool_call_id=call_id,
                reason=reason,
            )
        )
    actions.reverse()
    kept.reverse()
    return actions, kept


def _opens_turn(message: Any) -> bool:
    return not isinstance(message, dict) or message.get("role") == "user"


def _client_input(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") in _CLIENT_ROLES


_CLIENT_ROLES = frozenset({"user", "tool", "function", "system", "developer"})


class ChatCompletions(Routed):
    body_marker = b'"messages"'
    name = NAME
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
            if _is_assistant(message)
            for call in _tool_calls(message)
            for key in call_lookup_keys(model, *_call_parts(call))
        ]

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(messages, list):
            return []
        dialect = dialects.serving(context.host, context.path, context.model or "")
        actions: list[RepairAction] = []
        index = 0
        while index + 1 < len(messages):
            second = messages[index + 1]
            # Only a pair ending in an assistant message can be a split turn; most pairs are not.
            if type(second) is dict and second.get("role") == "assistant":
                if _is_split_pair(messages[index], second, cache):
                    messages[index : index + 2] = [_merge(messages[index], second)]
                    actions.append(RepairAction(kind="merged", location=f"messages[{index}]", index=index))
            index += 1
        read_back = _turns_read_back(dialect, context, doc, messages)
        think = dialect is not None and dialect.think_in_content
        for index, message in enumerate(messages):
            if type(message) is not dict or message.get("role") != "assistant":
                continue
            calls = message.get("tool_calls")
            if type(calls) is not list or not calls:
                continue
            location = f"messages[{index}]"
            if message.get("content") == []:
                message["content"] = None
                actions.append(RepairAction("content_null", location, index))
            hits = [(call, cache.call(*_call_parts(call))) for call in calls if type(call) is dict]
            # Where the provider discards a turn's reasoning, nothing is put back on it.
            if read_back is None or index in read_back:
                if restored := _restore_message(index, location, message, hits, think=think):
                    actions.append(restored)
            if any(hit is not None and (hit.call.fields or hit.call.aliases) for _, hit in hits):
                actions.extend(_restore_calls(index, messages, hits))
        return actions

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        messages = doc.get("messages") if isinstance(doc, dict) else None
        return check_messages(messages, context, doc) if isinstance(messages, list) else []

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        message = item_at(doc, self.items_key, index)
        return [_call_parts(call) for call in _tool_calls(message)] if _is_assistant(message) else []

    # The repair sends no placeholder for a signature nothing was cached for.
    signature_placeholder = False

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        if position is not None:  # Gemini's count of its contents, passed on by Copilot or OpenRouter
            return block_to_message(items, position)
        return index if index is not None and 0 <= index < len(items) else None


def block_to_message(messages: list[Any], position: int) -> int | None:
    """The chat message behind the N-th (1-based) content block Gemini was sent, as Copilot and OpenRouter turn a
    chat request into Gemini's contents: system messages go elsewhere and consecutive tool results merge into one
    block."""
    block = 0
    previous = None
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "system":
            continue
        if not (role == "tool" and previous == "tool"):
            block += 1
        previous = role
        if block == position:
            return index
    return None


def _current_turn(messages: list[Any]) -> list[int]:
    """Indexes of the assistant tool-call messages after the last user message."""
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), default=-1)
    return [
        i for i in range(last_user + 1, len(messages)) if _is_assistant(messages[i]) and _has_tool_calls(messages[i])
    ]


def _turns_read_back(dialect: Dialect | None, context: RepairContext, doc: Any, messages: list[Any]) -> set[int] | None:
    """The indexes of the messages whose reasoning the provider reads, when it reads only some (None: all)."""
    if dialect is None or dialect.reads_back(context.path, doc) == "all":
        return None
    return set(_current_turn(messages))


def refused_field_violations(messages: list[Any], context: RepairContext) -> list[Violation]:
    """The fields of assistant messages that the provider serving the request refuses the whole request for (another
    provider's reasoning field sent to Mistral)."""
    dialect = dialects.serving(context.host, context.path, context.model or "")
    refused = dialect.refused_message_fields(context.model or "") if dialect is not None else frozenset()
    if not refused or dialect is None:
        return []
    return [
        Violation(
            rule=MESSAGE_FIELD_NOT_PERMITTED,
            location=f"messages[{index}]",
            message=f"{name} on an assistant message, which {dialect.name} does not take",
        )
        for index, message in enumerate(messages)
        if _is_assistant(message)
        for name in message
        if name in refused
    ]


def check_messages(messages: list[Any], context: RepairContext, doc: Any = None) -> list[Violation]:
    """The rules a chat request's messages break; `doc` is the whole request, whose options (thinking turned off,
    say) may change what its model requires."""
    violations = refused_field_violations(messages, context)
    model = context.model or ""
    required = dialects.requires_reasoning_content(model, doc)
    called: set[str] = set()
    for index, message in enumerate(messages):
        location = f"messages[{index}]"
        if isinstance(message, dict) and message.get("role") == "tool":
            if message.get("tool_call_id") not in called:
                violations.append(
                    Violation(
                        rule=TOOL_RESULT_ORPHANED,
                        location=location,
                        message="tool result answers no tool call of an earlier assistant message",
                        tool_call_id=message.get("tool_call_id"),
                    )
                )
            continue
        if not (_is_assistant(message) and _has_tool_calls(message)):
            continue
        called.update(str(call.get("id")) for call in _tool_calls(message))
        if message.get("content") == []:
            text = "content is an empty array (Copilot: invalid request body; the API wants null or text)"
            violations.append(Violation(rule=CONTENT_EMPTY_ARRAY, location=location, message=text))
        if required and message.get("reasoning_content") is None:
            text = "assistant tool-call message without reasoning_content (required in thinking mode)"
            violations.append(Violation(rule=REASONING_CONTENT_MISSING, location=location, message=text))
    rule = dialects.chat_signature(context.host, context.path, model)
    for index in _current_turn(messages) if rule else []:
        message = messages[index]
        calls = _tool_calls(message)
        if not calls:  # tool_calls holds no call object at all
            continue
        first = calls[0]
        present = (
            call_field(first, "extra_content") is not None
            if rule.field == "extra_content"
            else not is_missing(rule.field, message.get(rule.field))
        )
        if not present:
            violations.append(
                Violation(
                    rule=rule.rule,
                    location=f"messages[{index}]",
                    message=f"current-turn function call without its thought signature ({rule.field} missing)",
                    tool_call_id=first.get("id"),
                )
            )
    return violations


def _restore_message(
    index: int,
    location: str,
    message: dict[str, Any],
    hits: list[tuple[dict[str, Any], CallHit | None]],
    *,
    think: bool = False,
) -> RepairAction | None:
    """The turn's state back on the message, from the first of its calls found in the cache; with `think`, its
    `<think>` block back at the start of its content."""
    for call, hit in hits:
        if hit is not None:
            break
    else:
        return None
    fields = hit.record.fields
    restored = [name for name in fields if name != THINK_FIELD and message_lacks(message, name)]
    for name in restored:
        put_back(message, name, fields[name])
    block = fields.get(THINK_FIELD) if think else None
    if isinstance(block, str) and put_back_think(message, block):
        restored.append(THINK_FIELD)
    if not restored:
        return None
    sent_id = call.get("id")
    return RepairAction(
        "restored",
        location,
        index,
        restored,
        tool_call_id=(sent_id if isinstance(sent_id, str) else None) or hit.call.id or None,
        response_id=hit.record.response_id,
        via=hit.via,
    )


def _restore_calls(
    index: int, messages: list[Any], hits: list[tuple[dict[str, Any], CallHit | None]]
) -> list[RepairAction]:
    """State carried on each call back on that call, and LiteLLM ids made whole again."""
    actions = []
    for position, (call, hit) in enumerate(hits):
        if hit is None or not (hit.call.fields or hit.call.aliases):
            continue
        location = f"messages[{index}].tool_calls[{position}]"
        restored = [name for name, value in hit.call.fields.items() if call_field(call, name) is None]
        for name in restored:
            set_call_field(call, name, hit.call.fields[name])
        common = {"location": location, "index": index, "response_id": hit.record.response_id, "via": hit.via}
        if restored:
            sent = call.get("id") or hit.call.id or None
            actions.append(RepairAction(kind="restored", fields=restored, tool_call_id=sent, **common))
        sent_id = call.get("id")
        if isinstance(sent_id, str) and _stripped_litellm_id(sent_id, hit.call.id):
            call["id"] = hit.call.id
            _rename_tool_results(messages, index, sent_id, hit.call.id)
            actions.append(RepairAction(kind="id_restored", fields=[sent_id], tool_call_id=hit.call.id, **common))
    return actions


def _stripped_litellm_id(sent: str, captured: str) -> bool:
    """Whether the client sent a LiteLLM id without (or with a cut-off) signature suffix."""
    short = litellm_short_id(captured)
    return short is not None and sent != captured and sent.startswith(short) and captured.startswith(sent)


def _rename_tool_results(messages: list[Any], after: int, old: str, new: str) -> None:
    for message in messages[after + 1 :]:
        if isinstance(message, dict) and message.get("role") == "tool" and message.get("tool_call_id") == old:
            message["tool_call_id"] = new
