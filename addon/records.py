"""What the proxy remembers about a response and what it changes in a request."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class ToolCallRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str = ""
    arguments: str = ""


class ReasoningRecord(BaseModel):
    """The reasoning state of one assistant turn, as the provider sent it.

    `fields` holds the provider's own keys and values, to be put back verbatim;
    the cache stores one record under each of the turn's tool call ids.
    """

    model_config = ConfigDict(frozen=True)

    wire_format: str
    fields: dict[str, Any]
    tool_calls: list[ToolCallRef] = []
    response_id: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    complete: bool = True
    captured_at: float = 0.0

    @property
    def tool_call_ids(self) -> list[str]:
        return [call.id for call in self.tool_calls]


RepairKind = Literal["restored", "content_null", "merged"]


class RepairAction(BaseModel):
    """One change made to a request body, precise enough to log and to explain."""

    kind: RepairKind
    message_index: int
    fields: list[str] = []
    tool_call_id: str | None = None
    response_id: str | None = None

    def describe(self) -> str:
        where = f"messages[{self.message_index}]"
        if self.kind == "restored":
            return f"restored {', '.join(self.fields)} on {where} (tool call {self.tool_call_id})"
        if self.kind == "content_null":
            return f"content [] -> null on {where}"
        return f"merged split assistant messages into {where}"
