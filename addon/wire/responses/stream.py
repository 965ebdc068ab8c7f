"""A Responses answer assembled into its output items, by `output_index`: a stream of events, or a whole response.

The copies of an item differ within one stream: `output_item.added` carries a stub (a reasoning item's
`encrypted_content` a stub too, or none on xAI), `output_item.done` the whole item and `response.completed` (or
`.incomplete`) a copy of every item (a reasoning item's `encrypted_content` re-encrypted); text comes between them
as deltas.

The capture (reader.py) and the transcript (transcript.py) both read an answer through `ResponsesStream`, and
`keep_text` says for which:

- Without it only whole items are read (output_item.done), and of each only what a reasoning record needs: a
  reasoning item whole, a function call's ids, name and a digest of its arguments, of any other item its type, role
  and id (`held`); an item's text is never held. All of it goes through the answer's `Budget`. Nearly every event
  is a text or arguments delta: an event is told by its name, or by its bytes, and parsed only when it can add
  something (`feed_event`); the final event, which repeats every item, only when an item never came whole before
  it. An item without an `output_index` goes after every other.
- With it every event is read and every item kept as it came: its stub, its whole copy and the deltas that came
  for it, joined once at the end (up to MAX_CONTENT_BLOCKS items and MAX_ASSEMBLED_CHARS of text a piece; past them
  the rest is counted, `AnswerLimits`), and the output of the response that ended the stream (completed,
  incomplete or failed), or of a whole response, as it is (`output`). An event without an `output_index` is about
  the item its item id names, else the latest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ...shared import jsoncodec
from ...shared.limits import MAX_CONTENT_BLOCKS, Budget
from ...shared.records import arguments_digest, canonical_arguments
from ..assembly import AnswerLimits, TextPieces, as_str
from ..sse import SSEEvent
from .items import is_reasoning, reasoning_item_id, string

ITEM_ADDED = "response.output_item.added"
ITEM_DONE = "response.output_item.done"
STARTED = ("response.created", "response.in_progress")
# Terminal events that carry the whole `response` with its `output`.
FINISHED = ("response.completed", "response.incomplete")
FAILED = "response.failed"
_WANTED = (ITEM_DONE, *STARTED, *FINISHED)
_WANTED_MARKERS = tuple((kind, f'{kind}"'.encode()) for kind in _WANTED)
_REASONING_ID = re.compile(rb'"(rs_[0-9A-Za-z_-]+)"')
# Held of a function call without keep_text: its ids and name, and the digest of its arguments under this key.
DIGEST = "arguments_sha256"


def _kind_of(data: bytes) -> str | None:
    """Which wanted event an unnamed event's payload is, judged by substring (a hint: the parse decides)."""
    for kind, marker in _WANTED_MARKERS:
        if marker in data:
            return kind
    return None


def _payload_lines(data: bytes) -> Iterator[bytes]:
    """One payload per line when a stream written without blank lines folded several events into one."""
    yield from (line for line in data.split(b"\n") if line.strip())


def held(item: dict[str, Any]) -> dict[str, Any]:
    """What a record needs of an output item: a reasoning item whole; of a function call its ids, name and a
    digest of its arguments; of anything else its type, role and id (an answer's text is not needed)."""
    if is_reasoning(item):
        return item
    kept = {key: item[key] for key in ("type", "role", "id", "call_id", "name") if key in item}
    if item.get("type") == "function_call":
        arguments = item.get("arguments", "")
        kept[DIGEST] = arguments_digest(arguments if isinstance(arguments, str) else canonical_arguments(arguments))
    return kept


