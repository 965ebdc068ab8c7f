"""OpenAI's errors: the Responses API and chat completions, as OpenAI-compatible hosts repeat them (xAI's copy of the
Responses API words its own: addon/dialects/xai.py).

Documentation: https://platform.openai.com/docs/guides/reasoning (reasoning items and their encrypted_content),
https://platform.openai.com/docs/guides/conversation-state (stored items, previous_response_id) and
https://platform.openai.com/docs/api-reference/chat/create. Each rule's captured text is named with it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from .base import IDS, TOOL_RESULT_MISSING, TOOL_RESULT_ORPHANED, Dialect, Q, Rule, path_places, rx
from .base import RESPONSES_ENCRYPTED_CONTENT_INVALID as RESPONSES_ENCRYPTED_CONTENT_INVALID

RESPONSES_REASONING_MISSING = "responses_reasoning_missing"
RESPONSES_REASONING_ORPHANED = "responses_reasoning_orphaned"
RESPONSES_DUPLICATE_ITEM = "responses_duplicate_item"
RESPONSES_ITEM_NOT_FOUND = "responses_item_not_found"
RESPONSES_PREVIOUS_RESPONSE_NOT_FOUND = "responses_previous_response_not_found"
CONTENT_EMPTY_ARRAY = "content_empty_array"

# A reasoning item sent by its id alone under `store: false`, by a request that does not ask for its
# encrypted_content: the server keeps nothing, and without `include` it never returned the value either, so no one
# (the proxy included) holds it (https://platform.openai.com/docs/guides/reasoning).
NOT_ASKED_ADVICE = (
    'the request sets `store: false` but does not ask for `include: ["reasoning.encrypted_content"]`, so OpenAI '
    "never returned the reasoning item's encrypted_content and no one, the proxy included, could hold it: ask for "
    '`include: ["reasoning.encrypted_content"]` with `store: false`, or send `store: true`'
)
# OpenAI refused the values it had issued itself, for every client at once, on 2025-12-16
# (https://github.com/openai/codex/issues/8120 and the reports it gathers, #8119, #8126, #8145).
OWN_VALUE_REFUSED = (
    "the client sent back exactly the encrypted_content OpenAI issued (the proxy captured the same value), so OpenAI "
    "refused its own value, as it did for every client on 2025-12-16: not the client's fault; retry later, and if it "
    "keeps failing leave that reasoning item out (or start a new conversation)"
)
# What an item is, by the prefix of the id the Responses API gave it.
_ITEM_FIELDS = {"rs": "reasoning item", "fc": "function_call item", "msg": "message item"}


def _item_field(match: re.Match[str], found: dict[str, Any]) -> None:
    """A text that names an item by id is about that kind of item."""
    if found.get("item_ids"):
        found["field"] = _ITEM_FIELDS.get(found["item_ids"][0].split("_", 1)[0], "item")


RESPONSES_RULES: tuple[Rule, ...] = (
    # https://github.com/continuedev/continue/issues/10018
    Rule(
        RESPONSES_REASONING_MISSING,
        "openai",
        "missing",
        "reasoning item",
        "'reasoning' item",
        rx(
            r"Item\s+'(?P<id1>[^']{1,200})'\s+of\s+type\s+'[^']{1,100}'\s+was\s+provided\s+without\s+its\s+",
            r"required\s+'reasoning'\s+item:\s*'(?P<id2>[^']{1,200})'",
        ),
        "an output item was sent back without the reasoning item that must come right before it",
    ),
    # https://github.com/continuedev/continue/issues/8933
    Rule(
        RESPONSES_REASONING_ORPHANED,
        "openai",
        "orphaned",
        "reasoning item",
        "required following item",
        rx(
            r"Item\s+'(?P<id1>[^']{1,200})'\s+of\s+type\s+'reasoning'\s+was\s+provided\s+without\s+its\s+",
            r"required\s+following\s+item",
        ),
        "a reasoning item was sent back without the item it produced right after it",
    ),
    # https://github.com/OpenRouterTeam/ai-sdk-provider/issues/254
    Rule(
        RESPONSES_DUPLICATE_ITEM,
        "openai",
        "duplicate",
        "item",
        "duplicate item",
        rx(r"Duplicate\s+item\s+found\s+with\s+id\s+'?(?P<id1>[\w\-]+)"),
        "an item the previous_response_id chain already holds was sent again",
        refine=_item_field,
    ),
    # https://github.com/can1357/oh-my-pi/issues/41
    Rule(
        RESPONSES_ITEM_NOT_FOUND,
        "openai",
        "not_found",
        "item",
        "not found",
        rx(r"Item\s+with\s+id\s+'(?P<id1>[^']{1,200})'\s+not\s+found"),
        "an item was sent by id only, but the server does not hold it (its response was not stored)",
        refine=_item_field,
        verdicts={"not_asked": NOT_ASKED_ADVICE},
    ),
    Rule(
        RESPONSES_PREVIOUS_RESPONSE_NOT_FOUND,
        "openai",
        "not_found",
        "previous_response_id",
        "previous response",
        rx(r"Previous\s+response\s+with\s+id\s+'(?P<id1>[^']{1,200})'\s+not\s+found"),
        "previous_response_id names a response the server does not hold",
    ),
    # code invalid_encrypted_content: "The encrypted content gAAA...DQ== could not be verified."
    # (https://github.com/openai/codex/issues/8145) and the 2026 wording that names the item, "The encrypted content
    # for item rs_… could not be verified. Reason: Encrypted content could not be decrypted or parsed."
    # (https://github.com/Wei-Shaw/sub2api/issues/2863, https://github.com/openai/codex/issues/17541)
    Rule(
        RESPONSES_ENCRYPTED_CONTENT_INVALID,
        "openai",
        "invalid",
        "encrypted_content",
        "encrypted content",
        rx(
            r"encrypted\s+content\b(?:\s+for\s+item\s+'?(?P<id1>(?:rs|cmp)_[\w\-]{1,200})'?)?",
            r"(?:\s+(?P<head>[\w\-+/=]{1,64})(?:\.\.\.|\u2026)(?P<tail>[\w\-+/=]{1,64}))?",
            r".{0,300}?could\s+not\s+be\s+(?:verified|decrypted)",
        ),
        "a reasoning item's encrypted_content is not a value the server issued (altered, truncated, or from "
        "another organisation, model or deployment)",
        verdicts={"as_issued": OWN_VALUE_REFUSED},
    ),
    # https://github.com/router-for-me/CLIProxyAPI/issues/2368, https://github.com/microsoft/vscode/issues/320060
    Rule(
        TOOL_RESULT_MISSING,
        "openai",
        "missing",
        "tool result",
        "no tool output found",
        rx(r"No\s+tool\s+output\s+found\s+for\s+function\s+call\s+(?P<ids>[\w\-]+)"),
        "a function call has no function_call_output with its call_id",
    ),
    Rule(
        TOOL_RESULT_ORPHANED,
        "openai",
        "orphaned",
        "tool result",
        "no tool call found",
        rx(r"No\s+tool\s+call\s+found\s+for\s+function\s+call\s+output\s+with\s+call_id\s+(?P<ids>[\w\-]+)"),
        "a function_call_output answers a call_id that no function call in the input has",
    ),
)

CHAT_RULES: tuple[Rule, ...] = (
    # https://github.com/smarter-sh/smarter/issues/264; DeepSeek's spelling "preceeding":
    # https://github.com/FoundationAgents/OpenManus/issues/744
    Rule(
        TOOL_RESULT_ORPHANED,
        "openai",
        "orphaned",
        "tool result",
        "must be a response to",
        rx(
            r"messages\s+with\s+role\s+",
            Q,
            "tool",
            Q,
            r"\s+must\s+be\s+a\s+response\s+to\s+a\s+",
            r"prece{1,2}ding\s+message\s+with\s+",
            Q,
            "tool_calls",
            Q,
        ),
        "a tool message does not answer a tool call of the assistant message before it",
    ),
    # https://github.com/router-for-me/CLIProxyAPI/issues/2798; Qwen's naming of the message:
    # https://github.com/QwenLM/qwen-code/issues/315
    Rule(
        TOOL_RESULT_MISSING,
        "openai",
        "missing",
        "tool result",
        "must be followed by tool messages",
        rx(
            r"assistant\s+message\s+with\s+",
            Q,
            "tool_calls",
            Q,
            r"\s+must\s+be\s+followed\s+by\s+tool\s+",
            r"messages\s+responding\s+to\s+each\s+",
            Q,
            "tool_call_id",
            Q,
            r"(?:.{0,80}?did\s+not\s+have\s+response\s+messages:\s*",
            IDS,
            ")?",
        ),
        "an assistant message's tool calls are not each followed by a tool message",
    ),
    Rule(
        CONTENT_EMPTY_ARRAY,
        "openai",
        "schema",
        "content",
        "empty array",
        rx(r"Invalid\s+'(?P<path>[^']{0,200}content)':\s*empty\s+array"),
        "a message's content is an empty array",
        refine=path_places,
    ),
)

_DEPLOYMENT = re.compile(r"/deployments/([^/?]+)/")


def deployment_model(path: str) -> str | None:
    """The deployment an Azure OpenAI route names (`/openai/deployments/{name}/chat/completions`): the model
    the request is for, which its body then usually leaves out."""
    match = _DEPLOYMENT.search(path.split("?", 1)[0])
    return unquote(match.group(1)) if match else None


class OpenAI(Dialect):
    """OpenAI (and Azure OpenAI and other hosts of the Responses API and chat completions)."""

    name = "openai"
    otel_name = "openai"
    known_hosts = ("api.openai.com",)
    rules = RESPONSES_RULES + CHAT_RULES


DIALECT = OpenAI()
