"""The interface every wire format implements, and what the proxy hooks hand to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from ..shared import jsoncodec
from ..shared.limits import Budget
from ..shared.records import (
    FINGERPRINT_PREFIX,
    ReasoningRecord,
    RepairAction,
    ToolCallRef,
    Violation,
    call_fingerprint,
    is_content_key,
)
from .sse import SSEEvent

# What a wire format's removal asks: for each value, why it is foreign to the request (absent: it is not, or
# nothing is known about it).
ForeignLookup = Callable[[list[str]], dict[str, str]]
# What an explanation reads the cache with, in the request's scope: the records stored under these keys (it raises
# StoreUnavailable when the cache cannot be asked).
RecordReader = Callable[[list[str]], Mapping[str, ReasoningRecord]]


class SentValue(NamedTuple):
    """A signed or encrypted value a request sends back (or an item that came without the one it needs), where it
    sits, and what the proxy captured for that place: what an error that refuses such a value is judged by."""

    index: int  # of its item in the body's top-level list
    location: str  # "input[3]", "contents[2].parts[0]"
    label: str  # what a person calls what carries it: "reasoning item rs_…", "function call `list_directory`"
    value: str | None  # as sent; None: the item came without it (a reasoning item sent by its id alone)
    captured: str | None  # what the proxy captured for that place; None: nothing
    item_ids: tuple[str, ...] = ()  # the ids an error may name it by (the item's own, its call's)
    call_id: str | None = None  # the tool call it belongs to
    function: str | None = None  # that call's function
    asked: bool = True  # the request asks the provider to return such values (Responses: `include`)


def call_lookup_keys(model: str | None, call_id: str | None, name: str | None, arguments: Any) -> list[str]:
    """Every cache key a tool call in a request can be found under, best first."""
    keys = []
    if call_id:
        keys.append(call_id)
        # A client that truncated or stripped an id suffix (LiteLLM's "__thought__<signature>").
        short = call_id.split("__", 1)[0]
        if short != call_id:
            keys.append(short)
    if name:
        keys.append(call_fingerprint(model, name, arguments))
    return keys


def usable_keys(keys: list[str], *, by_content: bool) -> list[str]:
    """The keys a lookup may use: without `by_content`, only ids the provider issued (no name-and-arguments
    fingerprint, no answer-text hash), for a scope whose callers cannot be told apart."""
    return keys if by_content else [key for key in keys if not is_content_key(key)]


def item_at(doc: Any, key: str, index: int | None) -> dict[str, Any] | None:
    """The object at `index` of a body's top-level list `key`; None when there is no such list, place or object."""
    items = doc.get(key) if isinstance(doc, dict) else None
    if index is None or not isinstance(items, list) or not 0 <= index < len(items):
        return None
    item = items[index]
    return item if isinstance(item, dict) else None


class CallHit(NamedTuple):  # a tuple: a long history makes hundreds per request
    record: ReasoningRecord
    call: ToolCallRef  # the captured call the request's call matched
    via: Literal["id", "fingerprint"]


