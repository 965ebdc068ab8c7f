"""Mistral (api.mistral.ai): Magistral and the reasoning-capable Mistral Small and Medium models on chat completions.

Documentation: https://docs.mistral.ai/capabilities/reasoning. Their reasoning comes in the assistant message's content,
which is then an array: a `thinking` chunk (`{"type": "thinking", "thinking": [{"type": "text", "text": …}]}`) before
the answer's `text` chunks; a stream sends the thinking as arrays of such chunks, each with the next piece of text, and
the answer as plain strings (the captures in tests/fixtures/mistral/). Mistral asks for the thinking chunks back in the
same place on later turns and does not verify them: a request without them is answered, with the model's earlier
reasoning lost. No signature or opaque value is involved.

Its request schema is closed: a field it does not know is refused with HTTP 422 and a validation error that names the
field's place, `{"type": "extra_forbidden", "loc": ["body", "messages", 2, "assistant", "reasoning_content"], "msg":
"Extra inputs are not permitted", …}` (https://github.com/charmbracelet/crush/issues/1590; the envelope
`{"object": "error", "message": {"detail": [ … ]}, "type": "invalid_request_error", …}` as
https://github.com/Gage-Technologies/mistral-go/issues/3 quotes it). Another provider's reasoning field on an
assistant message (a conversation begun on DeepSeek, a client that stores every model's reasoning as
reasoning_content) is refused so (https://github.com/OpenMinis/OpenMinis/issues/87).
"""

from __future__ import annotations

import re
from typing import Any

from .base import Dialect, Rule, rx

MESSAGE_FIELD_NOT_PERMITTED = "message_field_not_permitted"

# The reasoning fields other providers put on an assistant message, which Mistral's closed schema refuses.
FOREIGN_MESSAGE_FIELDS = frozenset(
    {"reasoning_content", "reasoning", "reasoning_text", "reasoning_opaque", "reasoning_details", "thought_signature"}
)
MODEL_PREFIXES = (
    "magistral-",
    "mistral-small",
    "mistral-medium",
    "mistral-large",
    "devstral-",
    "codestral-",
    "ministral-",
    "pixtral-",
    "open-mistral-",
    "open-mixtral-",
)


def _named_field(match: re.Match[str], found: dict[str, Any]) -> None:
    found["field"] = match.group("name")


RULES: tuple[Rule, ...] = (
    # The diagnosis reads a validation error's `loc` and `msg` as one text, "body.messages.2.assistant.reasoning_content:
    # Extra inputs are not permitted" (addon/diagnosis/envelopes.py).
    Rule(
        MESSAGE_FIELD_NOT_PERMITTED,
        "mistral",
        "unsupported",
        "message field",
        "extra inputs are not permitted",
        rx(r"body\.messages\.(?P<index>\d+)\.\w+\.(?P<name>\w+):\s*Extra\s+inputs\s+are\s+not\s+permitted"),
        "a message carries a field the API does not take (another provider's reasoning field, say)",
        refine=_named_field,
        advice=(
            "the provider takes no such field on a message (another provider's reasoning field, kept by the client "
            "from an earlier model): the client must leave it out; the proxy sends what the client sent"
        ),
    ),
)


class Mistral(Dialect):
    name = "mistral"
    otel_name = "mistral_ai"
    known_hosts = ("api.mistral.ai",)
    host = "api.mistral.ai"
    rules = RULES
    # A turn sent back without its thinking chunk is answered all the same (tests/fixtures/mistral/ shows the chunk
    # going back; nothing public shows a refusal when it does not).
    silent_drops = True

    def serves(self, host: str, path: str, model: str) -> bool:
        return "mistral.ai" in host or model.startswith(MODEL_PREFIXES)

    def refused_message_fields(self, model: str) -> frozenset[str]:
        return FOREIGN_MESSAGE_FIELDS


DIALECT = Mistral()
