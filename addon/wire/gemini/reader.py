"""The capture's reader of a Gemini answer: its stream assembled without text (stream.py), and one reasoning record a
candidate that carries state (a signed function call, or a text signature of a whole answer)."""

from __future__ import annotations

from ...shared.records import ReasoningRecord
from .parts import NAME, SIGNATURE, SIGNED_TEXT_PART, TEXT_KEY_PREFIX
from .stream import GeminiStream


class GeminiReader(GeminiStream):
    """Reads one `GenerateContentResponse`, a stream of them (each SSE `data:` is whole), or a JSON array of them."""

    def __init__(self) -> None:
        super().__init__(keep_text=False)

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        records = []
        for state in self.candidates.values():
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
