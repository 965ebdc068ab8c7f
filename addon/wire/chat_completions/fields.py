"""The reasoning state that OpenAI-style chat completions carry, and how each kind is gathered.

Providers extend the assistant message (and its tool calls) with fields of
their own; each kind is assembled from stream fragments in its own way:

* text fields are sent in pieces and concatenated: Copilot's `reasoning_text`
  and `reasoning_opaque`, `reasoning_content` of DeepSeek, Kimi and GLM;
* whole fields arrive once and are kept as sent: the older Gemini
  OpenAI-compatible `thought_signature` and `extra_content` on the message;
* OpenRouter's `reasoning_details` is an array whose entries arrive as
  fragments sharing a type and an index (a signature can come last, alone);
* tool calls carry state of their own: the Gemini OpenAI-compatible
  `extra_content.google.thought_signature`, LiteLLM's
  `provider_specific_fields`, and LiteLLM's `call_…__thought__<signature>` ids;
* a `<think>…</think>` block at the start of `content` (MiniMax's reasoning)
  is read from the content's pieces until the answer text after it begins,
  and kept under THINK_FIELD, which no message has: it goes back into `content`;
* Mistral's thinking is no field of its own but chunks of the message's
  `content` array (`ThinkingChunks`), and goes back there.

Provider dialects may add opaque message fields of their own (Qwen's encrypted
thinking, addon/dialects/dashscope.py); they are joined from pieces as text is.
"""

from __future__ import annotations

import copy
from typing import Any

from ... import dialects
from ...shared import jsoncodec
from ...shared.limits import Budget, Parts
from ...shared.records import split_call_id
from .keep import BudgetKeep, Keep, Text

DIALECT_FIELDS = dialects.message_fields()
TEXT_FIELDS = ("reasoning_text", "reasoning_opaque", "reasoning_content", *DIALECT_FIELDS)
WHOLE_FIELDS = ("thought_signature", "extra_content")
DETAILS_FIELD = "reasoning_details"
# Mistral's thinking chunks, as a record keeps them: the `type: thinking` entries of the assistant message's content.
THINKING_FIELD = "thinking"
MESSAGE_FIELDS = (*TEXT_FIELDS, *WHOLE_FIELDS, DETAILS_FIELD)
THINK_FIELD = "<think>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# What every stream chunk that carries one of these fields contains, for chunks to be sorted without parsing them:
# "reasoning" covers the text fields and reasoning_details, "tool_calls" the state on calls, "extra_content" the
# message-level Gemini shape (which carries thought_signature with it), '"thinking"' Mistral's thinking chunks (a
# quote inside answer text is escaped, so answer text never holds it); then the dialects' fields not covered.
STREAM_MARKERS = (
    b"reasoning",
    b"tool_calls",
    b"extra_content",
    b'"thinking"',
    *(name.encode() for name in DIALECT_FIELDS if "reasoning" not in name),
)
# Tool call fields; "function." names a field inside the call's `function` object.
CALL_FIELDS = (
    "extra_content",
    "provider_specific_fields",
    "function.thought_signature",
    "function.provider_specific_fields",
)
_DETAIL_IDENTITY = ("type", "index", "format", "id")


class DetailAssembler:
    """Folds streamed `reasoning_details` fragments into whole entries, in order of appearance, in time linear in
    the fragments: entries are found by their identity and their strings are joined once, at the end.

    Fragments of one entry share `type` and `index` (an encrypted entry and a
    summary can both have index 0); their strings are concatenated, so a text
    split over many chunks and a signature sent last both end up whole. A
    fragment is kept whole or not at all, as its `keep` allows (a Budget of its
    own when none is given).
    """

    def __init__(self, keep: Keep | Budget | None = None) -> None:
        self._keep = keep if keep is not None and not isinstance(keep, Budget) else BudgetKeep(keep)
        self._entries: dict[tuple[Any, Any], dict[str, Any]] = {}
        self._parts: dict[tuple[Any, Any], dict[str, list[str]]] = {}
        self._sizes: dict[tuple[Any, Any], int] = {}  # the size of each entry's strings, for the bound

    def __bool__(self) -> bool:
        return bool(self._entries)

    def add(self, fragments: list[Any]) -> None:
        keep = self._keep
        for fragment in fragments:
            if not isinstance(fragment, dict):
                continue
            identity = (jsoncodec.as_key(fragment.get("type")), jsoncodec.as_key(fragment.get("index")))
            entry = self._entries.get(identity)
            if entry is None and not keep.detail(len(self._entries)):
                continue
            size = keep.measure(fragment)
            if not keep.take(DETAILS_FIELD, size, self._sizes.get(identity, 0)):
                if keep.stops:
                    return
                continue
            self._sizes[identity] = self._sizes.get(identity, 0) + size
            if entry is None:
                self._entries[identity] = dict(fragment)
                self._parts[identity] = {}
                continue
            parts = self._parts[identity]
            for key, value in fragment.items():
                if key in _DETAIL_IDENTITY:
                    if entry.get(key) is None:
                        entry[key] = value
                elif isinstance(value, str) and (key in parts or isinstance(entry.get(key), str)):
                    parts.setdefault(key, [entry[key]] if key not in parts else []).append(value)
                elif value is not None:
                    entry[key] = value
                    parts.pop(key, None)

    def entries(self) -> list[dict[str, Any]]:
        whole = []
        for identity, entry in self._entries.items():
            entry = dict(entry)
            for key, parts in self._parts[identity].items():
                entry[key] = "".join(parts)
            whole.append(entry)
        return whole


