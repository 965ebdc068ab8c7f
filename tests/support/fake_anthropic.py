"""Fake Anthropic Messages API (`POST …/v1/messages`): one fake for the wire format, a provider's rules plugged in.

`MessagesFake` is the format: it answers as the real API does with thinking on (a tool turn is a `thinking` block
(text + `signature`), optionally a `text` block (`x-fake-content`), then `x-fake-parallel` `tool_use` blocks; after
the tool results (`x-fake-steps` tool turns) comes a final text answer; `x-fake-redacted: 1` gives a
`redacted_thinking` block instead of the thinking block, `x-fake-redacted: both` gives one after it;
`x-fake-display: omitted` gives the thinking block an empty text, as Claude 5 models answer unless asked for
`thinking.display: "summarized"` (stdapi-ai/stdapi.ai #285)), and streams it
with the real event sequence (`message_start`, `content_block_start`/`_delta`/`_stop` with `thinking_delta`, a
`signature_delta` just before the block's stop, `input_json_delta`, `message_delta`, `message_stop`). It keeps what
it issued: the thinking blocks by tool_use id, the signatures, the redacted data, the model of each.

A provider (`Anthropic`, `Vertex`, `CopilotMessages`, `DeepSeek`) is a small object that says where it is served
(its paths), when its models think, what it refuses with which text in which envelope, and how its answers differ.

Anthropic's own API, with thinking on, refuses (400, Anthropic's error envelope) what the API refuses, with the API's
texts:

* a thinking block whose `signature` was not issued for exactly its text, or a
  `redacted_thinking` block whose `data` was not issued, in any message; either
  issued for another model counts as not issued (a switch from one Claude model
  to another gets "Invalid `signature` in `thinking` block": vybestack/llxprt-code
  #2335, Roo-Code #10461);
* a final assistant message holding `tool_use` blocks that does not start with
  a thinking block;
* a final assistant message whose thinking blocks are not the ones issued with
  its `tool_use` ids, in order;
* a thinking block without a `signature` key, in any message, before anything else (the request's schema):
  "messages.N.content.M.thinking.signature: Field required" (anomalyco/opencode #25005; Bedrock's copy,
  can1357/oh-my-pi PR #10486); an empty signature is one not issued ("Invalid `signature` in `thinking` block");
* a thinking block of the latest assistant message sent back with its text emptied and its issued signature kept:
  the "cannot be modified" text (PROTOCOLS: anthropics/claude-code #25361), unless the request's `anthropic-beta`
  header (Bedrock: the body's `anthropic_beta` list) names `redact-thinking-2026-02-12`, under which an empty text
  with its signature is what goes back; emptied in an earlier message, its signature is not the one issued for it;
* for a `claude-fable-5…` model or with `x-fake-binding: 1` (see `Binding`): a
  thinking block sent back under another system prompt, other tools or other
  earlier messages than the request that produced it had.

With thinking off (`{"type": "disabled"}`) no thinking block is required, as the API's own text says ("To avoid this
requirement, disable `thinking`"); the request's `thinking` then holds nothing else (a `budget_tokens` left beside
"disabled" gets pydantic's "Extra inputs are not permitted", in the wording sub2api PR #6677 quotes for
`thinking.adaptive.block_binding`), and the models that always think refuse it (Claude Fable 5, Mythos, Sonnet and Opus
5.5: https://platform.claude.com/docs/en/build-with-claude/thinking-troubleshooting; that text is the fake's own, the
real one is not quoted anywhere), as Claude Opus 5 does at effort xhigh or max.

Claude on Vertex AI (`…/publishers/anthropic/models/{model}:rawPredict` and `:streamRawPredict`) has the same rules
behind Vertex's routes (https://docs.anthropic.com/en/api/claude-on-vertex-ai): the model is the one the path names,
the body carries `"anthropic_version": "vertex-2023-10-16"` and no `model`, a stream is asked for on
`:streamRawPredict` (with `"stream": true` still in the body), and error ids are Vertex's `req_vrtx_…`
(https://github.com/anthropics/claude-code/issues/52811).

GitHub Copilot's `/v1/messages` (`POST /copilot/v1/messages`, standing for `https://api.githubcopilot.com/v1/messages`)
is Claude behind Copilot on Anthropic's own API: Copilot lists `/v1/messages` among the endpoints of every `claude-*`
model (pydantic/pydantic-ai #8232) and passes Anthropic's blocks and signatures through, so the rules are
Anthropic's. Only the envelope differs: Copilot's own, with Anthropic's text as its message and code
`invalid_request_body`, as caozhiyuan/copilot-api #63 and #73 show it for an invalid signature (for the other texts,
the fake's assumption).

DeepSeek's Anthropic-compatible route (`…/anthropic/v1/messages`, https://api-docs.deepseek.com/guides/anthropic_api):
thinking is on unless the request sets `thinking.type` to "disabled"; a thinking block's `signature` is the message
id, a bare UUID (https://github.com/NousResearch/hermes-agent/pull/21048), and its final answers think too. A stream
opens the thinking block without a `signature` key and sends none after it
(https://github.com/QuantumNous/new-api/issues/4762, https://github.com/Alishahryar1/free-claude-code/pull/599).
Its rules, with DeepSeek's texts:

* a `redacted_thinking` block anywhere is refused whole (HTTP 422): the Rust deserializer knows no such variant;
* with thinking on, every assistant message holding `tool_use` blocks must carry a thinking block, in every later
  request (HTTP 400, in an OpenAI-style envelope: https://github.com/OEvortex/aether/issues/31,
  https://github.com/NousResearch/hermes-agent/issues/17992). Only its presence is checked here: clients that send the
  block back without its signature are answered, so DeepSeek does not seem to verify what it holds.
* thinking turned off while an effort is set is refused: "thinking options type cannot be disabled when
  reasoning_effort is set" (https://github.com/ding113/claude-code-hub/issues/1257).

Kimi on Moonshot's Anthropic-compatible API (`…/moonshot/anthropic/v1/messages`, standing for
`https://api.moonshot.ai/anthropic/v1/messages`, and `…/coding/v1/messages` for Kimi For Coding): thinking when the
request enables it (or always, for kimi-k2-thinking, kimi-k2.7-code and kimi-k3); a signature of its own in every
stream. Its one rule here, with its text (Kimi's chat completions wording in Anthropic's envelope, as
https://github.com/Kilo-Org/kilocode/issues/10986 quotes it from `api.kimi.com/coding/v1/messages`):

* with thinking on, every assistant message holding `tool_use` blocks must carry a thinking block, in every later
  request; `signature: ""` counts (https://github.com/anomalyco/opencode/pull/44713). The index the text names
  counts Kimi's own chat messages: the system prompt first, each tool result a message of its own (the fake's
  reading of reports where the first tool turn is refused "at index 2", kilocode #9535, cc-switch #3219).

Each provider's fake has signatures of its own: a block another one issued is not one it issued.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, call_for, sse_event

THINKING_TYPES = ("thinking", "redacted_thinking")
# The current docs.claude.com wording, as https://github.com/mastra-ai/mastra/issues/9277 quotes it.
MISSING_THINKING = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When "
    "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost "
    "set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To "
    "avoid this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
# API errors quoted verbatim in https://github.com/anthropics/claude-code/issues/10627 and, for MODIFIED,
# https://github.com/anthropics/claude-code/issues/25361.
INVALID_SIGNATURE = "messages.{index}.content.{block}: Invalid `signature` in `thinking` block"
MODIFIED = (
    "messages.{index}.content.{block}: `thinking` or `redacted_thinking` blocks in the latest assistant message "
    "cannot be modified. These blocks must remain as they were in the original response."
)
# A thinking block without its signature, as https://github.com/anomalyco/opencode/issues/25005 quotes it.
SIGNATURE_REQUIRED = "messages.{index}.content.{block}.thinking.signature: Field required"
# The beta under which thinking comes back redacted: an empty text with its signature is then the block as issued.
REDACT_THINKING_BETA = "redact-thinking-2026-02-12"
# anthropics/claude-code issue #56708 (an API error quoted verbatim).
INVALID_DATA = "messages.{index}.content.{block}: Invalid `data` in `redacted_thinking` block"
FINAL_ANSWER = "The directory holds two files."
# Block binding (platform.claude.com preserved-thinking docs), as anomalyco/opencode #48637 quotes it: the text, the
# sentence said when the request lacks the beta header its remedy needs, and the one cause-naming tail quoted.
BOUND_ELSEWHERE = (
    "messages.{index}.content.{block}: Invalid `signature` in `thinking` block. The block is bound to a different "
    'conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)
BINDING_BETA = "thinking-binding-controls-2026-08-01"
BINDING_NEEDS_BETA = f" That setting requires the `{BINDING_BETA}` value in the `anthropic-beta` header."
SYSTEM_CHANGED = " The `system` prompt differs from the one this block was created with."
# DeepSeek's texts.
THINKING_MISSING = "The `content[].thinking` in the thinking mode must be passed back to the API."
# The deserializer's text as third-party tests quote it (the full list of variants is not quoted anywhere), in the
# envelope of https://github.com/zhukunpenglinyutong/jetbrains-cc-gui/issues/591.
# Kimi's text (moonshot's chat completions wording, which its Anthropic-compatible route answers with too).
KIMI_THINKING_MISSING = (
    "thinking is enabled but reasoning_content is missing in assistant tool call message at index {index}"
)
KIMI_ALWAYS_THINKING = ("kimi-k2-thinking", "kimi-k2.7", "kimi-k3")
REDACTED_UNKNOWN = (
    "Failed to deserialize the JSON body into the target type: messages[{index}].content: unknown variant "
    "`redacted_thinking`, expected one of `text`, `thinking` at line 1 column {column}"
)
# DeepSeek's text for thinking turned off beside an effort.
THINKING_OFF_WITH_EFFORT = "thinking options type cannot be disabled when reasoning_effort is set"
# A `thinking` field of thinking turned off that holds more than its type (pydantic's text for an extra field).
EXTRA_INPUT = "thinking.disabled.{name}: Extra inputs are not permitted"
# The fake's own wording: the real text for a model that cannot turn thinking off is not quoted anywhere.
CANNOT_DISABLE = "thinking.type: `disabled` is not supported by {model}"
# Models that always think, and Claude Opus 5, which takes thinking off only at effort high or lower.
_ALWAYS_THINKING = re.compile(r"claude-(?:fable-5|mythos|(?:sonnet|opus)-5[-.]5(?!\d))")
_OPUS_5 = re.compile(r"claude-opus-5(?![-.]5(?!\d))(?!\.\d)")
VERTEX_VERSION = "vertex-2023-10-16"
_RAW_PREDICT = re.compile(r"/publishers/anthropic/models/(?P<model>[^/:?]+):(?P<method>streamRawPredict|rawPredict)$")


def thinking_enabled(doc: dict) -> bool:
    thinking = doc.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") not in (None, "disabled")


def thinking_off_problem(doc: dict) -> str | None:
    """What Claude refuses in a request that turns thinking off, in its words; None if nothing (or thinking is on)."""
    thinking = doc.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "disabled":
        return None
    extra = [name for name in thinking if name != "type"]
    if extra:
        return EXTRA_INPUT.format(name=extra[0])
    model = str(doc.get("model", ""))
    effort = (doc.get("output_config") or {}).get("effort")
    if _ALWAYS_THINKING.search(model) or (_OPUS_5.search(model) and effort in ("xhigh", "max")):
        return CANNOT_DISABLE.format(model=model)
    return None


def error(message: str) -> Reply:
    """Anthropic's 400, in its error envelope."""
    return Reply(
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
            "request_id": f"req_{uuid.uuid4().hex[:24]}",
        },
    )


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _has(message: Any, kind: str) -> bool:
    return any(isinstance(block, dict) and block.get("type") == kind for block in _blocks(message))


