"""Fake `/chat/completions` providers, each with its real rule and error text.

The dialect is chosen the way the real request would reach each service:

* path `/v1beta/openai/...`: Gemini's OpenAI-compatible endpoint. The first
  tool call of a turn carries `extra_content.google.thought_signature`, which
  must come back on that call; errors are Gemini's, in a JSON array.
* path `/openai/deployments/NAME/...`: Azure OpenAI; the deployment NAME is the
  model (the body names none) and picks the dialect below.
* path `/default-deepseek/...`: a gateway that sends every request to DeepSeek
  thinking mode, whatever the body says: requests there name no model.
* path `/litellm/...`: a LiteLLM proxy in front of Gemini 3. Signatures ride in
  `call_<hex>__thought__<signature>` ids and `provider_specific_fields`; when a
  client loses them LiteLLM sends a dummy signature (answer still 200, marked
  degraded in the `x-fake-degraded` header).
* a model with a "/" (`google/gemini-3-pro-preview`, `anthropic/claude-…`):
  OpenRouter. `reasoning_details` must come back unmodified; errors arrive in
  OpenRouter's "Provider returned error" wrapper.
* "gemini-*": GitHub Copilot serving Gemini. `reasoning_opaque` must come back
  on every assistant tool-call message of the current turn; `content: []` is
  refused with `invalid_request_body`. With `x-fake-bare: 1` every refusal is
  that bare body, as Copilot answered a missing `reasoning_opaque`
  (zed-industries/zed #43024).
* "claude-*": GitHub Copilot serving a Claude model that always thinks
  (claude-sonnet-5 and its kin; github/copilot-sdk #2352): a tool turn carries
  `reasoning_opaque` (an Anthropic signature) and no `reasoning_text`. Copilot
  hands the turn to Anthropic, which wants the final assistant message to start
  with its thinking block: without `reasoning_opaque` there, Anthropic's text in
  Copilot's envelope (the fake's assumption: Copilot passes Vertex's text on the
  same way for Gemini); a `reasoning_opaque` it did not issue, "messages.N.
  content.0: Invalid signature in thinking block" as Copilot words it
  (caozhiyuan/copilot-api #63). `x-fake-bare: 1` as for Gemini.
* "deepseek-*": DeepSeek thinking mode. Every assistant tool-call message must
  carry `reasoning_content`.
* anything else: a plain OpenAI-compatible host with no reasoning rules.

A call is recognised by its id, or by its function name and arguments when a
client rewrote the id (the real services check the signature, not the id).
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import time
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, sse_event

COPILOT_INVALID_BODY = {"error": {"message": "invalid request body", "code": "invalid_request_body"}}
VERTEX_MISSING_SIGNATURE = (
    "Unable to submit request because function call `default_api:{name}` in the {block}. content block is "
    "missing a `thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/"
    "thought-signatures"
)
GEMINI_MISSING_SIGNATURE = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
    "correctly, and missing thought_signature may lead to degraded model performance. Additional data, function "
    "call `default_api:{name}` , position {block}. Please refer to "
    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
DEEPSEEK_MISSING_REASONING = (
    "Missing `reasoning_content` field in the assistant message at message index {index}. For more "
    "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
)
OPENROUTER_GEMINI_DETAILS = (
    "Gemini models require OpenRouter reasoning details to be preserved in each request. Please refer to our "
    "docs: https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks. Upstream error: "
)
ANTHROPIC_EXPECTED_THINKING = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
    "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost "
    "set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. "
    "To avoid this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
# The placeholder LiteLLM sends for Gemini 3 when a call lost its signature.
LITELLM_DUMMY = base64.b64encode(b"skip_thought_signature_validator").decode()


def dialect_of(model: str, path: str) -> str:
    route = path.split("?")[0]
    deployment = re.search(r"/openai/deployments/([^/]+)/", route)
    if deployment:  # Azure OpenAI: the deployment in the path is the model, whatever the body says
        return dialect_of(deployment.group(1), "")
    if route.startswith("/default-deepseek/"):  # a gateway whose route picks the model; the body names none
        return "deepseek"
    if "/openai/" in route:
        return "gemini_compat"
    if route.startswith("/litellm/"):
        return "litellm"
    if "/" in model:
        return "openrouter"
    if model.startswith("gemini"):
        return "copilot"
    if model.startswith("claude-"):
        return "copilot_claude"
    if model.startswith("deepseek"):
        return "deepseek"
    return "plain"


def content_block(messages: list[dict], position: int) -> int:
    """1-based index of a message among the contents Gemini (or Anthropic) builds from a chat.

    System messages leave; consecutive tool results become one block.
    """
    block = 0
    previous_role = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "system":
            continue
        if not (role == "tool" and previous_role == "tool"):
            block += 1
        previous_role = role
        if index == position:
            return block
    return block


def _signature() -> str:
    return base64.b64encode(os.urandom(96)).decode()


def _fingerprint(call: dict) -> tuple[str, str]:
    function = call.get("function") or {}
    try:
        arguments = json.dumps(json.loads(function.get("arguments") or "{}"), sort_keys=True)
    except ValueError:
        arguments = function.get("arguments") or ""
    return function.get("name", ""), arguments


def _current_turn(messages: list[dict]) -> list[tuple[int, dict, list[dict]]]:
    """The assistant tool-call messages after the last user message: (index, message, calls)."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return [
        (i, m, m.get("tool_calls"))
        for i, m in enumerate(messages)
        if i > last_user and m.get("role") == "assistant" and m.get("tool_calls")
    ]


