"""Fake chat completions (`POST …/chat/completions`): one fake for the wire format, a provider's rules plugged in.

`ChatFake` is the format: it reads the messages (the current turn is what follows the last user message), answers
with `x-fake-parallel` tool calls (`x-fake-steps` tool turns after the last user message, the k-th calling the k-th
tool offered, with `x-fake-content` beside them) and then a final answer, as one JSON document or as SSE chunks
(`finish_reason` on the last, then `data: [DONE]`), and keeps what it issued: the reasoning fields given with each
tool call (by id, or by function name and arguments when a client rewrote the id: the real services check the
signature, not the id), each call exactly as issued, and, for providers that answer a request that dropped reasoning
they read back, what each request let the model read (`seen`), marked in an `x-fake-degraded` header.

A provider is a small object that says where it is served (its paths, or the models it serves behind a shared
route), what its models want sent back, what it refuses with which text in which envelope, and how its answers and
streams are shaped. One `ChatFake` may hold several providers sharing one route and one record of what was issued;
it picks the one the request reaches, the way the real request would reach each service:

* path `/openai/deployments/NAME/...`: Azure OpenAI; the deployment NAME is the model (the body names none) and
  picks the provider below.
* path `/default-deepseek/...` (`DeepSeek`): a gateway that sends every request to DeepSeek thinking mode, whatever
  the body says: requests there name no model.
* path `/v1beta/openai/...` (`GeminiCompat`): Gemini's OpenAI-compatible endpoint. The first tool call of a turn
  carries `extra_content.google.thought_signature`, which must come back on that call; errors are Gemini's, in a
  JSON array.
* path `/litellm/...` (`LiteLLM`): a LiteLLM proxy in front of Gemini 3. Signatures ride in
  `call_<hex>__thought__<signature>` ids and `provider_specific_fields`; when a client loses them LiteLLM sends a
  dummy signature (answer still 200, marked degraded in the `x-fake-degraded` header).
* a model with a "/" (`google/gemini-3-pro-preview`, `anthropic/claude-…`; `OpenRouter`): `reasoning_details` must
  come back unmodified; errors arrive in OpenRouter's "Provider returned error" wrapper. An `x-ai/…` model refuses
  any `reasoning.encrypted` entry it did not issue, with xAI's "Could not decrypt the provided encrypted_content. …"
  (https://github.com/hackerai-tech/hackerai/pull/996).
* "gemini-*" (`Copilot`): GitHub Copilot serving Gemini. `reasoning_opaque` must come back on every assistant
  tool-call message of the current turn; `content: []` is refused with `invalid_request_body`. With
  `x-fake-bare: 1` every refusal is that bare body, as Copilot answered a missing `reasoning_opaque`
  (zed-industries/zed #43024).
* "claude-*" (`CopilotClaude`): GitHub Copilot serving a Claude model that always thinks (claude-sonnet-5 and its
  kin; github/copilot-sdk #2352): a tool turn carries `reasoning_opaque` (an Anthropic signature) and no
  `reasoning_text`. Copilot hands the turn to Anthropic, which wants the final assistant message to start with its
  thinking block: without `reasoning_opaque` there, Anthropic's text in Copilot's envelope (the fake's assumption:
  Copilot passes Vertex's text on the same way for Gemini); a `reasoning_opaque` it did not issue, "messages.N.
  content.0: Invalid signature in thinking block" as Copilot words it (caozhiyuan/copilot-api #63). `x-fake-bare: 1`
  as for Gemini.
* "deepseek-*" (`DeepSeek`): DeepSeek thinking mode. Every assistant tool-call message must carry
  `reasoning_content`.
* anything else (`Plain`): a plain OpenAI-compatible host with no reasoning rules.

Providers with routes of their own, each in a `ChatFake` of its own:

* `/moonshot/…` (`Moonshot`): Moonshot's Kimi (api.moonshot.ai's `/v1/chat/completions` under a prefix for the fake
  provider to route by). Its thinking models refuse an assistant tool-call message without reasoning_content, in
  Kimi's words (https://github.com/VicBilibily/GCMP/issues/162); `"thinking": {"type": "disabled"}` turns that off
  where the model allows it (https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model).
* `/api/paas/v4/…`, `/api/coding/paas/v4/…` (`Zai`): Z.ai's GLM. reasoning_content is read back in the current tool
  loop (interleaved thinking) and, with preserved thinking (`"clear_thinking": false`, the Coding Plan's default), in
  every turn (https://docs.z.ai/guides/capabilities/thinking-mode). Chunks shaped as pydantic-ai's recording
  (tests/fixtures/zai/).
* `/compatible-mode/…` (`DashScope`): Qwen on DashScope. The same, with `"preserve_thinking": true`; qwen4-max with
  `"thinking_display": "summarized"` also issues encrypted thinking on the message. Chunks shaped as vercel/ai's
  recordings (tests/fixtures/dashscope/): `"id": ""` on tool call continuations, a last chunk with no choices.
* `/minimax/…` (`MiniMax`): MiniMax. Its reasoning is a `<think>` block at the start of content or, with
  `"reasoning_split": true`, reasoning_details entries; every turn's is read back
  (https://platform.minimax.io/docs/api-reference/text-openai-api).
* `/cerebras/…` (`Cerebras`, standing for `https://api.cerebras.ai/v1/chat/completions`): a reasoning model's
  thinking comes as `reasoning` on the message (`delta.reasoning` streamed) and is taken back under that name; an
  assistant message that carries `reasoning_content` at all is refused, for every model, one line per such message
  (https://github.com/QwenLM/qwen-code/issues/11045, https://github.com/vercel/ai/issues/15042), HTTP 400, in the
  envelope https://github.com/Kilo-Org/kilocode/issues/10375 shows (the lines joined by a newline as
  https://github.com/Alishahryar1/free-claude-code/issues/1136 shows them).
* `/mistral/…` (`Mistral`): answers as Magistral does (https://docs.mistral.ai/capabilities/reasoning; the shapes of
  the real captures in tests/fixtures/mistral/): the assistant message's `content` is an array, a `thinking` chunk
  and then the answer's `text` chunk. A stream sends the thinking as arrays of one-piece `thinking` chunks closed by
  one whose `thinking` is empty, the answer as plain strings, each tool call whole in one chunk. Its request schema is
  closed: a field of an assistant message it does not know (`reasoning_content`, say) is refused with HTTP 422 and a
  validation error per field.

GLM, Qwen, MiniMax and Mistral answer a request that dropped reasoning they read back all the same, as the real ones
do (only worse): the fake says so in an `x-fake-degraded` header, and keeps in `seen` what reasoning each request let
the model read, for a test to assert the repair.
"""