@dataclass
class CacheView:
    """The cached records a request can be repaired from.

    Records captured for another model are never handed out: replaying reasoning
    into another model breaks signatures or makes it print raw thinking.
    """

    found: Mapping[str, ReasoningRecord]
    model: str | None
    mismatched: dict[str, str | None] = field(default_factory=dict)  # key -> model the record came from
    used: list[ReasoningRecord] = field(default_factory=list)  # records handed out, for self-healing
    # The ids of captured calls a call with another id of its own was given by name and arguments: a turn read from
    # memory (request/resume.py) checks them against the ids found earlier in the conversation, which it does not look
    # up again.
    by_name: list[str] = field(default_factory=list)
    _used_ids: set[int] = field(default_factory=set)
    _calls: dict[tuple[Any, ...], CallHit | None] = field(default_factory=dict)  # repairs ask about a call repeatedly

    def call(self, call_id: str | None, name: str | None, arguments: Any) -> CallHit | None:
        # Most calls come back with the id they were captured under: one lookup, no fingerprint.
        if call_id and (record := self.record(call_id)) is not None:
            captured = record.find_call(call_id)
            if captured is not None:
                return CallHit(record, captured, "id")
        memo = (call_id, name, arguments if isinstance(arguments, str) else None)
        if memo[2] is not None and memo in self._calls:
            return self._calls[memo]
        hit = None
        if self.found:
            for key in call_lookup_keys(self.model, call_id, name, arguments):
                record = self.record(key)
                captured = record.find_call(key) if record is not None else None
                if captured is None:
                    continue
                by_content = key.startswith(FINGERPRINT_PREFIX)
                # A call with an id of its own, given by name and arguments the record of a call that is in this
                # request under its own id, is another call with the same name and arguments (a later turn whose
                # capture is not in yet), not that one with its id rewritten: that reasoning would be a wrong one,
                # a miss is the provider's own error. A call whose id the client dropped has nothing else to go by
                # (Gemini checks only the current turn's signatures, and the latest capture holds the fingerprint).
                other_call = by_content and call_id and captured.id != call_id
                if other_call and captured.id in self.found:
                    continue
                hit = CallHit(record, captured, "fingerprint" if by_content else "id")
                if other_call:
                    self.by_name.append(captured.id)
                break
        if memo[2] is not None:
            self._calls[memo] = hit
        return hit

    def record(self, key: str) -> ReasoningRecord | None:
        record = self.found.get(key)
        if record is None:
            return None
        # Strictly the same model: a request whose model cannot be known gets only what requests without a
        # known model left, and those are never replayed into a request for a named model.
        if record.request_model != self.model:
            self.mismatched[key] = record.request_model
            return None
        if id(record) not in self._used_ids:
            self._used_ids.add(id(record))
            self.used.append(record)
        return record


@dataclass(frozen=True, slots=True)
class RepairContext:
    """What a repair may need to know beyond the body."""

    path: str
    model: str | None
    host: str = ""
    # Gemini: the llm_signature_placeholder setting ("auto", "off" or a value to send).
    placeholder: str = "off"
    # The betas the request asks for in its `anthropic-beta` header (Anthropic Messages: redacted thinking).
    betas: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ResumeRules:
    """How a format's repair of items added to a remembered request (addon/request/history.py) can be told to do what a
    repair of the whole request would: the items before them are read the same whatever comes after, as long as
    no item opens a new user turn (which ends the current tool loop, and with it what the repair does to the
    loop's messages) and the remembered request ended in the client's input (a tool result or a prompt), so that no
    run of model output continues across the join."""

    opens_turn: Callable[[Any], bool]  # a prompt that starts a new turn
    ends_input: Callable[[Any], bool]  # an item of the client's own (a tool result, a prompt)
    # The ids an item holds that a request may hold only once (a Responses reasoning item's rs_ id: a repair puts
    # one back only where the request lacks it anywhere).
    unique_ids: Callable[[Any], list[str]] = lambda item: []


class ResponseReader(Protocol):
    """Collects the reasoning of one response, from SSE events or from a whole body.

    What it holds goes through its `budget` (addon/shared/limits.py): once a bound is met it keeps nothing more, and
    the answer is not cached.
    """

    budget: Budget
    # Stream events that held no JSON (cut short, or not UTF-8): they reach the client, but what they carried is
    # lost, and the capture says so.
    unreadable: int

    @property
    def markers(self) -> tuple[bytes, ...] | None:
        """Byte strings one of which every SSE event this reader keeps contains, when it knows them: the events of a
        chunk without any are passed over unsplit. None: any event may matter."""
        ...

    def feed_event(self, event: SSEEvent) -> None: ...

    def skippable(self, data: bytes) -> bool:
        """Whether whole SSE events holding these bytes cannot matter, so they need not even be split.

        Most of a stream is answer text; recognising it without parsing keeps capture off the stream's path.
        """
        ...

    def feed_document(self, doc: Any) -> None: ...

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        """The turns read so far; `complete` is False when the stream was cut short."""
        ...


class Routed:
    """How every wire format tells its traffic: a POST on its route (`route`, judged from the path alone, so that
    nothing else is ever decoded) whose body holds its marker."""

    body_marker: bytes
    resume: ResumeRules | None = None  # formats without it read every request whole

    def route(self, path: str) -> bool:
        raise NotImplementedError

    def claims(self, method: str, path: str, body: bytes) -> bool:
        """Whether a request is this format's traffic, judged without parsing the body."""
        return method == "POST" and self.route(path) and self.body_marker in body