class ThinkBlock:
    """The `<think>…</think>` block an answer's content starts with, if it starts with one, read from the content's
    pieces: up to the closing tag and the whitespace after it, where the answer text begins."""

    __slots__ = ("parts", "state", "_head", "_tail")

    def __init__(self, parts: Text | Budget) -> None:
        # The block's text, in the assembly's keeping (a Budget: a text of its own within it).
        self.parts = Parts(THINK_FIELD, parts) if isinstance(parts, Budget) else parts
        self.state = "head"  # head (is it a block?), inside, after (the closing tag seen), done, none (not a block)
        # The content's first non-whitespace text, while too short to tell: a strict prefix of THINK_OPEN, at most 6
        # characters. The whitespace before it is held in `parts`, within the budget, as the block begins with it.
        self._head = ""
        self._tail = ""  # the end of the text inside, where a closing tag split over two pieces begins

    @property
    def open(self) -> bool:
        """Whether more of the content may still belong to the block (or tell whether there is one)."""
        return self.state in ("head", "inside", "after")

    def add(self, text: str) -> None:
        if not text or not self.open:
            return
        start = 0  # where in `text` the closing tag is looked for
        if self.state == "head":
            # Each piece is looked at once: content of whitespace only, however long, costs time linear in it.
            if not self._head:
                stripped = text.lstrip()
                if len(stripped) < len(text):
                    self.parts.append(text[: len(text) - len(stripped)])
                if not stripped:
                    return
                text = stripped
            head, self._head = self._head + text, ""
            if len(head) < len(THINK_OPEN) and THINK_OPEN.startswith(head):
                self._head = head
                return
            if not head.startswith(THINK_OPEN):
                self.state, self.parts.pieces = "none", []
                return
            text, start, self.state = head, len(THINK_OPEN), "inside"
        if self.state == "inside":
            window = self._tail + text[start:]
            at = window.find(THINK_CLOSE)
            if at < 0:
                self.parts.append(text)
                self._tail = window[-(len(THINK_CLOSE) - 1) :]
                return
            end = start + at + len(THINK_CLOSE) - len(self._tail)
            self.parts.append(text[:end])
            text, self.state = text[end:], "after"
        rest = text.lstrip()
        self.parts.append(text[: len(text) - len(rest)])
        if rest:
            self.state = "done"

    def value(self) -> str | None:
        """The block with the whitespace after it, once its closing tag was read."""
        return jsoncodec.join_text(self.parts.pieces) if self.state in ("after", "done") else None


def put_back_think(message: dict[str, Any], block: str) -> bool:
    """Puts a captured `<think>` block back at the start of a message's content, unless the content starts with one;
    whether it did. The block ends with the whitespace that came after it, which replaces any the content begins
    with (a client that strips the block may leave that whitespace, or trim it)."""
    content = message.get("content")
    if content is None or content == "":
        message["content"] = block
    elif isinstance(content, str):
        if content.lstrip().startswith(THINK_OPEN):
            return False
        message["content"] = block + (content.lstrip() if block != block.rstrip() else content)
    elif isinstance(content, list):
        first = content[0] if content else None
        text = first.get("text") if isinstance(first, dict) and first.get("type") == "text" else None
        if isinstance(text, str) and text.lstrip().startswith(THINK_OPEN):
            return False
        content.insert(0, {"type": "text", "text": block})
    else:
        return False
    return True


def is_thinking_chunk(chunk: Any) -> bool:
    return isinstance(chunk, dict) and chunk.get("type") == "thinking"


