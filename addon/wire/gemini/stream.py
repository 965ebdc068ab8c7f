"""A Gemini answer assembled into its candidates' parts: one `GenerateContentResponse`, a stream of them (one a
`data:` event, each whole) or a JSON array of them (`streamGenerateContent` without `alt=sse`).

The capture (reader.py) and the transcript (transcript.py) both read an answer through `GeminiStream`, and
`keep_text` says for which:

- Without it a candidate keeps what a reasoning record needs and nothing more: its function calls with their
  signatures, a hash of its answer text (the text is hashed as it streams, never held) and the first signature that
  came on an answer text part, with whether answer text came before it. All of it goes through the answer's
  `Budget`. An event with no text, signature or function call in its bytes is passed over unparsed (`skippable`),
  and nothing more is read once the budget is spent.
- With it a candidate keeps every part, in order, as a person reads it: a run of streamed text pieces of one kind
  (answer or thought) is one `Run`, with the signatures that came on its pieces; anything else is kept as it came.
  Up to MAX_CHOICES candidates and MAX_ASSEMBLED_CHARS of text a run; past them the rest is counted
  (`AnswerLimits`). A whole (non-streamed) response's candidates are kept as they came, not joined.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, NamedTuple

from ...shared.limits import MAX_CHOICES, Budget
from ...shared.records import ToolCallRef, canonical_arguments
from ..assembly import AnswerLimits, TextPieces
from ..base import event_documents
from ..sse import SSEEvent
from .parts import SIGNATURE, call_parts, function_call, is_answer_text, part_signature, shown_signature

# Events holding one of these are read; others (answer text) only when a text signature may need their text.
_STATE_MARKERS = (b"ignature", b"unctionCall", b"unction_call")


class Signature(NamedTuple):
    """A thought signature as it came (`key`: the spelling it came under), kept to be shown."""

    key: str
    value: Any


class Unlisted(NamedTuple):
    """What a candidate's content held under `parts` when that was not a list, kept to be shown as it is."""

    value: Any


class Run(TextPieces):
    """A run of streamed text parts of one kind ("text" or "thought"), joined once at the end, and the signatures
    that came on its pieces."""

    __slots__ = ("kind", "signatures")

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.signatures: list[Signature] = []


class Candidate:
    """One candidate as it streams. With keep_text: its role and `items`, each a Run, a Signature that came on an empty
    text part with no run before it, an Unlisted, or a part as it came. Without: `calls` and the answer text's hash,
    length and parts, and its first signature (`text_signature`, on the `signed_part`)."""

    __slots__ = (
        "answer_chars",
        "answer_digest",
        "answer_parts",
        "budget",
        "calls",
        "items",
        "role",
        "signed_part",
        "text_signature",
    )

    def __init__(self, budget: Budget, keep_text: bool) -> None:
        self.budget = budget  # the stream's, shared by its candidates
        self.role = "model"
        self.items: list[Any] | None = [] if keep_text else None
        self.calls: list[ToolCallRef] = []
        # The answer text is only needed as a key: it is hashed as it streams, never kept whole.
        self.answer_digest: Any = None if keep_text else hashlib.sha256()
        self.answer_chars = 0
        self.answer_parts = 0
        self.text_signature: str | None = None
        self.signed_part: Literal["first", "last"] = "first"

    def note(self, part: dict[str, Any]) -> None:
        """Notes what a record needs of one part (without keep_text)."""
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

    def keep(self, content: Any) -> None:
        """Keeps a streamed content's parts (with keep_text): text joins the run of its kind."""
        if not isinstance(content, dict):
            return
        if isinstance(content.get("role"), str) and content["role"]:
            self.role = content["role"]
        parts = content.get("parts")
        if isinstance(parts, list):
            for part in parts:
                self._keep(part)
        elif parts is not None:
            self.items.append(Unlisted(parts))

    def _keep(self, part: Any) -> None:
        items = self.items
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str) or function_call(part) is not None:
            items.append(part)
            return
        kind = "thought" if part.get("thought") is True else "text"
        last = items[-1] if items else None
        # An empty text part (one that only brings a signature, often the stream's last) belongs to the run before.
        run = last if isinstance(last, Run) and (last.kind == kind or not text) else None
        if text:
            if run is None:
                run = Run(kind)
                items.append(run)
            run.add(text)
        signature = shown_signature(part)
        if signature is not None:
            if run is not None:
                run.signatures.append(Signature(*signature))
            else:
                items.append(Signature(*signature))


def candidate_index(value: Any, position: int) -> int:
    """A candidate's `index`, else its position in the list."""
    return value if isinstance(value, int) and not isinstance(value, bool) else position