from __future__ import annotations

import base64
import json
import os
import re
import string
import threading
import time
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, call_for, sse_event

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
GEMINI_DUMMIES = frozenset({b"skip_thought_signature_validator", b"context_engineering_is_the_way_to_go"})


FINAL_ANSWER = "The directory holds two files."
KIMI_MISSING = "thinking is enabled but reasoning_content is missing in assistant tool call message at index {index}"
# Kimi models that think, and those whose thinking cannot be turned off.
KIMI_THINKING = ("kimi-k2-thinking", "kimi-k2.5", "kimi-k2.6", "kimi-k2.7", "kimi-k3")
KIMI_ALWAYS = ("kimi-k2-thinking", "kimi-k2.7", "kimi-k3")
MINIMAX_FORMAT = "MiniMax-response-v1"
CEREBRAS_UNSUPPORTED = (
    "messages.{index}.assistant.reasoning_content: property 'messages.{index}.assistant.reasoning_content' is "
    "unsupported"
)
# Mistral's AssistantMessage takes these and nothing else (https://github.com/OpenMinis/OpenMinis/issues/87).
MISTRAL_ASSISTANT_FIELDS = frozenset({"role", "content", "tool_calls", "prefix"})
_DEPLOYMENT = re.compile(r"/openai/deployments/([^/]+)/")


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


def _last_user(messages: list[dict]) -> int:
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)


