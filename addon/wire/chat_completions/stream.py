"""One chat completion assembled from its stream's deltas (or its whole body's messages): its choices, each one's
reasoning fields, `<think>` block or Mistral thinking chunks, and tool calls by index. `fields.py` says how each kind
of reasoning state is gathered; this puts them together, once, for both readers of an answer:

* the capture (reader.py) keeps an answer's reasoning state, within its Budget, and turns each choice into a
  ReasoningRecord. Answer text is not kept (`keep_text=False`): the content deltas, the bulk of a stream, are
  mostly never parsed, and those that are read only for a leading `<think>` block (MiniMax's reasoning);
* the transcript (transcript.py) shows the whole answer to people, within its AnswerLimits, and turns each choice
  into a Message. Answer text is kept (`keep_text=True`): the content, Mistral's text chunks, and OpenRouter's
  `reasoning`, the readable copy of its `reasoning_details`; a `<think>` block is left in the content, where the
  transcript finds it as in a request's message.

What each may hold, and what happens past it, is its `Keep` (keep.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...shared import jsoncodec
from ..assembly import text_of
from .fields import (
    CALL_FIELDS,
    DETAILS_FIELD,
    TEXT_FIELDS,
    THINK_FIELD,
    THINKING_FIELD,
    WHOLE_FIELDS,
    DetailAssembler,
    ThinkBlock,
    ThinkingChunks,
    call_field,
)
from .keep import Keep, Text

# OpenRouter's readable copy of its `reasoning_details`: shown, never stored (the details are).
SHOWN_FIELD = "reasoning"
CONTENT = "content"
_KEPT = frozenset({*TEXT_FIELDS, *WHOLE_FIELDS, DETAILS_FIELD, "tool_calls", CONTENT})
_KEPT_WITH_TEXT = _KEPT | {SHOWN_FIELD}
_TEXTS = frozenset({*TEXT_FIELDS, SHOWN_FIELD})
_NOTHING: dict[str, Any] = {}  # what a choice without a delta adds (never written to)


@dataclass(slots=True)
class ToolCallSlot:
    arguments: Text
    id: str = ""  # the first id sent
    name: str = ""  # the first name sent
    fields: dict[str, Any] = field(default_factory=dict)  # CALL_FIELDS, the last value of each


@dataclass(slots=True)
class Choice:
    keep: Keep  # the stream's, shared by its choices
    keep_text: bool
    streamed: bool  # read from stream deltas, not from a whole message
    texts: dict[str, Text] = field(default_factory=dict)  # TEXT_FIELDS; with text kept, the content and `reasoning`
    whole: dict[str, Any] = field(default_factory=dict)
    details: DetailAssembler | None = None
    chunks: ThinkingChunks | None = None  # Mistral's thinking chunks, from content arrays
    calls: dict[int, ToolCallSlot] = field(default_factory=dict)
    # calls that came without an index: where each id went, and the call a bare fragment continues
    call_ids: dict[str, int] = field(default_factory=dict)
    last_call: int = -1
    # The content's leading `<think>` block, while it is read (None before any content text, and when not looked for)
    think: ThinkBlock | None = None
    content_seen: bool = False  # content text came: a block can only be at its start
    kept: frozenset[str] = field(init=False)  # the names of a delta that matter

    def __post_init__(self) -> None:
        self.kept = _KEPT_WITH_TEXT if self.keep_text else _KEPT

    @property
    def think_open(self) -> bool:
        """Whether the content read so far may still be, or be in, a leading `<think>` block."""
        return self.think is not None and self.think.open

    def add(self, part: dict[str, Any], think: bool = False) -> None:
        """Adds one delta (or message); `think`: without text kept, its content is read for a leading `<think>`
        block (only where the reader saw every piece of the content before it)."""
        # Most deltas hold one or two keys: visit the kept ones present, in the provider's order.
        for name, value in part.items():
            if name not in self.kept:
                continue
            if name == CONTENT:
                # Answer text comes as a string, read for a leading <think> block (MiniMax) when not kept; an array
                # may hold Mistral's thinking chunks.
                if isinstance(value, list):
                    if self.chunks is None:
                        self.chunks = ThinkingChunks(self.keep, streamed=self.streamed)
                    self.chunks.add(value)
                    if self.keep_text:
                        self._text_chunks(value)
                elif think:  # never with text kept
                    if isinstance(value, str) and value:
                        self._content(value)
                elif self.keep_text and isinstance(value, str):
                    self._text(CONTENT, value)
            elif name in _TEXTS:
                if isinstance(value, str):  # `_text`, inlined: most chunks the capture parses come this way
                    text = self.texts.get(name)
                    if text is None:
                        text = self.texts[name] = self.keep.text(name)
                    text.append(value)
            elif name in WHOLE_FIELDS:
                if value is not None and self.keep.value(name, value):
                    self.whole[name] = value
            elif name == DETAILS_FIELD:
                if isinstance(value, list):
                    if self.details is None:
                        self.details = DetailAssembler(self.keep)
                    self.details.add(value)
            elif isinstance(value, list):  # tool_calls
                for call in value:
                    if isinstance(call, dict):
                        self._add_call(call)

    def _text(self, name: str, value: str) -> None:
        texts = self.texts.get(name)
        if texts is None:
            texts = self.texts[name] = self.keep.text(name)
        texts.append(value)

    def _text_chunks(self, content: list[Any]) -> None:
        """The text chunks of a content array (Mistral's), as answer text."""
        for chunk in content:
            if isinstance(chunk, dict) and chunk.get("type") == "text":
                self._text(CONTENT, text_of(chunk.get("text")))

    def _content(self, text: str) -> None:
        if self.think is None:
            if self.content_seen:
                return
            self.think = ThinkBlock(self.keep.text(THINK_FIELD))
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
            if not self.keep.call(len(self.calls)):
                return
            slot = self.calls[index] = ToolCallSlot(self.keep.text("tool call arguments"))
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
            if value is not None and self.keep.value(name, value):
                slot.fields[name] = value

    def fields(self) -> dict[str, Any]:
        """The choice's reasoning state, as a record keeps it."""
        fields: dict[str, Any] = {
            name: jsoncodec.join_text(parts.pieces)
            for name, parts in self.texts.items()
            if parts.pieces and name in TEXT_FIELDS
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


class ChatStream:
    """One chat completion, its choices by their index, as its chunks (or its whole body) come; `response_id` and
    `response_model` are the first the chunks name.

    With `keep_text` off, a chunk fed with `think` has its content read for a leading `<think>` block, and the
    stream counts the choices whose block may still be open (`open_blocks`) and those whose content began
    (`content_begun`), for a reader to know where the content stands without looking at every choice. With it on,
    every choice is kept, one without a delta too, and `finish` is the last `finish_reason` a choice gave.
    """

    __slots__ = (
        "choices",
        "content_begun",
        "finish",
        "keep",
        "keep_text",
        "open_blocks",
        "response_id",
        "response_model",
    )

    def __init__(self, keep: Keep, *, keep_text: bool = False) -> None:
        self.keep = keep
        self.keep_text = keep_text
        self.response_id: str | None = None
        self.response_model: str | None = None
        self.choices: dict[int, Choice] = {}
        self.open_blocks = 0
        self.content_begun = 0
        self.finish: str | None = None

    def feed(self, doc: Any, part_key: str = "delta", think: bool = False) -> None:
        """Adds one chunk (`part_key` "delta"), or a whole body ("message")."""
        if type(doc) is not dict:
            return
        if self.response_id is None and isinstance(doc.get("id"), str):
            self.response_id = doc["id"]
        if self.response_model is None and isinstance(doc.get("model"), str):
            self.response_model = doc["model"]
        choices = doc.get("choices")
        if type(choices) is not list:
            return
        states = self.choices
        keep_text = self.keep_text
        for position, choice in enumerate(choices):
            if type(choice) is not dict:
                continue
            part = choice.get(part_key)
            if type(part) is not dict:
                if not keep_text:
                    continue
                part = _NOTHING
            index = choice.get("index")
            key = index if type(index) is int else position
            state = states.get(key)
            if state is None:
                if not self.keep.choice(len(states)):
                    if self.keep.stops:
                        return
                    continue
                state = states[key] = Choice(self.keep, keep_text, streamed=part_key == "delta")
            if keep_text:
                finish = choice.get("finish_reason")
                if isinstance(finish, str):
                    self.finish = finish
            if not think:
                state.add(part)
                continue
            was_open, had_content = state.think_open, state.content_seen
            state.add(part, think)
            self.open_blocks += state.think_open - was_open
            self.content_begun += state.content_seen - had_content
