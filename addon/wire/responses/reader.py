"""The capture's reader of a Responses answer: its output items assembled without text (stream.py), and one
reasoning record a reasoning item, with the calls and messages the model produced after it."""

from __future__ import annotations

from typing import Any

from ...shared.records import ReasoningRecord, ToolCallRef
from .items import NAME, call_parts, is_model_output, reasoning_item_id, string
from .stream import DIGEST, ResponsesStream


def _tool_call_ref(item: dict[str, Any]) -> ToolCallRef | None:
    call_id, name, _ = call_parts(item)
    if call_id is None:
        return None
    fc_id = string(item.get("id"))
    return ToolCallRef(
        id=call_id,
        name=name or "",
        arguments_sha256=item[DIGEST],
        aliases=[fc_id] if fc_id and fc_id != call_id else [],
    )


class ResponsesReader(ResponsesStream):
    def __init__(self) -> None:
        super().__init__(keep_text=False)

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        groups: list[tuple[dict[str, Any], list[ToolCallRef], list[str]]] = []
        for index in sorted(self.items):
            item = self.items[index].done
            if reasoning_item_id(item) is not None:
                groups.append((item, [], []))
            elif not groups or not is_model_output(item):
                continue
            elif item.get("type") == "function_call":
                call = _tool_call_ref(item)
                if call is not None:
                    groups[-1][1].append(call)
            elif string(item.get("id")):
                groups[-1][2].append(item["id"])
        return [
            ReasoningRecord(
                wire_format=NAME,
                fields=dict(reasoning),
                tool_calls=calls,
                # The reasoning item's own id is a key too, where the record has others: an item after it sent
                # back without its id is found through it (repair.restore_following_ids).
                extra_keys=[reasoning["id"], *extra_keys] if calls or extra_keys else [],
                response_id=self.response_id,
                response_model=self.response_model,
                complete=complete,
            )
            for reasoning, calls, extra_keys in groups
        ]