def _index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class OutputItem:
    """One output item: its whole copy (`done`; without keep_text what a record needs of it) and, with keep_text,
    its stub (`added`) and the deltas that came for it: output text and refusals (`content`), summary text
    (`summary`) and reasoning text (`reasoning`) by their index, a call's arguments or a custom tool call's input."""

    __slots__ = ("added", "arguments", "content", "done", "reasoning", "summary")

    def __init__(self) -> None:
        self.added: dict[str, Any] | None = None
        self.done: dict[str, Any] | None = None
        self.content: dict[int, TextPieces] | None = None
        self.summary: dict[int, TextPieces] | None = None
        self.reasoning: dict[int, TextPieces] | None = None
        self.arguments: TextPieces | None = None

    def assembled(self) -> tuple[dict[str, Any], int]:
        """The item as far as it came, and how many characters of its text were left out: its whole copy, else its
        stub (or, when none came, what its deltas show it to be) with the deltas joined in."""
        if self.done is not None:
            return self.done, 0
        item: dict[str, Any] = dict(self.added) if self.added is not None else {}
        arguments = self.arguments.pieces if self.arguments is not None else None
        kind = item.get("type")
        if kind is None:  # no stub arrived: judge the item by its deltas
            kind = "function_call" if arguments else "reasoning" if self.summary or self.reasoning else None
            item["type"] = kind or "message"
            if kind is None:
                item.setdefault("role", "assistant")
        texts = [*(self.content or {}).values(), *(self.summary or {}).values(), *(self.reasoning or {}).values()]
        if self.content:
            item["content"] = [{"type": "output_text", "text": self.content[i].text()} for i in sorted(self.content)]
        if self.summary:
            item["summary"] = [{"type": "summary_text", "text": self.summary[i].text()} for i in sorted(self.summary)]
        if self.reasoning:
            item["content"] = [
                {"type": "reasoning_text", "text": self.reasoning[i].text()} for i in sorted(self.reasoning)
            ]
        if arguments:
            item["input" if item["type"] == "custom_tool_call" else "arguments"] = self.arguments.text()
        left_out = sum(p.left_out for p in texts) + (self.arguments.left_out if self.arguments is not None else 0)
        return item, left_out