def _tool_turns(messages: list[dict]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")]


def _current_turn(messages: list[dict]) -> list[tuple[int, dict, list[dict]]]:
    """The assistant tool-call messages after the last user message: (index, message, calls)."""
    last_user = _last_user(messages)
    return [(i, messages[i], messages[i]["tool_calls"]) for i in _tool_turns(messages) if i > last_user]


def _pieces(text: str, size: int = 9) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


def _call_deltas(calls: list[dict], **extra: Any) -> list[dict]:
    """Each tool call whole in a delta of its own."""
    return [{**extra, "tool_calls": [{**call, "index": i}]} for i, call in enumerate(calls)]


def _argument_fragments(calls: list[dict], **extra: Any) -> list[dict]:
    """Tool calls streamed as DeepSeek does: id and name first, then the arguments four characters at a time."""
    deltas = []
    for i, call in enumerate(calls):
        head = {
            "index": i,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        deltas.append({**extra, "tool_calls": [head]})
        arguments = call["function"]["arguments"]
        for j in range(0, len(arguments), 4):
            deltas.append({**extra, "tool_calls": [{"index": i, "function": {"arguments": arguments[j : j + 4]}}]})
    return deltas


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


# xAI's text for encrypted reasoning it did not issue (https://github.com/hackerai-tech/hackerai/pull/996).
XAI_UNDECRYPTABLE = (
    "Could not decrypt the provided encrypted_content. Ensure the value is the unmodified encrypted_content from a "
    "previous response."
)


def _openrouter_error(raw: str, provider: str) -> dict:
    return {
        "error": {
            "message": "Provider returned error",
            "code": 400,
            "metadata": {"raw": raw, "provider_name": provider},
        },
        "user_id": "user_fake",
    }


# the format ---------------------------------------------------------------------------------------
class ChatFake:
    """The chat completions format as one provider, or several sharing a route, serve it."""

    def __init__(self, *providers: ChatProvider, name: str | None = None) -> None:
        self.providers: tuple[ChatProvider, ...] = providers or by_model()
        self.name = name or (self.providers[0].name if len(self.providers) == 1 else "chat")
        self.issued: dict[str, dict[str, Any]] = {}  # tool call id -> reasoning fields issued on its message
        self.issued_calls: dict[str, dict[str, Any]] = {}  # tool call id -> the call exactly as issued
        self.seen: list[dict[int, dict[str, Any]]] = []  # per request read back: message index -> the reasoning read
        self.degraded: list[str] = []  # LiteLLM: ids of calls sent with a dummy signature
        self._by_fingerprint: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return any(provider.matches(path) for provider in self.providers)

    def provider_for(self, model: str, path: str) -> ChatProvider:
        """The provider a request for `model` on `path` reaches: by route first, then by model."""
        if len(self.providers) == 1:
            return self.providers[0]
        route = path.split("?")[0]
        deployment = _DEPLOYMENT.search(route)
        if deployment:  # Azure OpenAI: the deployment in the path is the model, whatever the body says
            model, route = deployment.group(1), ""
        return next(
            (p for p in self.providers if p.claims_route(route)),
            next((p for p in self.providers if p.claims_model(model)), self.providers[-1]),
        )

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        return self.serve(doc, recorded, options)[0]

    def serve(self, doc: dict, recorded: Recorded, options: Options) -> tuple[Reply, dict | None]:
        """The reply, and the whole answer it carries (None for a refusal)."""
        provider = self.provider_for(str(doc.get("model", "")), recorded.path)
        messages = [m for m in doc.get("messages") or [] if isinstance(m, dict)]
        headers: dict[str, str] = {}
        refused = provider.refusal(self, doc, messages, recorded, headers)
        if refused is not None:
            return refused, None
        if provider.reads_back:
            dropped = self.read_back(provider, doc, messages, recorded.path)
            if dropped:
                headers["x-fake-degraded"] = provider.degraded(dropped)
        headers |= provider.headers()
        whole, events = self.answer(provider, doc, options)
        if doc.get("stream"):
            return Reply(200, events=events, headers=headers), whole
        return Reply(200, whole, headers=headers), whole

    def issued_for(self, call: dict) -> tuple[str, dict[str, Any]]:
        """The id the fake gave a call the client sent back (found by id, else name and arguments), and its fields."""
        with self._lock:
            call_id = call.get("id") if call.get("id") in self.issued else self._by_fingerprint.get(_fingerprint(call))
            return call_id or "", self.issued.get(call_id or "", {})

    def read_back(self, provider: ChatProvider, doc: dict, messages: list[dict], path: str) -> list[int]:
        """The messages whose reasoning the model reads back but did not get as issued (the request is answered)."""
        seen, dropped = {}, []
        for index in provider.turns_read(doc, messages, path):
            message = messages[index]
            with self._lock:  # by id only: a call whose id the client changed is one the model never made
                ids = [c.get("id") for c in message.get("tool_calls") or [] if c.get("id") in self.issued]
                issued = self.issued[ids[0]] if ids else None
            if issued is None:
                continue
            got = provider.reasoning_of(message, issued)
            seen[index] = got
            if got != issued:
                dropped.append(index)
        with self._lock:
            self.seen.append(seen)
        return dropped

    # answers ---------------------------------------------------------------------------------
    def answer(self, provider: ChatProvider, doc: dict, options: Options) -> tuple[dict, list[bytes]]:
        """The whole answer, and the SSE events that carry it."""
        model = str(doc.get("model", ""))
        messages = [m for m in doc.get("messages") or [] if isinstance(m, dict)]
        last_user = _last_user(messages)
        step = sum(1 for i in _tool_turns(messages) if i > last_user)
        if messages and messages[-1].get("role") in ("user", "tool") and step < options.steps:
            message, deltas = self._tool_turn(provider, doc, step, options)
        else:
            message, deltas = provider.final_turn(doc, options)
        answer_id, created = provider.answer_id(), provider.created()
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        chunks = []
        for i, delta in enumerate(deltas):
            last = i == len(deltas) - 1
            choice = {"index": 0, "delta": delta, "finish_reason": finish if last else None}
            chunk = {
                "id": answer_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [choice],
            }
            chunks.append(provider.chunk(chunk, last))
        whole = {
            "id": answer_id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        }
        if provider.usage is not None:
            whole["usage"] = dict(provider.usage)
        whole = provider.document(whole)
        return whole, [sse_event(c) for c in chunks] + provider.stream_end(answer_id, model, created)

    def _tool_turn(self, provider: ChatProvider, doc: dict, step: int, options: Options) -> tuple[dict, list[dict]]:
        offered = [t.get("function") or {} for t in doc.get("tools") or [] if isinstance(t, dict)]
        names = [f.get("name") for f in offered if f.get("name")] or ["list_directory"]
        # Step k of a tool loop calls the k-th tool offered (an agent reading, then writing, ...).
        name = names[step % len(names)]
        schema = next((f.get("parameters") for f in offered if f.get("name") == name), None)
        asked = call_for(options, names)
        calls = [
            {
                "id": provider.call_id(),
                "type": "function",
                "function": {
                    "name": asked.name if asked else name,
                    "arguments": json.dumps(asked.arguments if asked else _arguments(schema, i, options.say)),
                },
            }
            for i in range(options.parallel)
        ]
        fields, message, deltas = provider.tool_turn(self, doc, calls, options)
        with self._lock:
            for call in calls:
                self.issued[call["id"]] = fields
                self.issued_calls[call["id"]] = json.loads(json.dumps(call))
                self._by_fingerprint[_fingerprint(call)] = call["id"]
        return message, deltas


# providers ---------------------------------------------------------------------------------------
class ChatProvider:
    """A plain OpenAI-compatible host: no reasoning, no rules. The others say how they differ."""

    name = "plain"
    reads_back = False  # answers a request that dropped reasoning it reads back, marked degraded
    usage: dict[str, int] | None = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}

    def matches(self, path: str) -> bool:
        return path.split("?")[0].endswith("/chat/completions")

    def claims_route(self, route: str) -> bool:
        """Whether a request on `route` reaches this provider, whatever its model (shared routes)."""
        return False

    def claims_model(self, model: str) -> bool:
        """Whether a request for `model` reaches this provider (shared routes, once no route claimed it)."""
        return False

    def refusal(
        self, fake: ChatFake, doc: dict, messages: list[dict], recorded: Recorded, headers: dict[str, str]
    ) -> Reply | None:
        """What the provider refuses, in its words and envelope; None if nothing."""
        return None

    # what it reads back, when it does not refuse
    def turns_read(self, doc: dict, messages: list[dict], path: str) -> list[int]:
        return [i for i, m in enumerate(messages) if m.get("role") == "assistant"]

    def reasoning_of(self, message: dict, issued: dict[str, Any]) -> dict[str, Any]:
        return {name: message.get(name) for name in issued}

    def degraded(self, dropped: list[int]) -> str:
        return "reasoning dropped: " + ", ".join(f"messages[{i}]" for i in dropped)

    # its answers
    def headers(self) -> dict[str, str]:
        return {}

    def call_id(self) -> str:
        return f"call_{uuid.uuid4().hex[:20]}"

    def answer_id(self) -> str:
        return uuid.uuid4().hex[:24]

    def created(self) -> int:
        return int(time.time())

    def tool_turn(
        self, fake: ChatFake, doc: dict, calls: list[dict], options: Options
    ) -> tuple[dict[str, Any], dict, list[dict]]:
        """The reasoning fields issued, the whole message and the stream's deltas of a tool-call turn."""
        message = {"role": "assistant", "content": options.content, "tool_calls": calls}
        return {}, message, [*_call_deltas(calls, role="assistant"), {}]

    def final_turn(self, doc: dict, options: Options) -> tuple[dict, list[dict]]:
        words = ["The", " directory", " holds", " two", " files."] + [" More."] * (options.events or 0)
        return {"role": "assistant", "content": "".join(words)}, [{"role": "assistant", "content": w} for w in words]

    def chunk(self, chunk: dict, last: bool) -> dict:
        return chunk

    def stream_end(self, answer_id: str, model: str, created: int) -> list[bytes]:
        return [sse_event("[DONE]")]

    def document(self, whole: dict) -> dict:
        return whole


Plain = ChatProvider


class Copilot(ChatProvider):
    """GitHub Copilot serving Gemini: reasoning_opaque back on every tool-call message of the current turn."""

    name = "copilot"

    def claims_model(self, model: str) -> bool:
        return model.startswith("gemini")

    def refusal(self, fake, doc, messages, recorded, headers) -> Reply | None:
        error = self.problem(fake, messages)
        if error is not None and recorded.headers.get("x-fake-bare") == "1":
            return Reply(400, COPILOT_INVALID_BODY)
        return None if error is None else Reply(400, {"error": {"message": error, "code": "invalid_request_body"}})

    def problem(self, fake: ChatFake, messages: list[dict]) -> str | None:
        for message in messages:
            if message.get("role") == "assistant" and message.get("content") == []:
                return COPILOT_INVALID_BODY["error"]["message"]
        for index, message, calls in _current_turn(messages):
            opaque = message.get("reasoning_opaque")
            if opaque is None:
                name = calls[0].get("function", {}).get("name", "")
                return VERTEX_MISSING_SIGNATURE.format(name=name, block=content_block(messages, index))
            if opaque != fake.issued_for(calls[0])[1].get("reasoning_opaque"):
                return "Thought signature is not valid."
        return None

    def tool_turn(self, fake, doc, calls, options):
        text = f"**Planning**\n\nI should call `{calls[0]['function']['name']}` to answer.\n\n"
        opaque = _signature()
        message = {
            "role": "assistant",
            "content": options.content,
            "reasoning_text": text,
            "reasoning_opaque": opaque,
            "tool_calls": calls,
        }
        half = len(text) // 2
        deltas = [
            {"content": None, "role": "assistant", "reasoning_text": text[:half]},
            {"content": None, "role": "assistant", "reasoning_text": text[half:]},
        ]
        return (
            {"reasoning_opaque": opaque, "reasoning_text": text},
            message,
            deltas + self._calls(opaque, calls, options),
        )

    @staticmethod
    def _calls(opaque: str, calls: list[dict], options: Options) -> list[dict]:
        """Filler, the text said beside the calls, then the calls, the opaque on the first."""
        deltas = [{"content": None, "role": "assistant"} for _ in range(options.events or 0)]
        if options.content:
            deltas.append({"content": options.content, "role": "assistant"})
        for delta in _call_deltas(calls, content=None, role="assistant"):
            if delta["tool_calls"][0]["index"] == 0:
                delta["reasoning_opaque"] = opaque
            deltas.append(delta)
        return deltas


class CopilotClaude(Copilot):
    """GitHub Copilot serving a Claude model that always thinks: Anthropic's rules for its reasoning_opaque."""

    name = "copilot_claude"

    def __init__(self) -> None:
        self.opaques: set[str] = set()  # every reasoning_opaque issued
        self._lock = threading.Lock()

    def claims_model(self, model: str) -> bool:
        return model.startswith("claude-")

    def problem(self, fake: ChatFake, messages: list[dict]) -> str | None:
        for message in messages:
            if message.get("role") == "assistant" and message.get("content") == []:
                return COPILOT_INVALID_BODY["error"]["message"]
        for index, message in enumerate(messages):
            opaque = message.get("reasoning_opaque") if message.get("role") == "assistant" else None
            with self._lock:
                known = opaque in self.opaques
            if opaque is not None and not known:
                return f"messages.{content_block(messages, index) - 1}.content.0: Invalid signature in thinking block"
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
        if last is not None and messages[last].get("tool_calls") and messages[last].get("reasoning_opaque") is None:
            return ANTHROPIC_EXPECTED_THINKING.format(index=content_block(messages, last) - 1)
        return None

    def tool_turn(self, fake, doc, calls, options):
        opaque = "Eq" + base64.b64encode(os.urandom(180)).decode()  # Anthropic's signature, as Copilot passes it
        with self._lock:
            self.opaques.add(opaque)
        message = {"role": "assistant", "content": options.content, "reasoning_opaque": opaque, "tool_calls": calls}
        deltas = [{"content": None, "role": "assistant"}, *self._calls(opaque, calls, options)]
        return {"reasoning_opaque": opaque}, message, deltas


class DeepSeek(ChatProvider):
    """DeepSeek thinking mode: reasoning_content back on every assistant tool-call message."""

    name = "deepseek"

    def claims_route(self, route: str) -> bool:
        return route.startswith("/default-deepseek/")  # a gateway whose route picks the model; the body names none

    def claims_model(self, model: str) -> bool:
        return model.startswith("deepseek")

    def refusal(self, fake, doc, messages, recorded, headers) -> Reply | None:
        for index in _tool_turns(messages):
            if messages[index].get("reasoning_content") is None:
                text = DEEPSEEK_MISSING_REASONING.format(index=index)
                envelope = {"message": text, "type": "invalid_request_error", "param": None}
                return Reply(400, {"error": {**envelope, "code": "invalid_request_error"}})
        return None

    def tool_turn(self, fake, doc, calls, options):
        text = f"The user wants a listing. I will call {calls[0]['function']['name']}." + (
            f" {options.say}" if options.say else ""
        )
        message = {
            "role": "assistant",
            "content": options.content or "",
            "reasoning_content": text,
            "tool_calls": calls,
        }
        deltas = [{"role": "assistant", "content": None, "reasoning_content": ""}]
        deltas += [{"content": None, "reasoning_content": piece} for piece in _words(text)]
        deltas += [{"content": None, "reasoning_content": ""} for _ in range(options.events or 0)]
        deltas += _argument_fragments(calls)
        deltas.append({"content": "", "reasoning_content": None})
        return {"reasoning_content": text}, message, deltas

    def final_turn(self, doc, options):
        message, deltas = super().final_turn(doc, options)
        return {**message, "reasoning_content": "Summarise the listing."}, deltas


class OpenRouter(ChatProvider):
    """OpenRouter: reasoning_details back unmodified; the upstream's error in OpenRouter's wrapper."""

    name = "openrouter"

    def __init__(self) -> None:
        self.encrypted: dict[str, str] = {}  # each reasoning.encrypted entry's data -> the model it was issued for

    def claims_model(self, model: str) -> bool:
        return "/" in model

    def undecryptable(self, doc, messages) -> Reply | None:
        """xAI behind OpenRouter: a `reasoning.encrypted` entry issued for another model (or never) cannot be
        decrypted, in any message (https://github.com/hackerai-tech/hackerai/pull/996 removes them before every request
        that can route to xAI); xAI's text inside OpenRouter's wrapper."""
        model = str(doc.get("model", ""))
        if not model.startswith("x-ai/"):
            return None
        for message in messages:
            details = message.get("reasoning_details") if isinstance(message, dict) else None
            for entry in details if isinstance(details, list) else []:
                if isinstance(entry, dict) and entry.get("type") == "reasoning.encrypted":
                    if self.encrypted.get(str(entry.get("data"))) != model:
                        raw = json.dumps({"code": "invalid-argument", "error": XAI_UNDECRYPTABLE})
                        return Reply(400, _openrouter_error(raw, "xAI"))
        return None

    def refusal(self, fake, doc, messages, recorded, headers) -> Reply | None:
        undecryptable = self.undecryptable(doc, messages)
        if undecryptable is not None:
            return undecryptable
        turn = _current_turn(messages)
        for index, message, calls in turn:
            issued = fake.issued_for(calls[0])[1].get("reasoning_details")
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
                return Reply(400, _openrouter_error(raw, "Google"))
            if message is turn[-1][1]:  # Anthropic checks the final assistant message
                position = content_block(messages, index) - 1
                error = ANTHROPIC_EXPECTED_THINKING.format(index=position)
                if details:
                    error = f"messages.{position}.content.0: Invalid `signature` in `thinking` block"
                raw = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": error}})
                return Reply(400, _openrouter_error(raw, "Anthropic"))
        return None

    def tool_turn(self, fake, doc, calls, options):
        text = f"Listing the directory with {calls[0]['function']['name']}."
        signature = _signature()
        if str(doc.get("model", "")).startswith("google/"):
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
            self.encrypted[signature] = str(doc.get("model", ""))
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
        message = {
            "role": "assistant",
            "content": options.content,
            "reasoning": text,
            "reasoning_details": details,
            "tool_calls": calls,
        }
        deltas = [{"role": "assistant", "content": "", "reasoning_details": []}]
        deltas += [
            {"role": "assistant", "content": "", "reasoning": f.get("text"), "reasoning_details": [f]}
            for f in fragments
        ]
        deltas += [*_call_deltas(calls, role="assistant"), {}]
        return {"reasoning_details": details}, message, deltas


def _dummy_signature(extra_content: Any) -> bool:
    """Google's documented dummy signature (https://ai.google.dev/gemini-api/docs/thought-signatures), base64 as the
    Gemini API takes it, which skips the check."""
    google = extra_content.get("google") if isinstance(extra_content, dict) else None
    signature = google.get("thought_signature") if isinstance(google, dict) else None
    try:
        return isinstance(signature, str) and base64.b64decode(signature, validate=True) in GEMINI_DUMMIES
    except ValueError:
        return False


class GeminiCompat(ChatProvider):
    """Gemini's OpenAI-compatible endpoint: the first call's extra_content (its thought_signature) back on it."""

    name = "gemini_compat"

    def claims_route(self, route: str) -> bool:
        return "/openai/" in route

    def call_id(self) -> str:
        return f"function-call-{uuid.uuid4()}"

    def refusal(self, fake, doc, messages, recorded, headers) -> Reply | None:
        for index, _message, calls in _current_turn(messages):
            issued = fake.issued_calls.get(fake.issued_for(calls[0])[0], {}).get("extra_content")
            sent = calls[0].get("extra_content")
            if issued is None or sent == issued or _dummy_signature(sent):
                continue
            name = calls[0].get("function", {}).get("name", "")
            text = GEMINI_MISSING_SIGNATURE.format(name=name, block=content_block(messages, index))
            if sent:
                # Unconfirmed wording, seen only in https://github.com/langchain-ai/langchain-google/pull/1581
                text = "Thought signature is not valid."
            return Reply(400, [{"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT"}}])
        return None

    def tool_turn(self, fake, doc, calls, options):
        calls[0]["extra_content"] = {"google": {"thought_signature": _signature()}}
        return super().tool_turn(fake, doc, calls, options)


