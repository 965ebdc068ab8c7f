"""A Responses request sent in the closest form its provider accepts when the reasoning it requires cannot be put back
(llm_recover).

The repair already puts a dropped `fc_`/`msg_` id back where the proxy saw the pair issued, and removes a reasoning
item nothing follows (kind "removed"). What is left is a reasoning item the provider cannot take: one refused
(invalid_encrypted_content, "Could not decrypt", 404 "not found" under `store: false`), or, on xAI, one sent without
the `summary` it wants and nothing cached to put back. Such an item goes whole: xAI's remedy for reasoning it cannot
read is to remove the item (https://github.com/chenyme/grok2api/pull/689), as OpenAI's 404 text says ("remove this
item from your input"). The model's items after it lose their `id` too, which pairs them with that reasoning item on
the server ("Item 'fc_…' of type 'function_call' was provided without its required 'reasoning' item"): sent without
it, they are taken (https://github.com/laravel/ai/pull/1052 keeps a function call's item id only beside its
reasoning; a tool output is paired by `call_id`, which stays).
"""

from __future__ import annotations

from typing import Any

from ...dialects.xai import REASONING_SUMMARY_MISSING
from ...shared.records import RepairAction
from .items import is_model_output, is_reasoning, reasoning_item_id, string
from .repair import lacks_summary

_REFUSED = "reasoning item the provider refused, taken out"
_UNREADABLE = "reasoning item without its summary, nothing cached to put back: taken out"
_UNPAIRED = "item id dropped: the reasoning item it was paired with is gone"


def _unpair(items: list[Any], index: int, rule: str | None) -> list[RepairAction]:
    """Drops the ids of the model's items from `index` on (those a removed reasoning item produced)."""
    actions = []
    while index < len(items) and is_model_output(items[index]) and not is_reasoning(items[index]):
        item = items[index]
        if string(item.get("id")) is not None:
            del item["id"]
            call_id = string(item.get("call_id"))
            actions.append(
                RepairAction(
                    "recovered", f"input[{index}]", index, ["id"], call_id, degraded=True, reason=_UNPAIRED, rule=rule
                )
            )
        index += 1
    return actions


def take_out_items(items: list[Any], indexes: list[int], reason: str, rule: str | None) -> list[RepairAction]:
    """Removes the reasoning items at `indexes`, from the end so that places before stay valid, and unpairs what
    followed each."""
    actions: list[RepairAction] = []
    for index in sorted(set(indexes), reverse=True):
        if not (0 <= index < len(items) and is_reasoning(items[index])):
            continue
        what = f"reasoning {reasoning_item_id(items[index]) or '(no id)'}"
        del items[index]
        unpaired = _unpair(items, index, rule)
        actions += [
            *reversed(unpaired),
            RepairAction("recovered", f"input[{index}]", index, [what], degraded=True, reason=reason, rule=rule),
        ]
    actions.reverse()
    return actions


def recover_items(items: list[Any], refused: list[int] | None, summary_required: bool) -> list[RepairAction]:
    """Takes the reasoning items at `refused` out (None: every one), then each the provider refuses for lacking its
    summary (`summary_required`)."""
    indexes = list(range(len(items))) if refused is None else refused
    actions = take_out_items(items, indexes, _REFUSED, None) if indexes else []
    if summary_required:
        unreadable = [index for index, item in enumerate(items) if lacks_summary(item)]
        actions += take_out_items(items, unreadable, _UNREADABLE, REASONING_SUMMARY_MISSING) if unreadable else []
    return actions