class WireFormat(Protocol):
    name: str
    operation: str  # what a trace calls an exchange in this format: "chat", or "generate_content" (Gemini)
    # Fields whose values are human-readable text (logged, cut and masked); all other
    # captured fields are opaque and logged as length plus hash.
    text_fields: frozenset[str]
    # Text fields the provider reads as plain text and does not verify: a credential in one may be stored masked.
    maskable_fields: frozenset[str]

    def route(self, path: str) -> bool:
        """Whether a path is this format's route (a POST there is decoded and looked at)."""
        ...

    def claims(self, method: str, path: str, body: bytes) -> bool:
        """Whether a request is this format's traffic, judged without parsing the body."""
        ...

    def request_model(self, path: str, body: bytes, doc: Any | None) -> str | None:
        """The model a request is for (`doc` is the parsed body when it was parsed)."""
        ...

    def may_need_repair(self, body: bytes) -> bool:
        """False when no repair is possible, judged without parsing the body."""
        ...

    def reader(self) -> ResponseReader: ...

    def lookup_keys(self, doc: Any, model: str | None) -> list[str]:
        """The cache keys a parsed request could be repaired from."""
        ...

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        """Repairs `doc` in place and says what changed; must be idempotent."""
        ...

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        """The provider rules a parsed request breaks, as far as the request alone shows."""
        ...

    # The key of the body's top-level list: what the places of errors, findings and repairs index ("messages[3]").
    items_key: str
    # How a request that adds items to a remembered one is repaired from where that one ended (None: read whole).
    resume: ResumeRules | None

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        """(id, name, arguments) of the tool calls in the top-level item at `index`, read as the repair reads them,
        so that the cache is asked under the same keys; none for another place or shape."""
        ...

    # Keys whose values the provider signed or encrypted (checked when they come back): what provenance keeps.
    signed_fields: frozenset[str]
    # Byte strings one of which a request holding such a value must contain (checked before parsing).
    signed_markers: tuple[bytes, ...]

    def remove_foreign(self, doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
        """Removes from `doc`, in place and as the provider accepts, each signed value that `foreign` says another
        origin issued; returns what was removed and each foreign value that had to stay (the index of its item in
        the body's top-level list, and a note for a person)."""
        ...

    def recover(self, doc: Any, context: RepairContext, refused: list[int] | None) -> list[RepairAction]:
        """Changes `doc` in place to the closest form the provider accepts when the reasoning state it requires
        cannot be put back (llm_recover): first takes out the reasoning state of the top-level items at `refused`
        (None: of every item), for a request the provider refused for it; then, for each rule the format's `check`
        finds the request breaks, sends what the provider documents, or is shown, to accept instead (thinking off
        for this request, an empty reasoning value, an orphaned item removed). Returns what it did, as actions of
        kind "recovered" naming the rule (`RepairAction.rule`) and the form sent (`reason`); none where no accepted
        form is known, and the request is then left as it was."""
        ...

    # What the fixture export replaces by placeholders (addon/offline/fixtures/placeholders.py), found by where it sits.
    # Keys whose string values are opaque reasoning state.
    opaque_keys: frozenset[str]
    # Keys whose lists hold opaque strings.
    opaque_list_keys: frozenset[str]
    # `type` values beside which `data` is opaque.
    opaque_data_types: frozenset[str]

    def opaque_fragments(self, doc: Any, data_types: frozenset[str]) -> list[tuple[tuple[Any, ...], Any]]:
        """The pieces of opaque values one stream event's document carries (values sent whole are none), each
        with the slot the format's reader joins them in; `data` counts beside a type in `data_types`."""
        ...

    # What an explanation of a provider's error asks of the format.
    # Whether the repair sends a placeholder for a signature nothing was cached for (llm_signature_placeholder).
    signature_placeholder: bool

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        """The index in the body's top-level list `items` of the item an error points at, from what its text gives:
        a 0-based `index` into that list, a 1-based content-block `position` (Gemini's count of its contents, which a
        gateway that turns this format into Gemini's passes on) or the `ids` of items or calls; None when what it
        gives names no item here."""
        ...

    def sent_values(self, doc: Any, model: str | None, records: RecordReader) -> list[SentValue]:
        """Each signed or encrypted value the request `doc` sends back for `model`, and each item sent without the
        one it needs, with what the proxy captured for that place (`records` reads the cache): what an error that
        refuses such a value is judged by. Empty for a format whose values are not judged."""
        ...


def event_documents(data: bytes) -> Iterator[Any]:
    """The JSON documents in one SSE event's data.

    Some recorded streams lack the blank line between events, which folds many
    `data:` lines into one event; each line is then a document of its own.
    """
    try:
        yield jsoncodec.loads(data)
        return
    except ValueError:
        if b"\n" not in data:
            return
    for line in data.split(b"\n"):
        try:
            yield jsoncodec.loads(line)
        except ValueError:
            continue


def body_model(body: bytes, doc: Any | None) -> str | None:
    """The top-level "model" of a JSON request body, for formats that carry it there."""
    if doc is None:
        model = jsoncodec.sniff_model(body)
        if model is not None or b'"model"' not in body:
            return model
        # Several "model" keys with different values (one in a tool's schema, say): only a parse can tell.
        try:
            doc = jsoncodec.loads(body)
        except ValueError:
            return None
    model = doc.get("model") if isinstance(doc, dict) else None
    return model if isinstance(model, str) else None


def assistant_blocks(message: Any) -> list[Any] | None:
    """The content block list of an assistant message (Anthropic, Bedrock Converse); None for any other message
    or shape."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    content = message.get("content")
    return content if isinstance(content, list) else None


def user_turn_start(messages: list[Any], holds_tool_result: Callable[[Any], bool]) -> int:
    """Where the current tool loop of a role-tagged message list begins: just after the last user prompt.

    Consecutive user messages count as one (the APIs merge them); a user turn that holds a tool result
    (`holds_tool_result`, in the format's own block names) continues the loop instead of starting a new one.
    """
    start = index = 0
    while index < len(messages):
        if not (isinstance(messages[index], dict) and messages[index].get("role") == "user"):
            index += 1
            continue
        end = index
        while end < len(messages) and isinstance(messages[end], dict) and messages[end].get("role") == "user":
            end += 1
        if not any(holds_tool_result(message) for message in messages[index:end]):
            start = end
        index = end
    return start


@dataclass(frozen=True, slots=True)
class SignedBlocks:
    """How a format whose messages hold `content` block lists names its signed blocks, for `remove_foreign_blocks`."""

    content: Callable[[Any], list[Any] | None]  # the block list of a message that may hold signed blocks
    signed_value: Callable[[Any], str | None]  # the signed or encrypted value of a block, if it has one
    label: Callable[[Any], str]  # what a person calls the block ("thinking", "reasoningContent")
    fields: Callable[[Any], list[str]]  # what a removal action lists
    first_call_id: Callable[[list[Any]], str | None]  # the tool call of a message's content, for the log


def remove_foreign_blocks(
    messages: list[Any], foreign: ForeignLookup, blocks: SignedBlocks, required: Callable[[], dict[int, str]]
) -> tuple[list[RepairAction], list[tuple[int, str]]]:
    """Drops the signed blocks another model, host or account issued, from the end so that positions before stay
    valid. A message in `required` (asked only when there is something foreign: index -> why) keeps its own, and a
    block that is all its message holds stays. Linear in the blocks sent: each message's tool call is read once."""
    sites = [
        (index, position, value)
        for index, message in enumerate(messages)
        for position, block in enumerate(blocks.content(message) or ())
        if (value := blocks.signed_value(block)) is not None
    ]
    why = foreign([value for _, _, value in sites])
    if not why:
        return [], []
    kept_in_place = required()
    actions: list[RepairAction] = []
    kept: list[tuple[int, str]] = []
    call_ids: dict[int, str | None] = {}  # removing signed blocks leaves the tool call blocks as they are
    for index, position, value in reversed(sites):
        reason = why.get(value)
        if reason is None:
            continue
        content = messages[index]["content"]
        block = content[position]
        where = f"{blocks.label(block)} block at messages[{index}].content[{position}] {reason}"
        if index in kept_in_place:
            kept.append((index, f"{where}; left in place: {kept_in_place[index]}"))
            continue
        if len(content) == 1:
            kept.append((index, f"{where}; left: it is all the message holds"))
            continue
        if index not in call_ids:
            call_ids[index] = blocks.first_call_id(content)
        fields = blocks.fields(block)
        del content[position]
        actions.append(
            RepairAction(
                kind="foreign_removed",
                location=f"messages[{index}].content[{position}]",
                index=index,
                fields=fields,
                tool_call_id=call_ids[index],
                reason=reason,
            )
        )
    actions.reverse()
    kept.reverse()
    return actions, kept
