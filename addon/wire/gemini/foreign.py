"""Gemini's thought signatures another model, host or account issued, taken off a request."""

from __future__ import annotations

from typing import Any

from ...shared.records import RepairAction
from ..base import ForeignLookup
from .parts import SIGNATURE_KEYS, call_parts, function_call, is_model_content


def remove_foreign_signatures(contents: list[Any], foreign: ForeignLookup) -> list[RepairAction]:
    """Takes off each thought signature another model, host or account issued (Gemini answers "Corrupted thought
    signature."). Signatures are optional on earlier turns; a current-turn call left without one gets the
    placeholder from the repair that follows, as any call with nothing cached does."""
    sites = [
        (index, position, part, key, part[key])
        for index, content in enumerate(contents)
        if is_model_content(content)
        for position, part in enumerate(content["parts"])
        if isinstance(part, dict)
        for key in SIGNATURE_KEYS
        if isinstance(part.get(key), str) and part[key]
    ]
    why = foreign([value for *_, value in sites])
    actions = []
    for index, position, part, key, value in sites:
        if value not in why:
            continue
        del part[key]
        call = function_call(part)
        actions.append(
            RepairAction(
                kind="foreign_removed",
                location=f"contents[{index}].parts[{position}]",
                index=index,
                fields=[key],
                tool_call_id=call_parts(call)[0] if call is not None else None,
                reason=why[value],
            )
        )
    return actions
