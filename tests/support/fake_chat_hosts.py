"""Fake chat hosts that keep reasoning as text, each with its documented rule and answer shape.

* `/moonshot/…`: Moonshot's Kimi (api.moonshot.ai's `/v1/chat/completions` under a prefix for the fake provider to
  route by). Its thinking models refuse an assistant tool-call message without reasoning_content, in Kimi's words
  (https://github.com/VicBilibily/GCMP/issues/162); `"thinking": {"type": "disabled"}` turns that off where the model
  allows it (https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model).
* `/api/paas/v4/…`, `/api/coding/paas/v4/…`: Z.ai's GLM. reasoning_content is read back in the current tool loop
  (interleaved thinking) and, with preserved thinking (`"clear_thinking": false`, the Coding Plan's default), in
  every turn (https://docs.z.ai/guides/capabilities/thinking-mode). Chunks shaped as pydantic-ai's recording
  (tests/fixtures/zai/).
* `/compatible-mode/…`: Qwen on DashScope. The same, with `"preserve_thinking": true`; qwen4-max with
  `"thinking_display": "summarized"` also issues encrypted thinking on the message. Chunks shaped as vercel/ai's
  recordings (tests/fixtures/dashscope/): `"id": ""` on tool call continuations, a last chunk with no choices.
* `/minimax/…`: MiniMax. Its reasoning is a `<think>` block at the start of content or, with
  `"reasoning_split": true`, reasoning_details entries; every turn's is read back
  (https://platform.minimax.io/docs/api-reference/text-openai-api).

GLM, Qwen and MiniMax answer a request that dropped reasoning they read back all the same, as the real ones do (only
worse): the fake says so in an `x-fake-degraded` header naming the messages, and keeps in `seen` what reasoning
each request let the model read, for a test to assert the repair.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, sse_event

ANSWER = "The directory holds two files."
KIMI_MISSING = "thinking is enabled but reasoning_content is missing in assistant tool call message at index {index}"
# Kimi models that think, and those whose thinking cannot be turned off.
KIMI_THINKING = ("kimi-k2-thinking", "kimi-k2.5", "kimi-k2.6", "kimi-k2.7", "kimi-k3")
KIMI_ALWAYS = ("kimi-k2-thinking", "kimi-k2.7", "kimi-k3")
MINIMAX_FORMAT = "MiniMax-response-v1"


def _last_user(messages: list[dict]) -> int:
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)


def _tool_turns(messages: list[dict]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")]


def _arguments(doc: dict, name: str) -> str:
    """Arguments for the tool: a value for each required property of its schema."""
    for tool in doc.get("tools") or []:
        function = tool.get("function") or {}
        if function.get("name") == name:
            required = (function.get("parameters") or {}).get("required") or []
            return json.dumps({prop: f"{prop}-0" for prop in required} or {"path": "."})
    return json.dumps({"path": "."})


class ChatHost:
    """What the four fakes share: turns of tool calls, then an answer; what each issued, by tool call id."""

    name = ""
    routes: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.issued: dict[str, dict[str, Any]] = {}  # tool call id -> the reasoning issued with its message
        self.seen: list[dict[int, dict[str, Any]]] = []  # per request: message index -> the reasoning read back
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return any(route in path.split("?")[0] for route in self.routes) and path.endswith("/chat/completions")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        messages = [m for m in doc.get("messages") or [] if isinstance(m, dict)]
        refusal = self.refusal(doc, messages)
        if refusal is not None:
            return Reply(400, refusal)
        headers = {}
        dropped = self.read_back(doc, messages, recorded.path)
        if dropped:
            headers["x-fake-degraded"] = "reasoning dropped: " + ", ".join(f"messages[{i}]" for i in dropped)
        model = str(doc.get("model", ""))
        steps = sum(1 for i in _tool_turns(messages) if i > _last_user(messages))
        if messages and messages[-1].get("role") in ("user", "tool") and steps < options.steps:
            name = next(iter(t["function"]["name"] for t in doc.get("tools") or [] if t.get("function")), "ls")
            calls = [
                {
                    "id": self.call_id(),
                    "type": "function",
                    "function": {"name": name, "arguments": _arguments(doc, name)},
                }
                for _ in range(options.parallel)
            ]
            fields, message, chunks = self.tool_turn(doc, calls)
            with self._lock:
                self.issued.update({call["id"]: fields for call in calls})
        else:
            message, chunks = {"role": "assistant", "content": ANSWER}, [{"content": ANSWER}]
        answer = self.new_id()
        if doc.get("stream"):
            last = len(chunks) - 1
            events = [sse_event(self.chunk(answer, model, delta, i == last, message)) for i, delta in enumerate(chunks)]
            return Reply(200, events=[*events, *self.stream_end(answer, model)], headers=headers)
        return Reply(200, self.document(answer, model, message), headers=headers)

    # what each host says --------------------------------------------------------------------------

    def call_id(self) -> str:
        return f"call_{uuid.uuid4().hex[:24]}"

    def refusal(self, doc: dict, messages: list[dict]) -> Any | None:
        return None

    def read_back(self, doc: dict, messages: list[dict], path: str) -> list[int]:
        """The messages whose reasoning the model reads back but did not get as issued (the request is answered)."""
        indexes = self.turns_read(doc, messages, path)
        seen, dropped = {}, []
        for index in indexes:
            message = messages[index]
            issued = self.issued_for(message)
            if issued is None:
                continue
            got = self.reasoning_of(message, issued)
            seen[index] = got
            if got != issued:
                dropped.append(index)
        with self._lock:
            self.seen.append(seen)
        return dropped

    def turns_read(self, doc: dict, messages: list[dict], path: str) -> list[int]:
        return [i for i, m in enumerate(messages) if m.get("role") == "assistant"]

    def issued_for(self, message: dict) -> dict[str, Any] | None:
        with self._lock:
            return next(
                (self.issued[c.get("id")] for c in message.get("tool_calls") or [] if c.get("id") in self.issued), None
            )

    def reasoning_of(self, message: dict, issued: dict[str, Any]) -> dict[str, Any]:
        return {name: message.get(name) for name in issued}

    def tool_turn(self, doc: dict, calls: list[dict]) -> tuple[dict[str, Any], dict, list[dict]]:
        """The reasoning issued, the whole message and the stream's deltas of a tool-call turn."""
        raise NotImplementedError

    def chunk(self, answer: str, model: str, delta: dict, last: bool, message: dict) -> dict:
        finish = ("tool_calls" if message.get("tool_calls") else "stop") if last else None
        return {
            "id": answer,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def stream_end(self, answer: str, model: str) -> list[bytes]:
        return [sse_event("[DONE]")]

    def document(self, answer: str, model: str, message: dict) -> dict:
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return {
            "id": answer,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
        }

    def new_id(self) -> str:
        return f"chatcmpl-{uuid.uuid4()}"


def _pieces(text: str, size: int = 9) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _call_deltas(calls: list[dict], **extra: Any) -> list[dict]:
    return [{"tool_calls": [{"index": i, **call}], **extra} for i, call in enumerate(calls)]


class MoonshotFake(ChatHost):
    name = "moonshot"
    routes = ("/moonshot/",)

    def refusal(self, doc: dict, messages: list[dict]) -> Any | None:
        model = str(doc.get("model", ""))
        turned_off = (doc.get("thinking") or {}).get("type") == "disabled" and not model.startswith(KIMI_ALWAYS)
        if not model.startswith(KIMI_THINKING) or turned_off:
            return None
        for index in _tool_turns(messages):
            if messages[index].get("reasoning_content") is None:  # "" is taken
                message = KIMI_MISSING.format(index=index)
                return {"error": {"type": "invalid_request_error", "message": message}, "type": "error"}
        return None

    def read_back(self, doc: dict, messages: list[dict], path: str) -> list[int]:
        return []  # what Kimi needs back it enforces

    def tool_turn(self, doc: dict, calls: list[dict]) -> tuple[dict[str, Any], dict, list[dict]]:
        text = f"The user wants a listing. I will call {calls[0]['function']['name']}."
        message = {"role": "assistant", "content": "", "reasoning_content": text, "tool_calls": calls}
        deltas = [{"role": "assistant", "reasoning_content": piece} for piece in _pieces(text)]
        return {"reasoning_content": text}, message, [*deltas, *_call_deltas(calls)]


class ZaiFake(ChatHost):
    name = "zai"
    routes = ("/api/paas/v4/", "/api/coding/paas/v4/")

    def turns_read(self, doc: dict, messages: list[dict], path: str) -> list[int]:
        clear = (doc.get("thinking") or {}).get("clear_thinking")
        preserved = clear is False or (clear is None and "/api/coding/" in path)
        last_user = _last_user(messages)
        return [i for i in _tool_turns(messages) if preserved or i > last_user]

    def new_id(self) -> str:
        return time.strftime("%Y%m%d%H%M%S") + uuid.uuid4().hex[:16]  # as GLM's: a time and 16 hex digits

    def call_id(self) -> str:
        return f"call_{uuid.uuid4().int % 10**19}"

    def tool_turn(self, doc: dict, calls: list[dict]) -> tuple[dict[str, Any], dict, list[dict]]:
        text = f"\nThe user asks what is there. Calling {calls[0]['function']['name']}."
        message = {"content": "", "reasoning_content": text, "role": "assistant", "tool_calls": calls}
        deltas = [{"role": "assistant", "reasoning_content": piece} for piece in _pieces(text)]
        return {"reasoning_content": text}, message, [*deltas, *_call_deltas(calls, role="assistant")]


class DashScopeFake(ChatHost):
    name = "dashscope"
    routes = ("/compatible-mode/",)

    def turns_read(self, doc: dict, messages: list[dict], path: str) -> list[int]:
        last_user = _last_user(messages)
        return [i for i in _tool_turns(messages) if doc.get("preserve_thinking") is True or i > last_user]

    def tool_turn(self, doc: dict, calls: list[dict]) -> tuple[dict[str, Any], dict, list[dict]]:
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

    def chunk(self, answer: str, model: str, delta: dict, last: bool, message: dict) -> dict:
        chunk = super().chunk(answer, model, delta, last, message)
        chunk["choices"][0]["logprobs"] = None
        return chunk | {"usage": None, "system_fingerprint": None}

    def stream_end(self, answer: str, model: str) -> list[bytes]:
        usage = {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
        last = {"choices": [], "object": "chat.completion.chunk", "usage": usage, "created": int(time.time())}
        return [sse_event(last | {"system_fingerprint": None, "model": model, "id": answer}), sse_event("[DONE]")]


class MiniMaxFake(ChatHost):
    name = "minimax"
    routes = ("/minimax/",)

    def reasoning_of(self, message: dict, issued: dict[str, Any]) -> dict[str, Any]:
        if "content" in issued:  # the <think> block, which the content must start with
            content = message.get("content")
            block = issued["content"]
            return {"content": block if isinstance(content, str) and content.startswith(block) else content}
        return super().reasoning_of(message, issued)

    def tool_turn(self, doc: dict, calls: list[dict]) -> tuple[dict[str, Any], dict, list[dict]]:
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

    def new_id(self) -> str:
        return uuid.uuid4().hex[:32]

    def document(self, answer: str, model: str, message: dict) -> dict:
        base = super().document(answer, model, message)
        return base | {
            "input_sensitive": False,
            "output_sensitive": False,
            "base_resp": {"status_code": 0, "status_msg": ""},
        }


def chat_host_fakes() -> dict[str, ChatHost]:
    return {fake.name: fake for fake in (MoonshotFake(), ZaiFake(), DashScopeFake(), MiniMaxFake())}
