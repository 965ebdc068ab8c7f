"""What the proxy remembers about a response and what it changes in a request."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .limits import MAX_MEMO_BYTES, MEMO_ENTRIES, MEMO_KEY_CHARS


def canonical_arguments(arguments: Any) -> str:
    """Tool call arguments in one spelling, whether sent as a JSON string or as an object."""
    if isinstance(arguments, str):
        return _canonical_text(arguments)
    return _canonical_value(arguments)


def _canonical_text(arguments: str) -> str:
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(arguments)
        except ValueError:
            return arguments
    return _canonical_value(value)


def _as_read(value: Any) -> Any:
    """A number a request keeps as written (jsoncodec.ExactNumber), as an answer's parse reads it: a float."""
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return float(text)
    raise TypeError


def _canonical_value(value: Any) -> str:
    try:
        return orjson.dumps(value, default=_as_read, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        try:
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            return repr(value)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def arguments_digest(arguments: Any) -> str:
    """A tool call's arguments as the cache keeps them: a hash of their canonical spelling, never the text, which
    is the user's data and may hold anything (a key pasted into a shell command, say)."""
    text = canonical_arguments(arguments)
    # Arguments sent as objects (Anthropic, Gemini, Bedrock) are spelled anew every turn, and hashed again.
    return _remembered_digest(text) if len(text) <= MEMO_KEY_CHARS else _sha256(text)


def call_fingerprint(model: str | None, name: str, arguments: Any) -> str:
    """The second cache key of a tool call: its model, function name and canonical arguments.

    Clients that rewrite tool call ids still send the same function and arguments back.
    """
    if not isinstance(arguments, str):
        return fingerprint_of(model, name, arguments_digest(arguments))
    # As chat and Responses send them: a long history asks about each call every turn, so the answers are remembered.
    if len(arguments) + len(name) + len(model or "") <= MEMO_KEY_CHARS:
        return _remembered_call_fingerprint(model, name, arguments)
    return _remembered_long_call_fingerprint(model, name, arguments)


def _text_call_fingerprint(model: str | None, name: str, arguments: str) -> str:
    return fingerprint_of(model, name, arguments_digest(arguments))


def fingerprint_of(model: str | None, name: str, digest: str) -> str:
    """`call_fingerprint` of a call whose arguments are known by their digest."""
    if len(name) + len(model or "") + len(digest) <= MEMO_KEY_CHARS:
        return _remembered_fingerprint(model, name, digest)
    return _fingerprint_of(model, name, digest)


def _fingerprint_of(model: str | None, name: str, digest: str) -> str:
    return FINGERPRINT_PREFIX + _sha256("\0".join((model or "", name, digest)))


class TextMemo:
    """A function's answers for the texts it was asked about, the least recently asked forgotten first once the texts
    and answers kept hold more than `most_bytes`: for texts a client makes as long as it likes (tool call arguments
    of a file an agent writes), which a memo bounded by its count would hold without bound. A text that would take a
    sixteenth of it on its own is not kept."""

    __slots__ = ("_function", "_answers", "_most_bytes", "_bytes")

    def __init__(self, function: Callable[..., str], most_bytes: int) -> None:
        self._function = function
        self._answers: OrderedDict[tuple[str | None, ...], str] = OrderedDict()
        self._most_bytes = most_bytes
        self._bytes = 0

    def __call__(self, *key: str | None) -> str:
        answers = self._answers
        answer = answers.get(key)
        if answer is not None:
            answers.move_to_end(key)
            return answer
        answer = self._function(*key)
        size = _memo_entry_size(key, answer)
        if size <= self._most_bytes // 16:
            answers[key] = answer
            self._bytes += size
            while self._bytes > self._most_bytes:
                self._bytes -= _memo_entry_size(*answers.popitem(last=False))
        return answer

    @property
    def size(self) -> int:
        """The bytes its texts and answers hold."""
        return self._bytes

    def clear(self) -> None:
        self._answers.clear()
        self._bytes = 0


def _memo_entry_size(key: tuple[str | None, ...], answer: str) -> int:
    """The bytes a memo's entry holds: its texts (CPython's own sizes, which count each character as stored), its
    answer, and the tuple, table slot and links that hold them."""
    return _MEMO_ENTRY_BYTES + sum(map(sys.getsizeof, key)) + sys.getsizeof(answer)


_MEMO_ENTRY_BYTES = 256
# Calls and digests of usual size, by count (MEMO_KEY_CHARS characters at most in a key, MEMO_ENTRIES of them): the
# C memo is the fastest there is, and a request of a long history asks it once per call. Longer calls by the bytes
# they hold; longer digests not at all (hashing costs what a memo's lookup would: the hash of the text).
_remembered_call_fingerprint = lru_cache(maxsize=MEMO_ENTRIES)(_text_call_fingerprint)
_remembered_long_call_fingerprint = TextMemo(_text_call_fingerprint, MAX_MEMO_BYTES)
_remembered_fingerprint = lru_cache(maxsize=MEMO_ENTRIES)(_fingerprint_of)
_remembered_digest = lru_cache(maxsize=MEMO_ENTRIES)(_sha256)


FINGERPRINT_PREFIX = "fp:"
# Keys made from what a request holds (a call's name and arguments, an answer's text) rather than from an id the
# provider issued: anyone can send the same, so they are only used where callers can be told apart.
CONTENT_KEY_PREFIXES = (FINGERPRINT_PREFIX, "gemini-text:")


def is_content_key(key: str) -> bool:
    return key.startswith(CONTENT_KEY_PREFIXES)


# LiteLLM appends a Gemini thought signature to tool call ids: call_<hex>__thought__<signature>.
SIGNATURE_IN_ID = "__thought__"


def split_call_id(call_id: str) -> tuple[str, str | None]:
    """A tool call id without LiteLLM's signature suffix, and the signature (None when there is none)."""
    short, mark, signature = call_id.partition(SIGNATURE_IN_ID)
    return (short, signature) if mark else (call_id, None)


def display_call_id(call_id: str) -> str:
    """A tool call id fit for logs: a signature carried inside it is shortened, not printed."""
    short, signature = split_call_id(call_id)
    if signature is None:
        return call_id
    return f"{short}{SIGNATURE_IN_ID}<{len(signature)}-char signature>"


class ToolCallRef(BaseModel):
    """One tool call of a captured turn, and any reasoning state carried on the call itself."""

    model_config = ConfigDict(frozen=True)

    id: str = ""
    name: str = ""
    # `arguments_digest` of the arguments, given as `arguments=` (a JSON string, or an object) when made
    arguments_sha256: str = Field(default_factory=lambda: arguments_digest(""))
    # other ids the call is known by (a Responses fc_ id, a LiteLLM short id)
    aliases: list[str] = Field(default_factory=list)
    # state on the call itself (Gemini thoughtSignature, extra_content, ...)
    fields: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _keep_only_a_digest(cls, data: Any) -> Any:
        if isinstance(data, dict) and "arguments" in data:
            data = dict(data)
            data["arguments_sha256"] = arguments_digest(data.pop("arguments"))
        return data


class ReasoningRecord(BaseModel):
    """The reasoning state of one assistant turn, as the provider sent it.

    `fields` holds state that belongs to the turn (the provider's own keys and
    values, to be put back verbatim); state that belongs to one tool call lives
    on that call. The cache stores the record under every key of `keys()`.
    """

    model_config = ConfigDict(frozen=True)

    wire_format: str
    fields: dict[str, Any] = Field(default_factory=dict)
    tool_calls: list[ToolCallRef] = Field(default_factory=list)
    # keys not tied to a tool call (a Responses msg_ id, a text part's hash)
    extra_keys: list[str] = Field(default_factory=list)
    response_id: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    complete: bool = True
    captured_at: float = 0.0

    @property
    def tool_call_ids(self) -> list[str]:
        return [call.id for call in self.tool_calls if call.id]

    @property
    def has_state(self) -> bool:
        return bool(self.fields) or any(call.fields for call in self.tool_calls) or bool(self.extra_keys)

    def keys(self) -> list[str]:
        keys: list[str] = []
        for call in self.tool_calls:
            keys += [key for key in (call.id, *call.aliases) if key]
            if call.name:
                keys.append(fingerprint_of(self.request_model, call.name, call.arguments_sha256))
        keys += self.extra_keys
        return list(dict.fromkeys(keys))

    def find_call(self, key: str) -> ToolCallRef | None:
        for call in self.tool_calls:
            if key and (key == call.id or key in call.aliases):
                return call
        if key.startswith(FINGERPRINT_PREFIX):
            for call in self.tool_calls:
                if call.name and key == fingerprint_of(self.request_model, call.name, call.arguments_sha256):
                    return call
        return None


RepairKind = Literal[
    "restored",
    "content_null",
    "merged",
    "inserted",
    "removed",
    "placeholder",
    "id_restored",
    "foreign_removed",
    "recovered",
]


@dataclass(slots=True)
class RepairAction:
    """One change made to a request body, precise enough to log and to explain.

    `location` names the place in the repaired body ("messages[1]", "input[2]",
    "contents[1].parts[0]"); `index` is the position in the body's top-level list.
    A dataclass rather than a model: a long history makes hundreds per request, all
    built by this code; pydantic still validates and serialises it inside `Repaired`.
    """

    kind: RepairKind
    location: str
    index: int
    fields: list[str] = field(default_factory=list)
    tool_call_id: str | None = None
    response_id: str | None = None
    via: Literal["id", "fingerprint"] | None = None
    degraded: bool = False
    reason: str | None = None  # why a value was removed (foreign_removed: who issued it; recovered: the form sent)
    rule: str | None = None  # recovered: the provider rule the request would have broken (a diagnosis rule id)

    def describe(self) -> str:
        call = (
            f" (tool call {self.tool_call_id}{', matched by name and arguments' if self.via == 'fingerprint' else ''})"
        )
        call = call if self.tool_call_id else ""
        what = ", ".join(display_call_id(name) for name in self.fields)
        if self.kind == "restored":
            return f"restored {what} on {self.location}{call}"
        if self.kind == "content_null":
            return f"content [] -> null on {self.location}"
        if self.kind == "merged":
            return f"merged split assistant messages into {self.location}"
        if self.kind == "inserted":
            return f"inserted {what} before {self.location}{call}"
        if self.kind == "removed":
            return f"removed {what} at {self.location}: {self.reason or 'nothing follows it'}"
        if self.kind == "foreign_removed":
            return f"removed {what} at {self.location}{call}: {self.reason or 'issued elsewhere'}"
        if self.kind == "recovered":
            return f"{self.reason or 'recovered'} at {self.location}{call}: nothing to put back (degraded)"
        if self.kind == "placeholder":
            return f"sent placeholder {what} on {self.location}{call}: nothing cached (degraded)"
        return f"restored full tool call id on {self.location} and its tool results{call}"


_PLACE_INDEX = re.compile(r"^\w+\[(\d+)\]")


def place_index(location: str | None) -> int | None:
    """The index in a body's top-level list that a place names ("messages[3].content[0]": 3); None for another
    shape."""
    at = _PLACE_INDEX.match(location or "")
    return int(at.group(1)) if at else None


class Violation(BaseModel):
    """A provider rule a request breaks, found without sending it."""

    rule: str  # the same ids as the diagnosis of a provider's error where there is one
    location: str
    message: str
    tool_call_id: str | None = None

    def describe(self) -> str:
        call = f" (tool call {display_call_id(self.tool_call_id)})" if self.tool_call_id else ""
        return f"{self.location}: {self.message}{call}"


def recovered_places(actions: list[RepairAction]) -> list[str]:
    """What a recovery removed or turned off, by place, as the `recovered` event and the flow's entry list it
    ("messages[3].content[0]: thinking")."""
    return [f"{a.location}: {', '.join(a.fields)}" for a in actions if a.kind == "recovered"]


def summarize_actions(actions: list[RepairAction], *, detail: int = 6) -> str:
    """The repairs of one request for a person: each described, or grouped when there are many."""
    return ActionTally(detail).add(actions).describe()


class ActionTally:
    """What `summarize_actions` says of a list of repairs, kept so that repairs added to the end (a later turn's)
    cost what they add: the first few, and per kind and fields the count, first and last."""

    __slots__ = ("detail", "first", "count", "by_kind", "groups")

    def __init__(self, detail: int = 6) -> None:
        self.detail = detail
        self.first: list[RepairAction] = []
        self.count = 0
        self.by_kind: dict[str, int] = {}
        self.groups: dict[tuple[str, tuple[str, ...]], list[Any]] = {}  # [count, first, last]

    def add(self, actions: list[RepairAction]) -> ActionTally:
        """This tally with `actions` added at the end (in place: a turn's tally is the next turn's start)."""
        self.first += actions[: self.detail + 1 - len(self.first)]
        self.count += len(actions)
        groups, by_kind = self.groups, self.by_kind
        for action in actions:
            by_kind[action.kind] = by_kind.get(action.kind, 0) + 1
            group = groups.get((action.kind, tuple(action.fields)))
            if group is None:
                groups[(action.kind, tuple(action.fields))] = [1, action, action]
            else:
                group[0] += 1
                group[2] = action
        return self

    def describe(self) -> str:
        if self.count <= self.detail:
            return "; ".join(action.describe() for action in self.first)
        parts = []
        listed = 0
        for count, first, last in self.groups.values():
            if len(parts) == self.detail:  # a Responses history makes one group per reasoning item
                parts.append(f"and {self.count - listed} more")
                break
            listed += count
            if count == 1:
                parts.append(first.describe())
                continue
            grouped = replace(first, tool_call_id=None, location=f"{count} places")
            parts.append(f"{grouped.describe()} ({first.location} … {last.location})")
        return "; ".join(parts)
