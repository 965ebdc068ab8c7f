"""What a Responses item is: a reasoning item and its `rs_…` id, an item the model produced (a message of the
assistant's, a function or hosted tool call) or one only the client writes (its own message, a tool's output)."""

from __future__ import annotations

from typing import Any

NAME = "openai_responses"

# Output item types besides `function_call` and `message` that the model produces
# (hosted tools, MCP); anything ending in "_call" is one as well.
_OTHER_OUTPUT_TYPES = frozenset({"mcp_list_tools", "mcp_approval_request"})
_INPUT_ROLES = frozenset({"user", "system", "developer"})


def string(value: Any) -> str | None:
    """A value that is a string of something, else None."""
    return value if isinstance(value, str) and value else None


def is_reasoning(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "reasoning"


def reasoning_item_id(item: Any) -> str | None:
    """The `rs_…` id of a reasoning item."""
    if not is_reasoning(item):
        return None
    item_id = item.get("id")
    return item_id if isinstance(item_id, str) and item_id else None


def _is_message(item: dict[str, Any]) -> bool:
    kind = item.get("type")
    return kind == "message" or (kind is None and "role" in item)


def is_model_output(item: Any) -> bool:
    """An item the model produced (other than reasoning): what a reasoning item must be followed by."""
    if not isinstance(item, dict):
        return False
    if _is_message(item):
        return item.get("role") == "assistant"
    kind = item.get("type")
    return isinstance(kind, str) and (kind.endswith("_call") or kind in _OTHER_OUTPUT_TYPES)


def is_input_side(item: Any) -> bool:
    """An item only the client writes: a user/system/developer message or a tool's output."""
    if not isinstance(item, dict):
        return False
    if _is_message(item):
        return item.get("role") in _INPUT_ROLES
    kind = item.get("type")
    return isinstance(kind, str) and (kind.endswith("_output") or kind == "mcp_approval_response")


def call_parts(item: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A request function_call item's call_id, name and arguments."""
    return string(item.get("call_id")), string(item.get("name")), item.get("arguments", "")


def may_follow_reasoning(item: Any) -> bool:
    """Whether an item may stand right after a reasoning item that has an `rs_…` id. Not one only the client writes,
    and not one the model produced sent back without the id it was issued: OpenAI pairs the two by id, and refuses
    a reasoning item whose next item lost its id ("…of type 'reasoning' was provided without its required following
    item": an assistant message sent without its msg_ id, https://github.com/mastra-ai/mastra/issues/11103; a
    function_call without its fc_ id, https://github.com/vercel/ai/issues/7099)."""
    if item is None or is_input_side(item):
        return False
    return not is_model_output(item) or string(item.get("id")) is not None