def _tool_uses(message: Any) -> list[dict]:
    return [b for b in _blocks(message) if isinstance(b, dict) and b.get("type") == "tool_use"]


def _is_role(message: Any, role: str) -> bool:
    return isinstance(message, dict) and message.get("role") == role


def _users_turn(messages: list[Any]) -> bool:
    """Whether the model is to answer the user (or a tool result): the last message is theirs, save for the
    `system` messages Claude Code 2.1 ends a request with for Claude 5.5 models (its mid-conversation system beta)."""
    spoken = [m for m in messages if not _is_role(m, "system")]
    return bool(spoken) and _is_role(spoken[-1], "user")


def _loop_start(messages: list[Any]) -> int:
    """Just after the last user prompt: user turns holding tool results continue the loop."""
    start = index = 0
    while index < len(messages):
        end = index
        while end < len(messages) and _is_role(messages[end], "user"):
            end += 1
        if end == index:
            index += 1
            continue
        # Consecutive user messages are one turn to the API.
        results = [b for m in messages[index:end] for b in _blocks(m) if isinstance(b, dict)]
        if not any(b.get("type") == "tool_result" for b in results):
            start = end
        index = end
    return start


def betas(header: str | None, listed: Any = None) -> frozenset[str]:
    """The betas a request asks for: the comma-separated `anthropic-beta` header, and a body's `anthropic_beta`
    list (Bedrock)."""
    named = {beta.strip() for beta in (header or "").split(",") if beta.strip()}
    return frozenset(named | {beta for beta in listed or () if isinstance(beta, str)})


