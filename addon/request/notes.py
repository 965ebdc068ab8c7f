"""What a repair says about itself beyond its actions: the provider that would not have refused the request, and
the reasoning held for another model that was not replayed."""

from __future__ import annotations

from .. import dialects
from ..shared.records import RepairAction, display_call_id
from ..wire import RepairContext
from .plans import INSERTING


def silent_provider(context: RepairContext, actions: list[RepairAction]) -> str | None:
    """The provider that would have answered the request without the state the repair put back, only worse (it
    drops reasoning silently); None where it would have refused it, or when nothing was put back."""
    if not any(action.kind in INSERTING for action in actions):
        return None
    dialect = dialects.serving(context.host, context.path, context.model or "")
    return dialect.name if dialect is not None and dialect.silent_drops else None


def silent_note(provider: str) -> str:
    return f"{provider} would not have refused the request without it: it drops reasoning silently, and answers worse"


def _model_name(model: str | None) -> str:
    return f"model {model}" if model is not None else "a request that named no model"


def mismatch_note(mismatched: dict[str, str | None], model: str | None) -> str:
    """What the cache held for another model, said once for a request."""
    by_model: dict[str | None, list[str]] = {}
    for key, other in mismatched.items():
        by_model.setdefault(other, []).append(key)
    parts = [
        f"{display_call_id(keys[0])}{f' and {len(keys) - 1} more' if len(keys) > 1 else ''} came from "
        f"{_model_name(other)}"
        for other, keys in by_model.items()
    ]
    return f"reasoning cached for {', '.join(parts)}; not replayed into {_model_name(model)}"