class LiteLLM(ChatProvider):
    """LiteLLM in front of Gemini 3: signatures in call ids and provider_specific_fields, a dummy one if lost."""

    name = "litellm"

    def claims_route(self, route: str) -> bool:
        return route.startswith("/litellm/")

    def call_id(self) -> str:
        return f"call_{uuid.uuid4().hex[:28]}"

    def refusal(self, fake, doc, messages, recorded, headers) -> Reply | None:
        known_ids = {c.get("id") for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []}
        for message in messages:
            if message.get("role") == "tool" and message.get("tool_call_id") not in known_ids:
                # The fake's own wording, after OpenAI's rule that LiteLLM applies when mapping tool results.
                text = (
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'."
                )
                envelope = {"message": text, "type": "invalid_request_error", "param": "messages", "code": "400"}
                return Reply(400, {"error": envelope})
        for _index, _message, calls in _current_turn(messages):
            first = calls[0]
            issued = fake.issued_calls.get(fake.issued_for(first)[0], {})
            signature = (first.get("provider_specific_fields") or {}).get("thought_signature")
            signature = signature or ((first.get("function") or {}).get("provider_specific_fields") or {}).get(
                "thought_signature"
            )
            if not signature and "__thought__" in (first.get("id") or ""):
                signature = first["id"].split("__thought__", 1)[1]
            if not signature:
                with fake._lock:
                    fake.degraded.append(first.get("id") or "")
                headers["x-fake-degraded"] = "dummy-thought-signature"
                continue
            if signature != (issued.get("provider_specific_fields") or {}).get("thought_signature"):
                text = "litellm.BadRequestError: VertexAIException BadRequestError - Thought signature is not valid."
                return Reply(400, {"error": {"message": text, "type": None, "param": None, "code": "400"}})
        return None

    def tool_turn(self, fake, doc, calls, options):
        signature = _signature()
        calls[0]["id"] += f"__thought__{signature}"
        calls[0]["provider_specific_fields"] = {"thought_signature": signature}
        return super().tool_turn(fake, doc, calls, options)


