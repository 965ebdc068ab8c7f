"""A conversation as a person reads it, whatever wire format carried it.

Every wire format's transcriber turns a request body into a `Conversation` and an answer (a JSON body or an event
stream) into an `Answer`; the content view, the diffs and the HTML report read only these. Dataclasses rather than
models: a report reads hundreds of thousands of messages, all built by this code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..shared.limits import short_digest

PartKind = Literal["text", "reasoning", "opaque", "tool_call", "tool_result", "media", "other"]
# What a comparison found: restored and removed by the proxy, merged from split messages, dropped by the client
# since the previous turn, new since the previous turn.
Mark = Literal["restored", "removed", "merged", "dropped", "new"]


def digest(value: str) -> str:
    """A short hash that tells two opaque values apart without showing either (the event log's, too)."""
    return short_digest(value)


@dataclass(slots=True)
class Part:
    """One piece of a message: text, reasoning, a tool call or result, or an opaque value."""

    kind: PartKind
    text: str = ""  # the text; a tool call's arguments as JSON text; a tool result's content as text
    field: str = ""  # the wire field it came from ("reasoning_opaque", "signature", "encrypted_content", ...)
    call_id: str | None = None  # tool calls and results; the call an opaque value belongs to
    name: str | None = None  # a tool call's function; a media part's type
    value: str | None = None  # an opaque value, whole: shown only when asked for
    mark: Mark | None = None
    # An opaque value known only by its length and hash, as the event log keeps it.
    known_length: int | None = None
    known_digest: str | None = None

    @classmethod
    def opaque(cls, field: str, value: Any, call_id: str | None = None) -> Part:
        text = value if isinstance(value, str) else repr(value)
        return cls("opaque", field=field, call_id=call_id, value=text)

    @property
    def length(self) -> int:
        if self.value is None and self.known_length is not None:
            return self.known_length
        return len(self.value) if self.value is not None else len(self.text)

    @property
    def digest(self) -> str:
        if self.value is None and self.known_digest is not None:
            return self.known_digest
        return digest(self.value if self.value is not None else self.text)

    def key(self) -> tuple[Any, ...]:
        """What identifies the part when two versions of a conversation are compared (its mark aside)."""
        if self.kind == "opaque":
            return ("opaque", self.field, self.call_id, self.digest)
        return (self.kind, self.field, self.call_id, self.name, hash(self.text))


_KEYED_KINDS = frozenset({"text", "tool_call", "tool_result", "media"})


@dataclass(slots=True)
class Message:
    """A message (chat, Anthropic, Bedrock), an input item (Responses) or a content (Gemini)."""

    role: str  # "system", "user", "assistant", "tool", or an item's type ("reasoning", "function_call", ...)
    parts: list[Part] = field(default_factory=list)
    where: str = ""  # its place in the body, as a diagnosis names it: "messages[3]", "input[5]", "system"
    mark: Mark | None = None
    note: str = ""  # what a comparison adds: "merged from messages[3], messages[4]"
    _key: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)

    def call_ids(self) -> tuple[str, ...]:
        return tuple(p.call_id for p in self.parts if p.call_id and p.kind in ("tool_call", "tool_result"))

    def key(self) -> tuple[Any, ...]:
        """What pairs two versions of the same message: its role and tool calls, else its role and text.

        Reasoning is left out, since what a comparison looks for is reasoning one version lacks. Computed once: a
        message is compared on every turn that sends it again, and never changed once read."""
        if self._key is None:
            calls = self.call_ids()
            # Calls without ids (Gemini's) count by their name and arguments.
            shown = tuple((p.kind, p.name, p.text) for p in self.parts if p.kind in _KEYED_KINDS)
            self._key = (self.role, calls) if calls else (self.role, hash(shown))
        return self._key


@dataclass(slots=True)
class Usage:
    """Token counts as the provider reported them; None where it reported none."""

    input: int | None = None
    output: int | None = None
    reasoning: int | None = None  # part of output
    cache_read: int | None = None  # part of input, or beside it (Anthropic)
    cache_write: int | None = None
    total: int | None = None
    # Whether `input` counts the cached tokens too (OpenAI, Gemini), or they come beside it (Anthropic, Bedrock).
    cache_in_input: bool = True

    def __bool__(self) -> bool:
        values = (self.input, self.output, self.reasoning, self.cache_read, self.cache_write, self.total)
        return any(v is not None for v in values)

    def counts(self) -> tuple[tuple[str, int | None], ...]:
        """The counts by kind, input with its cached tokens: what the metrics and the traces report."""
        return (
            ("input", self.all_input),
            ("output", self.output),
            ("reasoning", self.reasoning),
            ("cache_read", self.cache_read),
            ("cache_write", self.cache_write),
        )

    @property
    def all_input(self) -> int | None:
        """Every input token, cached or not (what OpenTelemetry's `gen_ai.usage.input_tokens` counts)."""
        if self.input is None or self.cache_in_input:
            return self.input
        return self.input + (self.cache_read or 0) + (self.cache_write or 0)


@dataclass(slots=True)
class Conversation:
    """What a request asks: its model and its messages in order, the system prompt first when it has one."""

    wire_format: str
    model: str | None = None
    messages: list[Message] = field(default_factory=list)
    stream: bool = False
    tools: list[str] = field(default_factory=list)  # the names of the tools it declares
    settings: dict[str, Any] = field(default_factory=dict)  # reasoning settings as sent ("reasoning_effort": "high")


@dataclass(slots=True)
class Answer:
    """What came back: the assistant's messages (one per choice or candidate), usage, why it stopped."""

    messages: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    id: str | None = None  # the provider's id of the answer (chatcmpl-…, msg_…, resp_…, Gemini's responseId)
    finish: str | None = None
    streamed: bool = False
    events: int = 0  # stream events read
    unreadable: int = 0  # stream events that held no JSON
    problem: str | None = None  # why the answer could not be read, if it could not

    def parts(self) -> list[Part]:
        return [part for message in self.messages for part in message.parts]


Link = tuple[str, str]  # ("call", a tool call id) or ("text", the hash of an assistant's text)


def message_links(message: Message) -> list[Link]:
    """What ties a message to the turn that said it: each tool call it holds (by id), and an assistant's text. Two
    turns belong to one conversation when the later one's history holds a link the earlier one's answer made: the
    chain an agent's tool loop leaves, and a chat's history too (the HTML report and the traces both follow it)."""
    links = [("call", part.call_id) for part in message.parts if part.kind == "tool_call" and part.call_id]
    if message.role in ("assistant", "model"):
        text = "".join(p.text for p in message.parts if p.kind == "text")
        if text.strip():
            links.append(("text", str(hash(text))))
    return links
