"""Signed values another model, host or account issued, taken out of a chat request's finished turns."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...shared.records import RepairAction
from ..base import ForeignLookup
from .fields import DETAILS_FIELD, DIALECT_FIELDS
from .messages import current_turn, is_assistant, tool_calls

_SIGNATURE_PATH = ("extra_content", "google", "thought_signature")


def _call_id(call: dict[str, Any] | None) -> str | None:
    call_id = call.get("id") if call is not None else None
    return call_id if isinstance(call_id, str) else None


def _signed_sites(message: dict[str, Any]) -> Iterator[tuple[str, Any, Any, str | None]]:
    """(where, how to remove it, value, tool call id) of each signed value of an assistant message: Copilot's
    `reasoning_opaque`, OpenRouter's signed or encrypted `reasoning_details` entries, a call's Gemini
    `thought_signature`. How to remove is a list and the position to take out of it, or a dict and the path of
    keys to the value; the id is the call's, or for values of the whole message its first call's."""
    calls = tool_calls(message)
    first = _call_id(calls[0]) if calls else None
    for name in ("reasoning_opaque", *DIALECT_FIELDS):
        opaque = message.get(name)
        if isinstance(opaque, str) and opaque:
            yield name, (message, (name,)), opaque, first
    details = message.get(DETAILS_FIELD)
    if isinstance(details, list):
        for position, entry in enumerate(details):
            for key in ("signature", "data"):
                value = entry.get(key) if isinstance(entry, dict) else None
                if isinstance(value, str) and value:
                    yield f"{DETAILS_FIELD}[{position}]", (details, position), value, first
                    break
    for position, call in enumerate(calls):
        extra = call.get("extra_content")
        google = extra.get("google") if isinstance(extra, dict) else None
        value = google.get("thought_signature") if isinstance(google, dict) else None
        if isinstance(value, str) and value:
            yield f"tool_calls[{position}].extra_content", (call, _SIGNATURE_PATH), value, _call_id(call)


def _take_out(container: Any, what: Any) -> None:
    """Removes a value found by `_signed_sites`; objects it leaves empty go with it (`extra_content: {google: {}}`
    is no more than the client would have sent without the signature)."""
    if isinstance(container, list):
        del container[what]  # sites are taken out from the last, so the positions before stay valid
        return
    parents = [container]
    for key in what[:-1]:
        parents.append(parents[-1][key])
    del parents[-1][what[-1]]
    for parent, key in zip(reversed(parents[:-1]), reversed(what[:-1])):
        if parent[key]:
            break
        del parent[key]


def remove_foreign_values(
    messages: list[Any], foreign: ForeignLookup
) -> tuple[list[RepairAction], list[tuple[int, str]]]:
    """Removes signed values another model, host or account issued from finished turns (providers take earlier
    turns without them). The current tool loop's values stay: there the provider wants them, and takes no
    substitute, so the note says to finish the loop on the model that issued them."""
    sites = [
        (index, *site)
        for index, message in enumerate(messages)
        if is_assistant(message)
        for site in _signed_sites(message)
    ]
    why = foreign([site[3] for site in sites])
    if not why:
        return [], []
    current = set(current_turn(messages))
    actions, kept = [], []
    for index, where, (container, what), value, call_id in reversed(sites):  # list entries go from the last
        reason = why.get(value)
        if reason is None:
            continue
        location = f"messages[{index}]"
        if index in current:
            kept.append((index, f"{where} of {location} {reason}; left in place: the current tool loop needs it"))
            continue
        _take_out(container, what)
        actions.append(
            RepairAction(
                kind="foreign_removed",
                location=location,
                index=index,
                fields=[where],
                tool_call_id=call_id,
                reason=reason,
            )
        )
    actions.reverse()
    kept.reverse()
    return actions, kept