def by_model() -> tuple[ChatProvider, ...]:
    """The providers behind the shared `/chat/completions` route, in the order a request is matched to them: the
    route-claiming ones in their order, then the model-claiming ones in theirs, `Plain` for whatever is left."""
    return (OpenRouter(), Copilot(), CopilotClaude(), DeepSeek(), GeminiCompat(), LiteLLM(), Plain())


# providers on routes of their own -----------------------------------------------------------------
class RoutedHost(ChatProvider):
    """A host reached by a path prefix of its own, standing for its real address."""

    routes: tuple[str, ...] = ()
    usage = {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}

    def matches(self, path: str) -> bool:
        return any(route in path.split("?")[0] for route in self.routes) and path.endswith("/chat/completions")

    def call_id(self) -> str:
        return f"call_{uuid.uuid4().hex[:24]}"

    def answer_id(self) -> str:
        return f"chatcmpl-{uuid.uuid4()}"

    def final_turn(self, doc, options):
        return {"role": "assistant", "content": FINAL_ANSWER}, [{"content": FINAL_ANSWER}]


class Moonshot(RoutedHost):
    """Kimi: its thinking models refuse a tool-call message without reasoning_content."""

    name = "moonshot"
    routes = ("/moonshot/",)

    def refusal(self, fake, doc, messages, recorded, headers) -> Reply | None:
        model = str(doc.get("model", ""))
        turned_off = (doc.get("thinking") or {}).get("type") == "disabled" and not model.startswith(KIMI_ALWAYS)
        if not model.startswith(KIMI_THINKING) or turned_off:
            return None
        for index in _tool_turns(messages):
            if messages[index].get("reasoning_content") is None:  # "" is taken
                message = KIMI_MISSING.format(index=index)
                return Reply(400, {"error": {"type": "invalid_request_error", "message": message}, "type": "error"})
        return None

    def tool_turn(self, fake, doc, calls, options):
        text = f"The user wants a listing. I will call {calls[0]['function']['name']}."
        message = {"role": "assistant", "content": "", "reasoning_content": text, "tool_calls": calls}
        deltas = [{"role": "assistant", "reasoning_content": piece} for piece in _pieces(text)]
        return {"reasoning_content": text}, message, [*deltas, *_call_deltas(calls)]