def _delta(d: dict, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


class ChatDialect:
    name = "chat"

    def __init__(self) -> None:
        self.issued: dict[str, dict[str, Any]] = {}  # tool call id -> reasoning fields issued on its message
        self.issued_calls: dict[str, dict[str, Any]] = {}  # tool call id -> the call exactly as issued
        self._by_fingerprint: dict[tuple[str, str], str] = {}
        self.degraded: list[str] = []  # LiteLLM: ids of calls sent with a dummy signature
        self.opaques: set[str] = set()  # Copilot Claude: every reasoning_opaque issued
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return path.split("?")[0].endswith("/chat/completions")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        dialect = dialect_of(str(doc.get("model", "")), recorded.path)
        messages = [m for m in doc.get("messages") or [] if isinstance(m, dict)]
        headers: dict[str, str] = {}
        error = getattr(self, f"_check_{dialect}", lambda *_: None)(messages, headers)
        if error is not None and dialect.startswith("copilot") and recorded.headers.get("x-fake-bare") == "1":
            error = (400, COPILOT_INVALID_BODY)
        if error is not None:
            return Reply(error[0], error[1])
        whole, chunks = self.answer(doc, dialect, options)
        if doc.get("stream"):
            return Reply(200, events=[sse_event(c) for c in chunks] + [sse_event("[DONE]")], headers=headers)
        return Reply(200, whole, headers=headers)

    def issued_for(self, call: dict) -> tuple[str, dict[str, Any]]:
        """The id the fake gave a call the client sent back (found by id, else name and arguments), and its fields."""
        with self._lock:
            call_id = call.get("id") if call.get("id") in self.issued else self._by_fingerprint.get(_fingerprint(call))
            return call_id or "", self.issued.get(call_id or "", {})

    # rules -----------------------------------------------------------------------------------

    def _check_copilot(self, messages: list[dict], headers: dict) -> tuple[int, Any] | None:
        for message in messages:
            if message.get("role") == "assistant" and message.get("content") == []:
                return 400, COPILOT_INVALID_BODY
        for index, message, calls in _current_turn(messages):
            opaque = message.get("reasoning_opaque")
            if opaque is None:
                name = calls[0].get("function", {}).get("name", "")
                text = VERTEX_MISSING_SIGNATURE.format(name=name, block=content_block(messages, index))
                return 400, {"error": {"message": text, "code": "invalid_request_body"}}
            if opaque != self.issued_for(calls[0])[1].get("reasoning_opaque"):
                return 400, {"error": {"message": "Thought signature is not valid.", "code": "invalid_request_body"}}
        return None

    def _check_copilot_claude(self, messages: list[dict], headers: dict) -> tuple[int, Any] | None:
        for message in messages:
            if message.get("role") == "assistant" and message.get("content") == []:
                return 400, COPILOT_INVALID_BODY
        for index, message in enumerate(messages):
            opaque = message.get("reasoning_opaque") if message.get("role") == "assistant" else None
            if opaque is not None and opaque not in self.opaques:
                text = f"messages.{content_block(messages, index) - 1}.content.0: Invalid signature in thinking block"
                return 400, {"error": {"message": text, "code": "invalid_request_body"}}
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
        if last is not None and messages[last].get("tool_calls") and messages[last].get("reasoning_opaque") is None:
            text = ANTHROPIC_EXPECTED_THINKING.format(index=content_block(messages, last) - 1)
            return 400, {"error": {"message": text, "code": "invalid_request_body"}}
        return None

    def _check_deepseek(self, messages: list[dict], headers: dict) -> tuple[int, Any] | None:
        for index, message in enumerate(messages):
            if message.get("role") == "assistant" and message.get("tool_calls"):
                if message.get("reasoning_content") is None:
                    text = DEEPSEEK_MISSING_REASONING.format(index=index)
                    return 400, {
                        "error": {
                            "message": text,
                            "type": "invalid_request_error",
                            "param": None,
                            "code": "invalid_request_error",
                        }
                    }
        return None

    def _check_openrouter(self, messages: list[dict], headers: dict) -> tuple[int, Any] | None:
        turn = _current_turn(messages)
        for index, message, calls in turn:
            issued = self.issued_for(calls[0])[1].get("reasoning_details")
            details = message.get("reasoning_details")
            if issued is None or details == issued:
                continue
            if issued[-1].get("format") == "google-gemini-v1":
                name = calls[0].get("function", {}).get("name", "")
                upstream = VERTEX_MISSING_SIGNATURE.format(name=name, block=content_block(messages, index))
                if details:  # sent, but not as issued
                    upstream = "Corrupted thought signature."
                raw = OPENROUTER_GEMINI_DETAILS + json.dumps(
                    {"error": {"code": 400, "message": upstream, "status": "INVALID_ARGUMENT"}}, indent=2
                )
                return 400, _openrouter_error(raw, "Google")
            if message is turn[-1][1]:  # Anthropic checks the final assistant message
                position = content_block(messages, index) - 1
                error = ANTHROPIC_EXPECTED_THINKING.format(index=position)
                if details:
                    error = f"messages.{position}.content.0: Invalid `signature` in `thinking` block"
                raw = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": error}})
                return 400, _openrouter_error(raw, "Anthropic")
        return None

    def _check_gemini_compat(self, messages: list[dict], headers: dict) -> tuple[int, Any] | None:
        for index, _message, calls in _current_turn(messages):
            issued = self.issued_calls.get(self.issued_for(calls[0])[0], {}).get("extra_content")
            sent = calls[0].get("extra_content")
            if issued is None or sent == issued:
                continue
            name = calls[0].get("function", {}).get("name", "")
            text = GEMINI_MISSING_SIGNATURE.format(name=name, block=content_block(messages, index))
            if sent:
                # Unconfirmed wording, seen only in https://github.com/langchain-ai/langchain-google/pull/1581
                text = "Thought signature is not valid."
            return 400, [{"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT"}}]
        return None

    def _check_litellm(self, messages: list[dict], headers: dict) -> tuple[int, Any] | None:
        known_ids = {c.get("id") for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []}
        for message in messages:
            if message.get("role") == "tool" and message.get("tool_call_id") not in known_ids:
                # The fake's own wording, after OpenAI's rule that LiteLLM applies when mapping tool results.
                text = (
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'."
                )
                return 400, {
                    "error": {"message": text, "type": "invalid_request_error", "param": "messages", "code": "400"}
                }
        for _index, _message, calls in _current_turn(messages):
            first = calls[0]
            issued = self.issued_calls.get(self.issued_for(first)[0], {})
            signature = (first.get("provider_specific_fields") or {}).get("thought_signature")
            signature = signature or ((first.get("function") or {}).get("provider_specific_fields") or {}).get(
                "thought_signature"
            )
            if not signature and "__thought__" in (first.get("id") or ""):
                signature = first["id"].split("__thought__", 1)[1]
            if not signature:
                self.degraded.append(first.get("id") or "")
                headers["x-fake-degraded"] = "dummy-thought-signature"
                continue
            if signature != (issued.get("provider_specific_fields") or {}).get("thought_signature"):
                text = "litellm.BadRequestError: VertexAIException BadRequestError - Thought signature is not valid."
                return 400, {"error": {"message": text, "type": None, "param": None, "code": "400"}}
        return None

    # answers ---------------------------------------------------------------------------------

    def answer(self, doc: dict, dialect: str, options: Options) -> tuple[dict, list[dict]]:
        """The whole answer and the stream chunks that carry it."""
        model = str(doc.get("model", ""))
        messages = doc.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        done_steps = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant" and m.get("tool_calls"))
        response_id = uuid.uuid4().hex[:24]
        if messages and messages[-1].get("role") in ("user", "tool") and done_steps < options.steps:
            message, chunks = self._tool_turn(doc, dialect, options)
        else:
            message, chunks = self._final_turn(dialect, options)
        for chunk in chunks:
            chunk.update(
                {"id": response_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
            )
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        whole = {
            "id": response_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        return whole, chunks

    def _tool_turn(self, doc: dict, dialect: str, options: Options) -> tuple[dict, list[dict]]:
        tools = [t.get("function", {}).get("name") for t in doc.get("tools") or [] if isinstance(t, dict)]
        tools = [t for t in tools if t] or ["list_directory"]
        # Step k of a tool loop calls the k-th tool offered (an agent reading, then writing, ...).
        messages = doc.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        step = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant" and m.get("tool_calls"))
        name = tools[step % len(tools)]
        schema = next(
            (
                t.get("function", {}).get("parameters")
                for t in doc.get("tools") or []
                if isinstance(t, dict) and t.get("function", {}).get("name") == name
            ),
            None,
        )
        calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:20]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(_arguments(schema, i, options.say))},
            }
            for i in range(options.parallel)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": options.content}
        build = getattr(self, f"_turn_{dialect}", self._turn_plain)
        fields, chunks = build(message, calls, name, str(doc.get("model", "")), options)
        message["tool_calls"] = calls
        with self._lock:
            for call in calls:
                self.issued[call["id"]] = fields
                self.issued_calls[call["id"]] = json.loads(json.dumps(call))
                self._by_fingerprint[_fingerprint(call)] = call["id"]
        return message, chunks

    def _turn_copilot(self, message: dict, calls: list[dict], name: str, model: str, options: Options):
        text = f"**Planning**\n\nI should call `{name}` to answer.\n\n"
        opaque = _signature()
        message.update({"reasoning_text": text, "reasoning_opaque": opaque})
        half = len(text) // 2
        chunks = [
            _delta({"content": None, "role": "assistant", "reasoning_text": text[:half]}),
            _delta({"content": None, "role": "assistant", "reasoning_text": text[half:]}),
        ]
        chunks += [_delta({"content": None, "role": "assistant"}) for _ in range(options.events or 0)]
        if options.content:
            chunks.append(_delta({"content": options.content, "role": "assistant"}))
        for i, call in enumerate(calls):
            d: dict[str, Any] = {"content": None, "role": "assistant", "tool_calls": [{**call, "index": i}]}
            if i == 0:
                d["reasoning_opaque"] = opaque
            chunks.append(_delta(d, "tool_calls" if i == len(calls) - 1 else None))
        return {"reasoning_opaque": opaque, "reasoning_text": text}, chunks

    def _turn_copilot_claude(self, message: dict, calls: list[dict], name: str, model: str, options: Options):
        opaque = "Eq" + base64.b64encode(os.urandom(180)).decode()  # Anthropic's signature, as Copilot passes it
        message["reasoning_opaque"] = opaque
        with self._lock:
            self.opaques.add(opaque)
        chunks = [_delta({"content": None, "role": "assistant"}) for _ in range(1 + (options.events or 0))]
        if options.content:
            chunks.append(_delta({"content": options.content, "role": "assistant"}))
        for i, call in enumerate(calls):
            d: dict[str, Any] = {"content": None, "role": "assistant", "tool_calls": [{**call, "index": i}]}
            if i == 0:
                d["reasoning_opaque"] = opaque
            chunks.append(_delta(d, "tool_calls" if i == len(calls) - 1 else None))
        return {"reasoning_opaque": opaque}, chunks

    def _turn_deepseek(self, message: dict, calls: list[dict], name: str, model: str, options: Options):
        text = f"The user wants a listing. I will call {name}." + (f" {options.say}" if options.say else "")
        message["reasoning_content"] = text
        message["content"] = options.content or ""
        chunks = [_delta({"role": "assistant", "content": None, "reasoning_content": ""})]
        chunks += [_delta({"content": None, "reasoning_content": piece}) for piece in re.findall(r"\S+\s*", text)]
        chunks += [_delta({"content": None, "reasoning_content": ""}) for _ in range(options.events or 0)]
        chunks += _argument_fragments(calls)
        chunks.append(_delta({"content": "", "reasoning_content": None}, "tool_calls"))
        return {"reasoning_content": text}, chunks

    def _turn_openrouter(self, message: dict, calls: list[dict], name: str, model: str, options: Options):
        text = f"Listing the directory with {name}."
        signature = _signature()
        if model.startswith("google/"):
            fragments = [
                {"type": "reasoning.text", "text": text[:10], "format": "google-gemini-v1", "index": 0},
                {"type": "reasoning.text", "text": text[10:], "format": "google-gemini-v1", "index": 0},
                {
                    "type": "reasoning.encrypted",
                    "data": signature,
                    "id": calls[0]["id"],
                    "format": "google-gemini-v1",
                    "index": 0,
                },
            ]
            details = [{**fragments[0], "text": text}, fragments[2]]
        else:
            fragments = [
                {
                    "type": "reasoning.text",
                    "text": text[:10],
                    "signature": "",
                    "format": "anthropic-claude-v1",
                    "index": 0,
                },
                {"type": "reasoning.text", "text": text[10:], "format": "anthropic-claude-v1", "index": 0},
                {"type": "reasoning.text", "signature": signature, "format": "anthropic-claude-v1", "index": 0},
            ]
            details = [{**fragments[0], "text": text, "signature": signature}]
        message.update({"reasoning": text, "reasoning_details": details})
        chunks = [_delta({"role": "assistant", "content": "", "reasoning_details": []})]
        chunks += [
            _delta({"role": "assistant", "content": "", "reasoning": f.get("text"), "reasoning_details": [f]})
            for f in fragments
        ]
        chunks += [_delta({"role": "assistant", "tool_calls": [{**call, "index": i}]}) for i, call in enumerate(calls)]
        chunks.append(_delta({}, "tool_calls"))
        return {"reasoning_details": details}, chunks

    def _turn_gemini_compat(self, message: dict, calls: list[dict], name: str, model: str, options: Options):
        for call in calls:
            call["id"] = f"function-call-{uuid.uuid4()}"
        calls[0]["extra_content"] = {"google": {"thought_signature": _signature()}}
        chunks = [_delta({"role": "assistant", "tool_calls": [{**call, "index": i}]}) for i, call in enumerate(calls)]
        chunks.append(_delta({}, "tool_calls"))
        return {}, chunks

    def _turn_litellm(self, message: dict, calls: list[dict], name: str, model: str, options: Options):
        signature = _signature()
        for call in calls:
            call["id"] = f"call_{uuid.uuid4().hex[:28]}"
        calls[0]["id"] += f"__thought__{signature}"
        calls[0]["provider_specific_fields"] = {"thought_signature": signature}
        chunks = [_delta({"role": "assistant", "tool_calls": [{**call, "index": i}]}) for i, call in enumerate(calls)]
        chunks.append(_delta({}, "tool_calls"))
        return {}, chunks

    def _turn_plain(self, message: dict, calls: list[dict], name: str, model: str, options: Options):
        chunks = [_delta({"role": "assistant", "tool_calls": [{**call, "index": i}]}) for i, call in enumerate(calls)]
        chunks.append(_delta({}, "tool_calls"))
        return {}, chunks

    def _final_turn(self, dialect: str, options: Options) -> tuple[dict, list[dict]]:
        words = ["The", " directory", " holds", " two", " files."] + [" More."] * (options.events or 0)
        message: dict[str, Any] = {"role": "assistant", "content": "".join(words)}
        chunks = [_delta({"role": "assistant", "content": w}) for w in words]
        chunks[-1]["choices"][0]["finish_reason"] = "stop"
        if dialect == "deepseek":
            message["reasoning_content"] = "Summarise the listing."
        return message, chunks