class ResponsesStream:
    """One answer's output items as they stream (see the module docstring). Without keep_text it reads events
    itself (`feed_event`, `feed_document`: the capture's ResponseReader, reader.py); with it the transcript's
    assembler hands it each parsed event (`event`) or a whole response (`response`)."""

    markers: tuple[bytes, ...] | None = None  # no byte string marks every event this stream keeps

    def __init__(self, keep_text: bool, kept: AnswerLimits | None = None) -> None:
        self.keep_text = keep_text
        # With keep_text, what is past its bounds (items, pieces of text) is counted here.
        self.kept: AnswerLimits | None = (kept or AnswerLimits()) if keep_text else None
        self.budget = Budget()
        self.response_id: str | None = None
        self.response_model: str | None = None
        self.items: dict[int, OutputItem] = {}  # by output_index
        # With keep_text: the output of the response that ended the stream, or of a whole response, as it came.
        self.output: Any = None
        self.done_reasoning: set[str] = set()  # rs_ ids that came whole in an output_item.done event
        self._next_index = 0  # without keep_text, where an item without an output_index goes: after every other
        self._highest = -1  # with keep_text, the highest output index so far: an item without one comes after it
        self._by_id: dict[str, int] = {}  # with keep_text, the index of each item id
        self.unreadable = 0  # events that held no JSON (the capture says so in the log)

    # --- events and bodies, read without keep_text (the capture) ----------------------------------------------

    def feed_event(self, event: SSEEvent) -> None:
        data = event.data
        if self.budget.over is not None:  # nothing more is kept of an answer over a bound
            return
        if b"\n" in data:
            try:
                doc = jsoncodec.loads(data)
            except ValueError:
                for line in _payload_lines(data):
                    self._feed_payload(None, line)
                return
            if isinstance(doc, dict):
                self.event(doc, None)
            return
        self._feed_payload(event.event, data)

    def skippable(self, data: bytes) -> bool:
        return self.response_id is not None and not any(marker in data for _, marker in _WANTED_MARKERS)

    def feed_document(self, doc: Any) -> None:
        self.response(doc)

    def _feed_payload(self, name: str | None, data: bytes) -> None:
        # Nearly every event is a text or arguments delta; only a handful are parsed.
        kind = name if name is not None else _kind_of(data)
        if kind is None or not self._wants(kind, data):
            return
        try:
            doc = jsoncodec.loads(data)
        except ValueError:
            self.unreadable += 1
            return
        if isinstance(doc, dict):
            self.event(doc, None)  # what the event is, its own `type` says

    def _wants(self, kind: str, data: bytes) -> bool:
        if kind == ITEM_DONE:
            return True
        if kind in STARTED:
            return self.response_id is None
        if kind in FINISHED:
            # The final event repeats every item and can be large: read it only when it can add something,
            # i.e. when no item came whole before it or it names a reasoning item not seen yet.
            if self.response_id is None or not self.items:
                return True
            return any(m.decode() not in self.done_reasoning for m in _REASONING_ID.findall(data))
        return False

    # --- parsed events and responses --------------------------------------------------------------------------

    def event(self, doc: dict[str, Any], name: str | None) -> None:
        """One event of a stream (`name`: its SSE event name, for a payload without a `type`)."""
        kind = doc.get("type")
        if not isinstance(kind, str):
            kind = name
        if kind == ITEM_DONE or kind == ITEM_ADDED:
            item = doc.get("item")
            if isinstance(item, dict):
                self._item(doc, item, kind == ITEM_DONE)
        elif kind in STARTED or kind in FINISHED:
            response = doc.get("response")
            if isinstance(response, dict):
                self._identify(response)
                if kind in FINISHED:
                    self._ended(response.get("output"))
        elif kind == FAILED:
            response = doc.get("response")
            if self.keep_text and isinstance(response, dict):  # a failed response's output is shown, not captured
                self._ended(response.get("output"))
        elif self.keep_text:
            self._delta(doc, kind)

    def response(self, doc: Any) -> None:
        """A whole response (a JSON answer)."""
        if not isinstance(doc, dict):
            return
        self._identify(doc)
        if self.keep_text:
            self.output = doc.get("output")
        else:
            self._take_output(doc.get("output"))

    def _identify(self, response: dict[str, Any]) -> None:
        if self.response_id is None:
            self.response_id = string(response.get("id"))
        if self.response_model is None:
            self.response_model = string(response.get("model"))

    def _ended(self, output: Any) -> None:
        """The output of the response that ended the stream."""
        if not self.keep_text:
            self._take_output(output)
        elif isinstance(output, list) and output:
            self.output = output

    def _item(self, doc: dict[str, Any], item: dict[str, Any], done: bool) -> None:
        """An item's stub or whole copy."""
        if self.keep_text:
            slot = self._slot(doc, as_str(item.get("id")))
            if done:
                slot.done = item
            else:
                slot.added = item
            return
        if not done:
            return  # the whole item follows
        index = _index(doc.get("output_index"))
        if index is None:
            index = self._next_index
        if not self._hold(index, item):
            return
        self._next_index = max(self._next_index, index + 1)
        found = reasoning_item_id(item)
        if found is not None:
            self.done_reasoning.add(found)

    def _take_output(self, output: Any) -> None:
        """Items of a whole response; in a stream, only those that never came in an output_item.done."""
        if not isinstance(output, list):
            return
        for index, item in enumerate(output):
            if not isinstance(item, dict) or index in self.items or reasoning_item_id(item) in self.done_reasoning:
                continue
            if not self._hold(index, item):
                return

    def _hold(self, index: int, item: dict[str, Any]) -> bool:
        """Holds what a record needs of an item (without keep_text), within the answer's budget; False once that
        is spent."""
        if item.get("type") == "function_call" and not self.budget.take_call():
            return False
        kept = held(item)
        if kept is item and not self.budget.take("reasoning item", len(jsoncodec.dumps(item))):
            return False
        slot = self.items.get(index)
        if slot is None:
            slot = self.items[index] = OutputItem()
        slot.done = kept
        return True

    def _delta(self, doc: dict[str, Any], kind: Any) -> None:
        """A piece of an item's text (with keep_text)."""
        delta = doc.get("delta")
        if not isinstance(delta, str):
            return
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            slot = self._slot(doc)
            slot.content = self._add(slot.content, doc.get("content_index"), delta)
        elif kind == "response.reasoning_summary_text.delta":
            slot = self._slot(doc)
            slot.summary = self._add(slot.summary, doc.get("summary_index"), delta)
        elif kind == "response.reasoning_text.delta":
            slot = self._slot(doc)
            slot.reasoning = self._add(slot.reasoning, doc.get("content_index"), delta)
        elif kind in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta"):
            slot = self._slot(doc)
            slot.arguments = slot.arguments or TextPieces()
            slot.arguments.add(delta)

    def _add(self, texts: dict[int, TextPieces] | None, index: Any, delta: str) -> dict[int, TextPieces]:
        """`texts` (made when it is the first) with `delta` added to the piece at `index`."""
        assert self.kept is not None
        texts = {} if texts is None else texts
        (self.kept.slot(texts, _index(index) or 0, TextPieces, MAX_CONTENT_BLOCKS) or TextPieces()).add(delta)
        return texts

    def _slot(self, doc: dict[str, Any], item_id: str | None = None) -> OutputItem:
        """The item an event is about (with keep_text): by its output_index, else by its item id, else the latest."""
        assert self.kept is not None
        index = _index(doc.get("output_index"))
        item_id = item_id or as_str(doc.get("item_id"))
        if index is None:
            if item_id is not None:
                index = self._by_id.get(item_id, self._highest + 1)
            else:
                index = max(self._highest, 0)
        slot = self.kept.slot(self.items, index, OutputItem, MAX_CONTENT_BLOCKS)
        if slot is None:
            return OutputItem()  # past the bound: read, not kept
        self._highest = max(self._highest, index)
        if item_id is not None and len(self._by_id) < MAX_CONTENT_BLOCKS:
            self._by_id.setdefault(item_id, index)
        return slot