def _unsigned_block(messages: list[Any]) -> str | None:
    """The schema's error for the first thinking block without a `signature` key, in any message."""
    for index, message in enumerate(messages):
        for position, block in enumerate(_blocks(message)):
            if isinstance(block, dict) and block.get("type") == "thinking" and "signature" not in block:
                return SIGNATURE_REQUIRED.format(index=index, block=position)
    return None


def _as_issued(block: Any, issued: dict, asked: frozenset[str]) -> bool:
    """Whether a block sent back is the one issued: the same, or, under redacted thinking, its text emptied."""
    return block == issued or (
        REDACT_THINKING_BETA in asked and issued["type"] == "thinking" and block == {**issued, "thinking": ""}
    )


def _random_id(prefix: str) -> str:
    return prefix + base64.b32encode(os.urandom(15)).decode().lower()


def _opaque(size: int) -> str:
    return "Eq" + base64.b64encode(os.urandom(size)).decode()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class Binding:
    """Claude Fable 5.1 and later: a thinking signature is bound to the prefix it was created under (the top-level
    `system`, the `tools`, every earlier message), and a block sent under another one is refused. Only the changed
    system prompt is named in the error: it is the one cause-naming tail seen."""

    def __init__(self) -> None:
        self.prefixes: dict[str, tuple[str, str, list[str]]] = {}  # signature -> (system, tools, messages) as JSON
        self._lock = threading.Lock()

    @staticmethod
    def applies(doc: dict, recorded: Recorded) -> bool:
        return str(doc.get("model", "")).startswith("claude-fable-5") or recorded.headers.get("x-fake-binding") == "1"

    @staticmethod
    def _prefix(doc: dict, messages: list[Any]) -> tuple[str, str, list[str]]:
        return _canonical(doc.get("system")), _canonical(doc.get("tools")), [_canonical(m) for m in messages]

    def check(self, doc: dict, recorded: Recorded) -> str | None:
        messages = doc.get("messages")
        if not self.applies(doc, recorded) or not isinstance(messages, list):
            return None
        for index, message in enumerate(messages):
            for position, block in enumerate(_blocks(message)):
                if not isinstance(block, dict) or block.get("type") != "thinking":
                    continue
                with self._lock:
                    bound = self.prefixes.get(str(block.get("signature")))
                prefix = self._prefix(doc, messages[:index])
                if bound is None or bound == prefix:
                    continue
                text = BOUND_ELSEWHERE.format(index=index, block=position)
                if BINDING_BETA not in recorded.headers.get("anthropic-beta", ""):
                    text += BINDING_NEEDS_BETA
                return text + (SYSTEM_CHANGED if bound[0] != prefix[0] else "")
        return None

    def bind(self, doc: dict, recorded: Recorded, message: dict) -> None:
        """Binds the thinking blocks of an answer to the prefix of the request that produced it."""
        if not self.applies(doc, recorded):
            return
        prefix = self._prefix(doc, list(doc.get("messages") or []))
        with self._lock:
            for block in message["content"]:
                if block["type"] == "thinking":
                    self.prefixes[block["signature"]] = prefix