def _arguments(schema: Any, index: int, say: str | None = None) -> dict[str, str]:
    """Arguments for a tool: a value for each required string property of its schema (and a note, if it says one)."""
    required = schema.get("required") if isinstance(schema, dict) else None
    if not required:
        arguments = {"path": f"dir{index}"}
    else:
        arguments = {
            prop: f"{prop}-{index}" if prop != "filePath" else ("README.md", "SUMMARY.md")[index % 2]
            for prop in required
        }
    return arguments | ({"note": say} if say else {})


def _argument_fragments(calls: list[dict]) -> list[dict]:
    """Tool calls streamed as DeepSeek does: id and name first, then the arguments four characters at a time."""
    chunks = []
    for i, call in enumerate(calls):
        head = {
            "index": i,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        chunks.append(_delta({"tool_calls": [head]}))
        arguments = call["function"]["arguments"]
        for j in range(0, len(arguments), 4):
            chunks.append(_delta({"tool_calls": [{"index": i, "function": {"arguments": arguments[j : j + 4]}}]}))
    return chunks


def _openrouter_error(raw: str, provider: str) -> dict:
    return {
        "error": {
            "message": "Provider returned error",
            "code": 400,
            "metadata": {"raw": raw, "provider_name": provider},
        },
        "user_id": "user_fake",
    }