class Zai(RoutedHost):
    """Z.ai's GLM: reasoning_content read back in the current loop, or in every turn with preserved thinking."""

    name = "zai"
    routes = ("/api/paas/v4/", "/api/coding/paas/v4/")
    reads_back = True

    def turns_read(self, doc, messages, path) -> list[int]:
        clear = (doc.get("thinking") or {}).get("clear_thinking")
        preserved = clear is False or (clear is None and "/api/coding/" in path)
        last_user = _last_user(messages)
        return [i for i in _tool_turns(messages) if preserved or i > last_user]

    def answer_id(self) -> str:
        return time.strftime("%Y%m%d%H%M%S") + uuid.uuid4().hex[:16]  # as GLM's: a time and 16 hex digits

    def call_id(self) -> str:
        return f"call_{uuid.uuid4().int % 10**19}"

    def tool_turn(self, fake, doc, calls, options):
        text = f"\nThe user asks what is there. Calling {calls[0]['function']['name']}."
        message = {"content": "", "reasoning_content": text, "role": "assistant", "tool_calls": calls}
        deltas = [{"role": "assistant", "reasoning_content": piece} for piece in _pieces(text)]
        return {"reasoning_content": text}, message, [*deltas, *_call_deltas(calls, role="assistant")]


class DashScope(RoutedHost):
    """Qwen on DashScope: reasoning_content read back with preserve_thinking; qwen4-max's encrypted thinking too."""

    name = "dashscope"
    routes = ("/compatible-mode/",)
    reads_back = True

    def turns_read(self, doc, messages, path) -> list[int]:
        last_user = _last_user(messages)
        return [i for i in _tool_turns(messages) if doc.get("preserve_thinking") is True or i > last_user]

    def tool_turn(self, fake, doc, calls, options):
        text = f"The user asks about a directory, so {calls[0]['function']['name']} it is."
        fields: dict[str, Any] = {"reasoning_content": text}
        if doc.get("model") == "qwen4-max" and doc.get("thinking_display") == "summarized":
            fields["encrypted_content"] = uuid.uuid4().hex * 4  # ciphertext, sent beside the summary
        message = {
            "content": "",
            "role": "assistant",
            **fields,
            "tool_calls": [{**c, "index": i} for i, c in enumerate(calls)],
        }
        deltas: list[dict] = [{"content": None, "role": "assistant", "reasoning_content": ""}]
        deltas += [{"content": None, "reasoning_content": piece} for piece in _pieces(text)]
        if "encrypted_content" in fields:
            deltas.append({"content": None, "encrypted_content": fields["encrypted_content"]})
        for i, call in enumerate(calls):
            head = {
                "index": i,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            deltas.append({"content": None, "tool_calls": [head], "role": "assistant"})
            for piece in _pieces(call["function"]["arguments"], 12):
                more = {"index": i, "id": "", "type": "function", "function": {"arguments": piece}}
                deltas.append({"content": None, "tool_calls": [more]})
        return fields, message, deltas

    def chunk(self, chunk: dict, last: bool) -> dict:
        chunk["choices"][0]["logprobs"] = None
        return chunk | {"usage": None, "system_fingerprint": None}

    def stream_end(self, answer_id: str, model: str, created: int) -> list[bytes]:
        last = {"choices": [], "object": "chat.completion.chunk", "usage": dict(self.usage), "created": created}
        return [sse_event(last | {"system_fingerprint": None, "model": model, "id": answer_id}), sse_event("[DONE]")]


class MiniMax(RoutedHost):
    """MiniMax: a <think> block at the start of content (or reasoning_details), every turn's read back."""

    name = "minimax"
    routes = ("/minimax/",)
    reads_back = True

    def reasoning_of(self, message: dict, issued: dict[str, Any]) -> dict[str, Any]:
        if "content" in issued:  # the <think> block, which the content must start with
            content = message.get("content")
            block = issued["content"]
            return {"content": block if isinstance(content, str) and content.startswith(block) else content}
        return super().reasoning_of(message, issued)

    def tool_turn(self, fake, doc, calls, options):
        text = f"The user wants the files. I will call {calls[0]['function']['name']}."
        named = {"role": "assistant", "name": "MiniMax AI", "audio_content": ""}
        if doc.get("reasoning_split"):
            entry = {"type": "reasoning.text", "id": "reasoning-text-1", "format": MINIMAX_FORMAT, "index": 0}
            details = [{**entry, "text": text}]
            message = {"content": "", **named, "tool_calls": calls, "reasoning_details": details}
            # increments of the text, each in an entry of its own
            deltas = [{"content": "", **named, "reasoning_details": [{**entry, "text": p}]} for p in _pieces(text)]
            return {"reasoning_details": details}, message, [*deltas, *_call_deltas(calls, **named)]
        block = f"<think>\n{text}\n</think>\n\n"
        message = {"content": block, **named, "tool_calls": calls}
        deltas = [{"content": piece, **named} for piece in _pieces(block, 6)]
        return {"content": block}, message, [*deltas, *_call_deltas(calls, **named)]

    def answer_id(self) -> str:
        return uuid.uuid4().hex[:32]

    def document(self, whole: dict) -> dict:
        return whole | {
            "input_sensitive": False,
            "output_sensitive": False,
            "base_resp": {"status_code": 0, "status_msg": ""},
        }


class Cerebras(RoutedHost):
    """Cerebras: thinking as `reasoning`; an assistant message carrying `reasoning_content` at all is refused."""

    name = "cerebras"
    usage = None

    def matches(self, path: str) -> bool:
        route = path.split("?")[0].rstrip("/")
        return route.startswith("/cerebras/") and route.endswith("/chat/completions")

    def refusal(self, fake, doc, messages, recorded, headers) -> Reply | None:
        lines = [
            CEREBRAS_UNSUPPORTED.format(index=index)
            for index, message in enumerate(doc.get("messages") or [])  # as sent: the index is the request's
            if isinstance(message, dict) and message.get("role") == "assistant" and "reasoning_content" in message
        ]
        if not lines:
            return None
        body = {"message": "\n".join(lines), "type": "invalid_request_error", "param": "validation_error"}
        return Reply(400, {**body, "code": "wrong_api_format"})

    def tool_turn(self, fake, doc, calls, options):
        reasoning = f"The user wants a listing. I will call {calls[0]['function']['name']}."
        message = {"role": "assistant", "content": None, "reasoning": reasoning, "tool_calls": calls}
        deltas = [{"role": "assistant", "reasoning": piece} for piece in _words(reasoning)]
        return {"reasoning": reasoning}, message, [*deltas, *_call_deltas(calls)]

    def final_turn(self, doc, options):
        message = {"role": "assistant", "content": FINAL_ANSWER, "reasoning": "Summarise the listing."}
        deltas = [{"role": "assistant", "reasoning": "Summarise the listing."}]
        return message, deltas + [{"content": piece} for piece in _words(FINAL_ANSWER)]


def _mistral_thinking(text: str) -> dict:
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


class Mistral(RoutedHost):
    """Magistral: thinking as a chunk of an array content; a closed request schema; thinking not verified."""

    name = "mistral"
    reads_back = True
    usage = {"prompt_tokens": 10, "total_tokens": 15, "completion_tokens": 5}

    def matches(self, path: str) -> bool:
        return path.startswith("/mistral/") and path.split("?")[0].endswith("/chat/completions")

    def refusal(self, fake, doc, messages, recorded, headers) -> Reply | None:
        extra = [
            (index, name, value)
            for index, message in enumerate(doc.get("messages") or [])
            if isinstance(message, dict) and message.get("role") == "assistant"
            for name, value in message.items()
            if name not in MISTRAL_ASSISTANT_FIELDS
        ]
        return None if not extra else mistral_extra_forbidden(extra)

    def turns_read(self, doc, messages, path) -> list[int]:
        return _tool_turns(messages)

    def reasoning_of(self, message: dict, issued: dict[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        return {"thinking": issued["thinking"] if isinstance(content, list) and issued["thinking"] in content else None}

    def degraded(self, dropped: list[int]) -> str:
        return "thinking-dropped"

    def headers(self) -> dict[str, str]:
        return {"mistral-correlation-id": str(uuid.uuid4())}

    def call_id(self) -> str:
        alphabet = string.ascii_letters + string.digits
        return "".join(alphabet[byte % len(alphabet)] for byte in os.urandom(9))

    def answer_id(self) -> str:
        return uuid.uuid4().hex

    def created(self) -> int:
        return 1764296393

    def tool_turn(self, fake, doc, calls, options):
        messages = [m for m in doc.get("messages") or [] if isinstance(m, dict)]
        step = sum(1 for i in _tool_turns(messages) if i > _last_user(messages))
        # Quotes, a newline and non-ASCII text: the chunk must come back exactly as issued.
        thinking = _mistral_thinking(
            f'The user asks what is in a directory (step {step + 1}).\nI should list it — "ok" ✓.'
        )
        for i, call in enumerate(calls):
            call["index"] = i
        text = [{"type": "text", "text": options.content}] if options.content else []
        message = {"role": "assistant", "content": [thinking, *text], "tool_calls": calls}
        return {"thinking": thinking}, message, self._deltas(message)

    def final_turn(self, doc, options):
        thinking = _mistral_thinking("The listing came back with two files. I can answer.")
        message = {
            "role": "assistant",
            "content": [thinking, {"type": "text", "text": FINAL_ANSWER}],
            "tool_calls": None,
        }
        return message, self._deltas(message)

    @staticmethod
    def _deltas(message: dict) -> list[dict]:
        deltas: list[dict] = [{"role": "assistant", "content": ""}]
        for part in message["content"]:
            if part["type"] == "thinking":
                pieces = re.findall(r"\S+\s*|\s+", part["thinking"][0]["text"])
                deltas += [{"content": [_mistral_thinking(piece)]} for piece in pieces]
                deltas.append({"content": [{"type": "thinking", "thinking": []}]})
            else:
                deltas += [{"content": piece} for piece in re.findall(r"\S+\s*|\s+", part["text"])]
        deltas += [{"tool_calls": [call]} for call in message["tool_calls"] or []]
        return [*deltas, {"content": ""}]

    def chunk(self, chunk: dict, last: bool) -> dict:
        return chunk | {"usage": dict(self.usage)} if last else chunk


def mistral_extra_forbidden(fields: list[tuple[int, str, Any]]) -> Reply:
    """Mistral's 422, in the envelope https://github.com/Gage-Technologies/mistral-go/issues/3 quotes."""
    detail = [
        {
            "type": "extra_forbidden",
            "loc": ["body", "messages", index, "assistant", name],
            "msg": "Extra inputs are not permitted",
            "input": value,
        }
        for index, name, value in fields
    ]
    body = {
        "object": "error",
        "message": {"detail": detail},
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    return Reply(422, body)


def routed_hosts() -> dict[str, ChatFake]:
    """A fake for each host on a route of its own, by name."""
    return {
        fake.name: fake
        for fake in (ChatFake(p) for p in (Moonshot(), Zai(), DashScope(), MiniMax(), Cerebras(), Mistral()))
    }