# providers ---------------------------------------------------------------------------------------
class Anthropic:
    """Anthropic's own API: its paths, its rules and texts, its answers."""

    name = "anthropic"
    signs_in_stream = True  # a stream sends each thinking block's signature (a `signature_delta`)
    pings = True  # and `ping` events
    thinks_when_done = False  # a final answer carries no thinking block

    def matches(self, route: str) -> bool:
        return route.rstrip("/").endswith("/v1/messages")

    def thinks(self, doc: dict) -> bool:
        return thinking_enabled(doc)

    def request(self, doc: dict, recorded: Recorded) -> tuple[dict, Reply | None]:
        """The body as the model takes it, or the refusal of what the route wants of it."""
        return doc, None

    def refusal(self, fake: MessagesFake, doc: dict, recorded: Recorded) -> Reply | None:
        asked = betas(recorded.headers.get("anthropic-beta"))
        problem = self.problem(fake, doc, asked) or fake.binding.check(doc, recorded)
        return None if problem is None else self.error(400, problem)

    def error(self, status: int, message: str) -> Reply:
        return error(message)

    def problem(self, fake: MessagesFake, doc: dict, asked: frozenset[str] = frozenset()) -> str | None:
        """What Claude refuses in a request, in its words; None if nothing. `asked`: the request's betas."""
        messages = doc.get("messages")
        if not isinstance(messages, list):
            return thinking_off_problem(doc)
        unsigned = _unsigned_block(messages)
        if unsigned is not None:
            return unsigned
        if not thinking_enabled(doc):
            return thinking_off_problem(doc)
        last = max((i for i, m in enumerate(messages) if _is_role(m, "assistant")), default=None)
        for index, message in enumerate(messages):
            if not _is_role(message, "assistant"):
                continue
            for position, block in enumerate(_blocks(message)):
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "thinking":
                    signature = block.get("signature")
                    issued_text = fake.signatures.get(signature) if isinstance(signature, str) else None
                    if issued_text and block.get("thinking") == "":  # emptied, its signature kept
                        if REDACT_THINKING_BETA in asked:
                            issued_text = ""
                        elif index == last:
                            return MODIFIED.format(index=index, block=position)
                    if issued_text is None or issued_text != block.get("thinking"):
                        return INVALID_SIGNATURE.format(index=index, block=position)
                    if fake.models.get(signature) != doc.get("model"):  # a block another model signed
                        return INVALID_SIGNATURE.format(index=index, block=position)
                elif block.get("type") == "redacted_thinking" and (
                    block.get("data") not in fake.redacted or fake.models.get(block.get("data")) != doc.get("model")
                ):
                    return INVALID_DATA.format(index=index, block=position)
        if last is None or not _tool_uses(messages[last]):
            return None
        content = _blocks(messages[last])
        first = content[0].get("type") if isinstance(content[0], dict) else None
        if first not in THINKING_TYPES:
            return MISSING_THINKING.format(index=last, found=first)
        issued = fake.issued.get(str(_tool_uses(messages[last])[0].get("id")))
        if issued is None:
            return None
        sent = [
            (position, b)
            for position, b in enumerate(content)
            if isinstance(b, dict) and b.get("type") in THINKING_TYPES
        ]
        for number, expected in enumerate(issued):
            if number >= len(sent) or not _as_issued(sent[number][1], expected, asked):
                position = sent[number][0] if number < len(sent) else sent[-1][0] + 1
                return MODIFIED.format(index=last, block=position)
        if len(sent) > len(issued):
            return MODIFIED.format(index=last, block=sent[len(issued)][0])
        return None

    def message_id(self) -> str:
        return _random_id("msg_01")

    def tool_use_id(self) -> str:
        return _random_id("toolu_01")

    def signature(self, message_id: str) -> str:
        return _opaque(96)

    def thinking_text(self, step: int, tool: str, options: Options) -> str:
        # Quotes, a newline and non-ASCII text: the block must come back exactly as issued.
        text = f'The user asks what is in a directory (step {step + 1}). I should call `{tool}` — "ok" ✓.\n\n'
        return text + (options.say or "")


