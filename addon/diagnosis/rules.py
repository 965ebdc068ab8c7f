"""What a diagnosis is: the rule an error response names, and where in the request it points."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..dialects.base import Kind

# What a text no rule matches is diagnosed as.
UNKNOWN = "unknown"


class Diagnosis(BaseModel):
    rule: str
    summary: str
    provider: str
    kind: Kind
    field: str | None = None
    message: str = ""
    index: int | None = None
    position: int | None = None
    block: int | None = None
    item_ids: list[str] = Field(default_factory=list)
    function: str | None = None
    wrapped_by: str | None = None
    cause: str | None = None  # what the error says changed (Anthropic's block binding: "system prompt")
    # The start and end of a value the text quotes with its middle elided (OpenAI's "gAAA...DQ=="): how to tell
    # which value it is about when it names no item.
    quoted_ends: tuple[str, str] | None = None