class GeminiStream:
    """One answer's candidates as they stream (see the module docstring). Without keep_text it reads events itself
    (`feed_event`, `feed_document`: the capture's ResponseReader, reader.py); with it the transcript's assembler
    hands it each parsed chunk (`chunk`) or a whole response (`response`)."""

    markers: tuple[bytes, ...] | None = None  # no byte string marks every event this stream keeps

    def __init__(self, keep_text: bool, kept: AnswerLimits | None = None) -> None:
        self.keep_text = keep_text
        # With keep_text, what is past its bounds (candidates, text) is counted here.
        self.kept: AnswerLimits | None = (kept or AnswerLimits()) if keep_text else None
        self.budget = Budget()
        self.response_id: str | None = None
        self.response_model: str | None = None
        self.candidates: dict[int, Candidate] = {}
        # With keep_text: a whole response's candidates, by index, as they came; and why the answer ended (a
        # candidate's finishReason or the prompt's blockReason, the latest).
        self.whole: list[tuple[int, Any]] = []
        self.finish: str | None = None
        self.unreadable = 0  # events that held no JSON (the capture says so in the log)

    # --- events and bodies, read without keep_text (the capture) ----------------------------------------------

    def feed_event(self, event: SSEEvent) -> None:
        if self.budget.over is not None or self.skippable(event.data):
            return
        docs = list(event_documents(event.data))
        self.unreadable += not docs
        for doc in docs:
            self.chunk(doc)

    def skippable(self, data: bytes) -> bool:
        return b'"text"' not in data and not any(marker in data for marker in _STATE_MARKERS)

    def feed_document(self, doc: Any) -> None:
        if isinstance(doc, list):  # streamGenerateContent without alt=sse: a JSON array of responses
            for item in doc:
                self.chunk(item)
        else:
            self.response(doc)

    # --- parsed documents ---------------------------------------------------------------------------------------

    def chunk(self, doc: Any) -> None:
        """One response of a stream: its candidates' parts join those that came before."""
        if not isinstance(doc, dict):
            return
        if self.response_id is None and isinstance(doc.get("responseId"), str):
            self.response_id = doc["responseId"]
        if self.response_model is None and isinstance(doc.get("modelVersion"), str):
            self.response_model = doc["modelVersion"]
        if self.kept is not None:
            for index, candidate in self._listed(doc):
                state = self.kept.slot(self.candidates, index, self._candidate, MAX_CHOICES)
                if state is not None:
                    state.keep(candidate.get("content"))
            return
        candidates = doc.get("candidates")
        if not isinstance(candidates, list):
            return
        for position, candidate in enumerate(candidates):
            if not isinstance(candidate, dict):
                continue
            content = candidate.get("content")
            parts = content.get("parts") if isinstance(content, dict) else None
            if not isinstance(parts, list):
                continue  # nothing in it a record needs
            index = candidate.get("index")
            index = index if isinstance(index, int) else position  # true and false count as 1 and 0 here
            state = self.candidates.get(index)
            if state is None:
                # A request asks for a few (`generationConfig.candidateCount`; some models refuse more than one,
                # firebase/genkit#546): past MAX_CHOICES, as with chat's choices, the answer is read on, not cached.
                if len(self.candidates) >= MAX_CHOICES:
                    self.budget.refuse(f"it has more than {MAX_CHOICES} candidates")
                    return
                state = self.candidates[index] = self._candidate()
            for part in parts:
                if isinstance(part, dict):
                    state.note(part)

    def response(self, doc: Any) -> None:
        """A whole response: with keep_text its candidates are kept as they came; without, it is read as a chunk."""
        if self.kept is None:
            self.chunk(doc)
        elif isinstance(doc, dict):
            self.whole += [(index, candidate.get("content")) for index, candidate in self._listed(doc)]

    def _listed(self, doc: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
        """(index, candidate) of the candidates a response lists, within MAX_CHOICES (with keep_text), and why the
        answer ended so far."""
        assert self.kept is not None
        feedback = doc.get("promptFeedback")
        if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
            self.finish = feedback["blockReason"]
        candidates = doc.get("candidates")
        candidates = candidates if isinstance(candidates, list) else []
        self.kept.entries_left_out += max(0, len(candidates) - MAX_CHOICES)
        found = []
        for position, candidate in enumerate(candidates[:MAX_CHOICES]):
            if not isinstance(candidate, dict):
                continue
            found.append((candidate_index(candidate.get("index"), position), candidate))
            if isinstance(candidate.get("finishReason"), str):
                self.finish = candidate["finishReason"]
        return found

    def _candidate(self) -> Candidate:
        return Candidate(self.budget, self.keep_text)