class Vertex(Anthropic):
    """Claude on Vertex AI: Anthropic's rules behind Vertex's routes, its request ids."""

    name = "vertex_anthropic"

    def matches(self, route: str) -> bool:
        return _RAW_PREDICT.search(route) is not None

    def request(self, doc: dict, recorded: Recorded) -> tuple[dict, Reply | None]:
        route = _RAW_PREDICT.search(recorded.path.split("?")[0])
        assert route is not None
        # What the Anthropic SDK's Vertex client sends (src/anthropic/lib/vertex/_client.py): checked, since a proxy
        # that changed it would be caught nowhere else. (Vertex's own texts for these are not known.)
        if doc.get("anthropic_version") != VERTEX_VERSION or "model" in doc:
            message = f"fake Vertex: anthropic_version must be {VERTEX_VERSION} and the body must name no model"
            return doc, self.error(400, message)
        if bool(doc.get("stream")) != (route["method"] == "streamRawPredict"):
            return doc, self.error(400, f"fake Vertex: stream {doc.get('stream')!r} on {route['method']}")
        return {**doc, "model": route["model"]}, None

    def error(self, status: int, message: str) -> Reply:
        reply = super().error(status, message)
        reply.doc["request_id"] = reply.doc["request_id"].replace("req_", "req_vrtx_", 1)
        return reply