class ThinkingChunks:
    """Mistral's thinking chunks of one answer, in order (https://docs.mistral.ai/capabilities/reasoning).

    A whole message holds them as they are, and they are kept so. A stream sends
    each as fragments, `{"type": "thinking", "thinking": [{"type": "text",
    "text": "Okay"}]}`, each with the next piece of its text, and closes it with
    one whose `thinking` is empty; the pieces are joined into one text part.
    """

    def __init__(self, keep: Keep, *, streamed: bool) -> None:
        self._keep = keep
        self._streamed = streamed
        self._whole: list[dict[str, Any]] = []
        self._heads: list[dict[str, Any]] = []  # a streamed chunk's keys other than its text
        self._texts: list[Text] = []
        self._open = False

    def __bool__(self) -> bool:
        return bool(self._whole or self._heads)

    def add(self, content: list[Any]) -> None:
        for chunk in content:
            if not self._streamed:
                if is_thinking_chunk(chunk) and self._keep.value(THINKING_FIELD, chunk):
                    self._whole.append(chunk)
                continue
            parts = chunk.get("thinking") if is_thinking_chunk(chunk) else None
            if not isinstance(parts, list) or not parts:
                self._open = False  # the closing fragment, or another kind of chunk: the thinking chunk ended
                continue
            if not self._open:
                if not self._keep.thinking_chunk():
                    return
                self._heads.append({key: value for key, value in chunk.items() if key != "thinking"})
                self._texts.append(self._keep.text(THINKING_FIELD))
                self._open = True
            for part in parts:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    self._texts[-1].append(part["text"])

    def text(self) -> str:
        """The text of every streamed chunk, one after the other, as a person reads it."""
        return "".join(piece for text in self._texts for piece in text.pieces)

    def chunks(self) -> list[dict[str, Any]]:
        if not self._streamed:
            return list(self._whole)
        return [
            {**head, "thinking": [{"type": "text", "text": jsoncodec.join_text(text.pieces)}]}
            for head, text in zip(self._heads, self._texts)
        ]


def message_lacks(message: dict[str, Any], name: str) -> bool:
    """Whether a request's assistant message lacks a kind of state: a field, or (Mistral) thinking in its content."""
    if name == THINKING_FIELD:
        content = message.get("content")
        return not (isinstance(content, list) and any(is_thinking_chunk(chunk) for chunk in content))
    return is_missing(name, message.get(name))


def put_back(message: dict[str, Any], name: str, value: Any) -> None:
    """Gives an assistant message a kind of state back: a field, or (Mistral) thinking chunks at the start of its
    content, which becomes an array where it was text or null, as Mistral sends it."""
    if name != THINKING_FIELD:
        message[name] = value
        return
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content else []
    message["content"] = [*copy.deepcopy(value), *(content if isinstance(content, list) else [])]


def call_field(call: dict[str, Any], name: str) -> Any:
    if name.startswith("function."):
        function = call.get("function")
        return function.get(name[len("function.") :]) if isinstance(function, dict) else None
    return call.get(name)


def set_call_field(call: dict[str, Any], name: str, value: Any) -> None:
    if name.startswith("function."):
        function = call.setdefault("function", {})
        if isinstance(function, dict):
            function[name[len("function.") :]] = value
    else:
        call[name] = value


def litellm_short_id(call_id: str) -> str | None:
    """The id a client is left with after stripping LiteLLM's signature suffix (None if it has none)."""
    short, signature = split_call_id(call_id)
    return short if signature is not None else None


def opaque_delta_fragments(doc: Any, data_types: frozenset[str]) -> list[tuple[tuple[Any, ...], Any]]:
    """The pieces of opaque values one stream chunk carries, each with the slot its pieces are joined in:
    Copilot's `reasoning_opaque` per choice, and OpenRouter's `reasoning_details` signatures and the `data` of
    entries whose type is in `data_types`, per choice, entry type and entry index (as DetailAssembler joins)."""
    pieces: list[tuple[tuple[Any, ...], Any]] = []
    choices = doc.get("choices") if isinstance(doc, dict) else None
    for position, choice in enumerate(choices if isinstance(choices, list) else []):
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            continue
        index = jsoncodec.as_key(choice.get("index", position))
        pieces.append((("choice", index, "reasoning_opaque"), delta.get("reasoning_opaque")))
        details = delta.get(DETAILS_FIELD)
        for detail in details if isinstance(details, list) else []:
            if not isinstance(detail, dict):
                continue
            identity = (jsoncodec.as_key(detail.get("type")), jsoncodec.as_key(detail.get("index")))
            for key in ("signature", "data"):
                if key == "signature" or identity[0] in data_types:
                    pieces.append((("choice", index, "details", *identity, key), detail.get(key)))
    return pieces


def is_missing(name: str, value: Any) -> bool:
    """Whether a request lacks a field: absent, null, or (for arrays) empty."""
    return value is None or (name == DETAILS_FIELD and value == [])
