"""Responses reasoning items another model, deployment, host or account issued, taken out of a request."""

from __future__ import annotations

from typing import Any

from ...shared.records import RepairAction
from ..base import ForeignLookup
from .items import is_reasoning, reasoning_item_id


def remove_foreign_items(items: list[Any], foreign: ForeignLookup) -> list[RepairAction]:
    """Drops the reasoning items whose `encrypted_content` another model, deployment, host or account issued: the
    server cannot decrypt them, and takes the conversation without them."""
    sites = [
        (index, item["encrypted_content"])
        for index, item in enumerate(items)
        if is_reasoning(item) and isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]
    ]
    why = foreign([value for _, value in sites])
    actions = []
    for index, value in reversed(sites):  # from the end, so that indexes before stay valid
        if value not in why:
            continue
        following = items[index + 1] if index + 1 < len(items) else None
        call_id = following.get("call_id") if isinstance(following, dict) else None
        reasoning_id = reasoning_item_id(items[index])
        del items[index]
        actions.append(
            RepairAction(
                kind="foreign_removed",
                location=f"input[{index}]",
                index=index,
                fields=[f"reasoning {reasoning_id}" if reasoning_id else "reasoning"],
                tool_call_id=call_id if isinstance(call_id, str) else None,
                reason=why[value],
            )
        )
    actions.reverse()
    return actions
