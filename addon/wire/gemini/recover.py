"""A Gemini request sent in the closest form the API accepts when a thought signature cannot be put back
(llm_recover).

Google documents what stands in for a signature the client does not have: a dummy value that skips the check
(https://ai.google.dev/gemini-api/docs/thought-signatures). The repair already sends it, as the "placeholder" it
reports, on a current-turn call nothing was cached for (llm_signature_placeholder): before sending there is nothing
more to do. A signature the API refused is replaced by that placeholder on a function call, and taken out anywhere
else (Gemini validates only the current turn's calls); with the setting "off" it is only taken out.
"""

from __future__ import annotations

from typing import Any

from ...shared.records import RepairAction
from ..base import RepairContext
from .parts import SIGNATURE_KEYS, call_parts, function_call, is_model_content
from .repair import placeholder_value

_REPLACED = "refused thought signature replaced by Google's dummy signature"
_TAKEN_OUT = "refused thought signature taken out"


def recover_contents(contents: list[Any], context: RepairContext, refused: list[int] | None) -> list[RepairAction]:
    """Replaces (or takes out) the signatures of the model contents at `refused` (None: of every one)."""
    indexes = range(len(contents)) if refused is None else sorted(set(refused))
    placeholder = placeholder_value(context)
    actions = []
    for index in indexes:
        content = contents[index] if 0 <= index < len(contents) else None
        if not is_model_content(content):
            continue
        for position, part in enumerate(content["parts"]):
            keys = [key for key in SIGNATURE_KEYS if isinstance(part, dict) and key in part]
            if not keys:
                continue
            call = function_call(part)
            for key in keys:
                del part[key]
            if call is not None and placeholder is not None:
                part[keys[0]] = placeholder
            actions.append(
                RepairAction(
                    "recovered",
                    f"contents[{index}].parts[{position}]",
                    index,
                    keys,
                    call_parts(call)[0] if call is not None else None,
                    degraded=True,
                    reason=_REPLACED if call is not None and placeholder is not None else _TAKEN_OUT,
                )
            )
    return actions