class CopilotMessages(Anthropic):
    """Claude behind GitHub Copilot's `/v1/messages`: Anthropic's rules and texts in Copilot's envelope."""

    name = "copilot_messages"

    def matches(self, route: str) -> bool:
        route = route.rstrip("/")
        return route.startswith("/copilot/") and route.endswith("/v1/messages")

    def error(self, status: int, message: str) -> Reply:
        return Reply(status, {"error": {"message": message, "code": "invalid_request_body"}})


class DeepSeek(Anthropic):
    """DeepSeek's Anthropic-compatible route: thinking by default, every turn's back, signed with the message id."""

    name = "deepseek_anthropic"
    signs_in_stream = False
    pings = False
    thinks_when_done = True

    def matches(self, route: str) -> bool:
        return route.rstrip("/").endswith("/anthropic/v1/messages")

    def thinks(self, doc: dict) -> bool:
        thinking = doc.get("thinking")
        return not (isinstance(thinking, dict) and thinking.get("type") == "disabled")

    def refusal(self, fake: MessagesFake, doc: dict, recorded: Recorded) -> Reply | None:
        messages = doc.get("messages") or []
        for index, message in enumerate(messages):
            if _has(message, "redacted_thinking"):
                column = recorded.body.find(b'"redacted_thinking"') + 1
                return self.error(422, REDACTED_UNKNOWN.format(index=index, column=column))
        effort = (doc.get("output_config") or {}).get("effort") or doc.get("reasoning_effort")
        if not self.thinks(doc) and effort is not None:
            return self.error(400, THINKING_OFF_WITH_EFFORT)
        if self.thinks(doc):
            for message in messages:
                if _is_role(message, "assistant") and _has(message, "tool_use") and not _has(message, "thinking"):
                    return self.error(400, THINKING_MISSING)
        return None

    def error(self, status: int, message: str) -> Reply:
        envelope = {"message": message, "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}
        return Reply(status, {"error": envelope})

    def message_id(self) -> str:
        return str(uuid.uuid4())

    def tool_use_id(self) -> str:
        return f"call_{uuid.uuid4().hex[:24]}"

    def signature(self, message_id: str) -> str:
        return message_id

    def thinking_text(self, step: int, tool: str, options: Options) -> str:
        return f'The user asks what is in a directory (step {step + 1}).\nI should list it — "ok" ✓.'


class Kimi(Anthropic):
    """Kimi on Moonshot's Anthropic-compatible API: every tool turn's thinking back, with Kimi's chat text; its
    signatures have a shape of their own (dots, a colon, no base64 padding): nothing may judge them by it."""

    name = "kimi_anthropic"
    pings = False

    def matches(self, route: str) -> bool:
        route = route.rstrip("/")
        return route.endswith(("/moonshot/anthropic/v1/messages", "/coding/v1/messages"))

    def thinks(self, doc: dict) -> bool:
        return thinking_enabled(doc) or str(doc.get("model", "")).startswith(KIMI_ALWAYS_THINKING)

    def refusal(self, fake: MessagesFake, doc: dict, recorded: Recorded) -> Reply | None:
        if not self.thinks(doc):
            return None
        index = 1 if doc.get("system") else 0  # Kimi's own list: the system prompt, then each message
        for message in doc.get("messages") or []:
            if _is_role(message, "assistant") and _has(message, "tool_use") and not _has(message, "thinking"):
                return Reply(
                    400,
                    {
                        "error": {
                            "type": "invalid_request_error",
                            "message": KIMI_THINKING_MISSING.format(index=index),
                        },
                        "type": "error",
                    },
                )
            results = sum(1 for b in _blocks(message) if isinstance(b, dict) and b.get("type") == "tool_result")
            index += results if _is_role(message, "user") and results else 1
        return None

    def message_id(self) -> str:
        return f"msg_{uuid.uuid4().hex[:24]}"

    def tool_use_id(self) -> str:
        return f"functions.list_directory:{uuid.uuid4().int % 1000}"

    def signature(self, message_id: str) -> str:
        return f"kimi.v1:{os.urandom(9).hex()}.{base64.urlsafe_b64encode(os.urandom(7)).decode().rstrip('=')}"

    def thinking_text(self, step: int, tool: str, options: Options) -> str:
        return f"Step {step + 1}: the user wants a listing, so I call {tool}."


# the format ---------------------------------------------------------------------------------------
class MessagesFake:
    """The Anthropic Messages format as one provider serves it."""

    def __init__(self, provider: Anthropic | None = None) -> None:
        self.provider = provider or Anthropic()
        self.name = self.provider.name
        self.issued: dict[str, list[dict]] = {}  # tool_use id -> the thinking blocks issued with it, in order
        self.signatures: dict[str, str] = {}  # signature -> the thinking text it was issued for
        self.redacted: set[str] = set()  # redacted_thinking data issued
        self.models: dict[str, str] = {}  # signature or redacted data -> the model it was issued for
        self.bodies: list[dict] = []  # the bodies as they arrived, for tests to see what reached the provider
        self.binding = Binding()
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return self.provider.matches(path.split("?")[0])

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        self.bodies.append(doc)
        doc, refused = self.provider.request(doc, recorded)
        refused = refused or self.provider.refusal(self, doc, recorded)
        if refused is not None:
            return refused
        message = self.answer(doc, options, recorded.headers.get("x-fake-redacted"), omitted(recorded))
        self.binding.bind(doc, recorded, message)
        if doc.get("stream"):
            return Reply(200, events=self.stream(message, options))
        return Reply(200, message)

    def stream(self, message: dict, options: Options) -> list[bytes]:
        """The SSE events that carry `message`, as the provider streams them."""
        return stream_events(message, options, signed=self.provider.signs_in_stream, pings=self.provider.pings)

    def validate(self, doc: dict, asked: frozenset[str] = frozenset()) -> str | None:
        """What the provider's model refuses in a request, in its words (Claude's, as Bedrock hands it on); `asked`:
        the request's betas."""
        return self.provider.problem(self, doc, asked)

    # answers ---------------------------------------------------------------------------------
    def answer(self, doc: dict, options: Options, redacted: str | None = None, omitted: bool = False) -> dict:
        messages = doc.get("messages") or []
        loop = messages[_loop_start(messages) :]
        done_steps = sum(1 for m in loop if _is_role(m, "assistant") and _tool_uses(m))
        message_id = self.provider.message_id()
        if _users_turn(messages) and done_steps < options.steps:
            content = self._tool_turn(doc, options, redacted, done_steps, message_id, omitted)
            stop_reason = "tool_use"
        else:
            words = [FINAL_ANSWER] + [" More."] * (options.events or 0)
            content, stop_reason = [{"type": "text", "text": "".join(words)}], "end_turn"
            if self.provider.thinks_when_done and self.provider.thinks(doc):
                text = self.provider.thinking_text(done_steps, _tool_name(doc), options)
                content.insert(
                    0, {"type": "thinking", "thinking": text, "signature": self.provider.signature(message_id)}
                )
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": str(doc.get("model", "")),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }

    def _tool_turn(
        self, doc: dict, options: Options, redacted: str | None, step: int, message_id: str, omitted: bool
    ) -> list[dict]:
        asked = call_for(options, _tool_names(doc))
        name = asked.name if asked else _tool_name(doc)
        thinking: list[dict] = []
        if self.provider.thinks(doc):
            if redacted != "1":
                text = "" if omitted else self.provider.thinking_text(step, name, options)
                thinking.append(
                    {"type": "thinking", "thinking": text, "signature": self.provider.signature(message_id)}
                )
            if redacted in ("1", "both"):
                thinking.append({"type": "redacted_thinking", "data": _opaque(160)})
        text = [{"type": "text", "text": options.content}] if options.content else []
        uses = [
            {
                "type": "tool_use",
                "id": self.provider.tool_use_id(),
                "name": name,
                "input": dict(asked.arguments) if asked else {"path": f"dir{i}"},
            }
            for i in range(options.parallel)
        ]
        with self._lock:
            for block in thinking:
                if block["type"] == "thinking":
                    self.signatures[block["signature"]] = block["thinking"]
                    self.models[block["signature"]] = doc.get("model")
                else:
                    self.redacted.add(block["data"])
                    self.models[block["data"]] = doc.get("model")
            for use in uses:
                self.issued[use["id"]] = [dict(block) for block in thinking]
        return thinking + text + uses


def omitted(recorded: Recorded) -> bool:
    """Whether a test asked for thinking blocks with an empty text (`x-fake-display: omitted`)."""
    return recorded.headers.get("x-fake-display") == "omitted"


def _tool_names(doc: dict) -> list[str]:
    tools = [t.get("name") for t in doc.get("tools") or [] if isinstance(t, dict)]
    return [t for t in tools if isinstance(t, str) and t]


def _tool_name(doc: dict) -> str:
    return next(iter(_tool_names(doc)), "list_directory")


def stream_events(message: dict, options: Options, *, signed: bool = True, pings: bool = True) -> list[bytes]:
    """The SSE events that carry `message`, in the order the API sends them; a provider that does not stream
    signatures opens a thinking block without one and sends none after it (`signed`), one may send no pings."""
    events = []

    def emit(data: dict) -> None:
        events.append(sse_event(data, data["type"]))

    emit({"type": "message_start", "message": {**message, "content": [], "stop_reason": None}})
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "redacted_thinking":
            emit(_start(index, block))  # whole in the start event, no deltas
        elif kind == "tool_use":
            emit(_start(index, {**block, "input": {}}))
        elif kind == "thinking":
            emit(_start(index, {"type": "thinking", "thinking": "", **({"signature": ""} if signed else {})}))
        else:
            emit(_start(index, {"type": "text", "text": ""}))
        if index == 0 and pings:
            events.append(sse_event({"type": "ping"}, "ping"))
        if kind == "thinking":
            for piece in re.findall(r"\S+\s*|\s+", block["thinking"]):
                emit(_delta(index, {"type": "thinking_delta", "thinking": piece}))
            if signed:
                emit(_delta(index, {"type": "signature_delta", "signature": block["signature"]}))
        elif kind == "text":
            for piece in re.findall(r"\S+\s*|\s+", block["text"]):
                emit(_delta(index, {"type": "text_delta", "text": piece}))
        elif kind == "tool_use":
            arguments = json.dumps(block["input"])
            emit(_delta(index, {"type": "input_json_delta", "partial_json": ""}))
            for start in range(0, len(arguments), 5):
                emit(_delta(index, {"type": "input_json_delta", "partial_json": arguments[start : start + 5]}))
        emit({"type": "content_block_stop", "index": index})
    events += [sse_event({"type": "ping"}, "ping") for _ in range(options.events or 0) if pings]
    emit(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        }
    )
    emit({"type": "message_stop"})
    return events


def _start(index: int, block: dict) -> dict:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": delta}
