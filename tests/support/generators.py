"""Conversations for the property tests, run in process: the addon's own hooks between a client and a fake.

A `Conversation` plays one client against one fake dialect (`tests/support/fake_*.py`). Every request the
client builds goes through the real request hook (`RequestRepair.request`, so `formats.claim`,
`may_need_repair`, `plan_repair`), then to the fake's own rule check and answer, and the answer goes back
through the real capture hooks (`ResponseCapture`, the `ResponseTap` fed in pieces), which store what
they read in a memory cache. The client then keeps the answer in its history, dropping reasoning state
and bending shapes the way real clients do; every such choice is drawn with hypothesis, so a failing
conversation shrinks to the few choices that matter.

A `faithful` client keeps every piece of state as the provider sent it. A client with `quirks` also
sends `content: []`, splits one answer into two assistant messages, strips LiteLLM ids or leaves an
orphaned reasoning item: shapes the proxy repairs whether or not anything was cached.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import quote

from hypothesis import strategies as st
from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.answer.tap import ResponseTap
from llm_reasoning_proxy.shared.events import Event, EventLog, Failure, Skipped
from llm_reasoning_proxy.shared.records import split_call_id
from llm_reasoning_proxy.wire.chat_completions.fields import MESSAGE_FIELDS, is_missing
from mitmproxy import http
from mitmproxy.test import taddons, tflow, tutils

from tests.support import fake_anthropic, fake_bedrock, fake_chat, fake_gemini, fake_responses
from tests.support.capture import split
from tests.support.fake_provider import Options, Recorded

ANSWER_TEXT = ["Let me look.", "Checking — “quotes” and ✓ too.", "a\nb"]
SSE = "text/event-stream"


class RecordingLog(EventLog):
    """The event log, kept in memory: a hook that fails open must not pass a property unnoticed."""

    def __init__(self) -> None:
        super().__init__(None)
        self.events: list[Event] = []

    def write(self, event: Event) -> None:
        self.events.append(event)

    def take(self) -> list[Event]:
        events, self.events = self.events, []
        return events


class InProcessProxy:
    """The addon's hooks, configured as `mitmdump -s addon/main.py --set llm_cache=memory` would be."""

    def __init__(self) -> None:
        self.config, self.repair, self.capture, _explain = make_addons()[:4]
        self._context = taddons.context(self.config, self.repair, self.capture)
        self._context.configure(self.config, llm_cache="memory", llm_log="", llm_keep_bodies="true")
        self.log = RecordingLog()
        self.config.events = self.log
        self._credentials = itertools.count()

    def credential(self) -> str:
        """A credential never used before: a cache scope of its own, empty."""
        return f"sk-property-{next(self._credentials)}"

    def send(self, url: str, body: bytes, credential: str) -> http.HTTPFlow:
        """A request as the client sent it, after the proxy's request hook."""
        headers = {"content-type": "application/json", "authorization": f"Bearer {credential}"}
        flow = tflow.tflow(req=http.Request.make("POST", url, body, headers))
        self.repair.request(flow)
        self._no_failure()
        return flow

    def answer(self, flow: http.HTTPFlow, pieces: list[bytes], *, sse: bool, stream_type: str = SSE) -> None:
        """The provider's answer streamed through the capture hooks, piece by piece, as mitmproxy does."""
        flow.response = tutils.tresp(
            status_code=200,
            headers=http.Headers(content_type=stream_type if sse else "application/json"),
            content=None,
        )
        self.capture.responseheaders(flow)
        tap = flow.response.stream
        assert isinstance(tap, ResponseTap)
        for piece in pieces:
            assert tap(piece) is piece
        assert tap(b"") == b""
        self.capture.response(flow)
        assert tap.problem is None, tap.problem
        self._no_failure()

    def _no_failure(self) -> None:
        trouble = [e for e in self.log.take() if isinstance(e, (Failure, Skipped))]
        assert not trouble, trouble

    @contextmanager
    def settings(self, **changes: object) -> Iterator[None]:
        before = self.config.settings
        assert before is not None
        self.config.settings = before.model_copy(update=changes)
        try:
            yield
        finally:
            self.config.settings = before

    def placeholder(self, value: str) -> AbstractContextManager[None]:
        return self.settings(signature_placeholder=value)


def repairs(flow: http.HTTPFlow) -> list[str]:
    """What the request hook changed, as it describes it (nothing: the body went on untouched)."""
    return list(flow.metadata.get("llm", {}).get("repairs", []))


@dataclass
class Exchange:
    """One request of a conversation: what the client sent and what the proxy made of it."""

    conversation: Conversation
    body: bytes  # as the client sent it
    flow: http.HTTPFlow  # after the request hook
    credential: str

    @property
    def sent(self) -> bytes:
        raw = self.flow.request.raw_content
        assert raw is not None
        return raw

    @property
    def sent_doc(self) -> Any:
        return json.loads(self.sent)


@dataclass
class Style:
    """How a client spells its JSON: a proxy that re-serialises an untouched body changes these bytes."""

    indent: int | None
    ascii: bool

    def dumps(self, doc: Any) -> bytes:
        return json.dumps(doc, indent=self.indent, ensure_ascii=self.ascii).encode()


styles = st.builds(Style, indent=st.sampled_from([None, 1]), ascii=st.booleans())


def cut_points(data: st.DataObject, size: int, most: int) -> list[int]:
    """Where to cut `size` bytes; drawn as fractions, since the fakes' answers vary in length from run to run."""
    fractions = data.draw(st.lists(st.integers(1, 999), max_size=most), label="cuts")
    return sorted({size * f // 1000 for f in fractions} - {0})


def pieces_of(data: st.DataObject, raw: bytes) -> list[bytes]:
    return split(raw, cut_points(data, len(raw), 6))


def sse_data(raw: bytes) -> list[Any]:
    """The JSON documents of a stream the fakes wrote (LF or CRLF framing)."""
    docs = []
    for line in raw.replace(b"\r\n", b"\n").split(b"\n"):
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            docs.append(json.loads(line[6:]))
    return docs


@dataclass
class Conversation:
    """One client talking to one fake through the proxy; subclasses know a wire format."""

    proxy: InProcessProxy
    data: st.DataObject
    faithful: bool
    quirks: bool
    style: Style
    variant: str = ""  # the provider, for formats several providers speak
    url: str = ""
    stream: bool = False
    has_calls: bool = False  # the history holds tool calls
    stream_type: ClassVar[str] = SSE  # what a streamed answer is (Bedrock's: AWS event-stream frames)

    def keeps(self, what: str) -> bool:
        """Whether the client keeps a piece of state it was given."""
        return self.faithful or self.data.draw(st.booleans(), label=f"keep {what}")

    def run(self, *, turns: int | None = None, steps: int | None = None) -> Iterator[Exchange]:
        """The exchanges of a whole conversation; each is yielded before its answer is read."""
        credential = self.proxy.credential()
        turns = turns or self.data.draw(st.integers(1, 3), label="user turns")
        for turn in range(turns):
            self.user(f"Question {turn}: what is in the directory?")
            tool_steps = steps if steps is not None else self.data.draw(st.integers(0, 2), label="tool steps")
            while True:
                options = Options(
                    parallel=self.data.draw(st.integers(1, 3), label="parallel calls"),
                    steps=tool_steps,
                    content=self.data.draw(st.sampled_from([None, *ANSWER_TEXT]), label="text with the calls"),
                )
                body = self.style.dumps(self.request())
                flow = self.proxy.send(self.url, body, credential)
                yield Exchange(self, body, flow, credential)
                raw, sse, answer = self.provide(json.loads(flow.request.raw_content or b""), options)
                self.proxy.answer(flow, pieces_of(self.data, raw), sse=sse, stream_type=self.stream_type)
                if self.keep(answer):
                    break

    @property
    def issues_state(self) -> bool:
        """Whether the provider's tool turns carry reasoning state at all."""
        return True

    def force_stream(self) -> None:
        self.stream = True

    # what each wire format fills in
    def user(self, text: str) -> None:
        raise NotImplementedError

    def request(self) -> dict[str, Any]:
        raise NotImplementedError

    def provide(self, doc: dict[str, Any], options: Options) -> tuple[bytes, bool, Any]:
        """The fake's verdict on a request (which must be acceptance) and its answer: raw, streamed, whole."""
        raise NotImplementedError

    def keep(self, answer: Any) -> bool:
        """Adds the answer (and tool results) to the history as the client would; True for a final answer."""
        raise NotImplementedError

    def verify(self, doc: dict[str, Any]) -> None:
        """Beyond what the fake checks: every piece of state in a repaired request is the one issued with it."""
        raise NotImplementedError


# --- chat completions ---------------------------------------------------------------------------

CHAT_DIALECTS = {
    "copilot": ("https://api.githubcopilot.com/chat/completions", "gemini-3-pro-preview"),
    "deepseek": ("https://api.deepseek.com/chat/completions", "deepseek-reasoner"),
    "openrouter-gemini": ("https://openrouter.ai/api/v1/chat/completions", "google/gemini-3-pro-preview"),
    "openrouter-claude": ("https://openrouter.ai/api/v1/chat/completions", "anthropic/claude-sonnet-4.5"),
    "gemini-compat": (
        "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
        "gemini-3-flash-preview",
    ),
    "litellm": ("http://litellm.internal:4000/litellm/v1/chat/completions", "gemini-3-pro-preview"),
    "plain": ("https://api.openai.com/v1/chat/completions", "gpt-4.1"),
}
CALL_STATE = ("extra_content", "provider_specific_fields")


@dataclass
class ChatConversation(Conversation):
    def __post_init__(self) -> None:
        self.name = self.variant
        self.url, self.model = CHAT_DIALECTS[self.name]
        self.fake = fake_chat.ChatFake()
        self.path = "/" + self.url.split("/", 3)[3]
        self.stream = self.data.draw(st.booleans(), label="stream")
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]

    @property
    def issues_state(self) -> bool:
        return self.name != "plain"

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def request(self) -> dict[str, Any]:
        return {"model": self.model, "messages": copy.deepcopy(self.messages), "stream": self.stream}

    def provide(self, doc: dict[str, Any], options: Options) -> tuple[bytes, bool, Any]:
        reply, whole = self.fake.serve(doc, Recorded("POST", self.path, {}, b"", doc), options)
        assert reply.status == 200, f"{self.name} refused the request: {reply.doc}"
        assert "x-fake-degraded" not in reply.headers, "LiteLLM had to send a dummy signature"
        if self.stream:
            return b"".join(reply.events or []), True, whole
        return json.dumps(whole).encode(), False, whole

    def keep(self, answer: Any) -> bool:
        message = answer["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        state = {name: message[name] for name in (*MESSAGE_FIELDS, "reasoning") if name in message}
        kept = {name: copy.deepcopy(value) for name, value in state.items() if self.keeps(name)}
        if not calls:
            self.messages.append({"role": "assistant", "content": message.get("content"), **kept})
            return True
        self.has_calls = True
        sent_calls = [self._call(call) for call in calls]
        text = message.get("content")
        if isinstance(text, str) and text:
            content: Any = text
        elif self.faithful:
            content = text
        else:
            content = self.data.draw(st.sampled_from([text, None, "", *([[]] if self.quirks else [])]), label="content")
        if self.quirks and isinstance(text, str) and text and self.data.draw(st.booleans(), label="split"):
            # Zed: the text and reasoning in one assistant message, the tool calls in another.
            self.messages.append({"role": "assistant", "content": text, **kept})
            empty = self.data.draw(st.sampled_from([None, []]), label="split content")
            self.messages.append({"role": "assistant", "content": empty, "tool_calls": sent_calls})
        else:
            self.messages.append({"role": "assistant", "content": content, **kept, "tool_calls": sent_calls})
        for call in sent_calls:
            self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": "a.txt\nb.txt"})
        return False

    def _call(self, call: dict[str, Any]) -> dict[str, Any]:
        function = call["function"]
        sent: dict[str, Any] = {
            "id": call["id"],
            "type": "function",
            "function": {"name": function["name"], "arguments": function["arguments"]},
        }
        for name in CALL_STATE:
            if name in call and self.keeps(f"call {name}"):
                sent[name] = copy.deepcopy(call[name])
        short, signature = split_call_id(call["id"])
        if signature is not None and self.quirks:
            how = self.data.draw(st.sampled_from(["full", "stripped", "cut"]), label="litellm id")
            if how == "stripped":
                sent["id"] = short
            elif how == "cut":
                keep = self.data.draw(st.integers(0, len(signature) - 1), label="signature chars kept")
                sent["id"] = f"{short}__thought__{signature[:keep]}"
        return sent

    def verify(self, doc: dict[str, Any]) -> None:
        messages = doc["messages"]
        called = set()
        for index, message in enumerate(messages):
            if message.get("role") == "tool":
                assert message["tool_call_id"] in called, f"messages[{index}] answers no call"
            if message.get("role") != "assistant" or not message.get("tool_calls"):
                continue
            assert message.get("content") != [], f"messages[{index}] still has content []"
            call_id, issued = self.fake.issued_for(message["tool_calls"][0])
            present = {name: message[name] for name in MESSAGE_FIELDS if not is_missing(name, message.get(name))}
            assert present == issued, f"messages[{index}]: {present} instead of what was issued, {issued}"
            for call in message["tool_calls"]:
                issued_call = self.fake.issued_calls[self.fake.issued_for(call)[0]]
                assert call["id"] == issued_call["id"], f"messages[{index}]: {call['id']} for {issued_call['id']}"
                called.add(call["id"])
                for name in CALL_STATE:
                    assert call.get(name) == issued_call.get(name), f"messages[{index}] {call['id']} {name}"


# --- OpenAI Responses ---------------------------------------------------------------------------


@dataclass
class ResponsesConversation(Conversation):
    def __post_init__(self) -> None:
        self.url = self.data.draw(
            st.sampled_from(["https://api.openai.com/v1/responses", "https://api.githubcopilot.com/responses"]),
            label="endpoint",
        )
        self.fake = fake_responses.ResponsesFake()
        self.stream = self.data.draw(st.booleans(), label="stream")
        self.items: list[dict[str, Any]] = []

    def user(self, text: str) -> None:
        self.items.append({"role": "user", "content": [{"type": "input_text", "text": text}]})

    def request(self) -> dict[str, Any]:
        return {
            "model": "gpt-5-mini",
            "input": copy.deepcopy(self.items),
            "stream": self.stream,
            "store": False,
            "include": ["reasoning.encrypted_content"],
            "tools": [{"type": "function", "name": "list_directory", "parameters": {"type": "object"}}],
        }

    def provide(self, doc: dict[str, Any], options: Options) -> tuple[bytes, bool, Any]:
        path = "/" + self.url.split("/", 3)[3]
        reply = self.fake.handle(doc, Recorded("POST", path, {}, b"", doc), options)
        assert reply.status == 200, f"Responses refused the request: {reply.doc}"
        if reply.events is None:
            return json.dumps(reply.doc).encode(), False, reply.doc["output"]
        raw = b"".join(reply.events)
        events = sse_data(raw)
        # Clients build the history from the items as each one finished, or from the final response.
        if self.data.draw(st.booleans(), label="items from output_item.done"):
            output = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        else:
            output = events[-1]["response"]["output"]
        return raw, True, output

    def keep(self, answer: Any) -> bool:
        calls = [item for item in answer if item["type"] == "function_call"]
        self.has_calls = self.has_calls or bool(calls)
        kept_reasoning = self.keeps("reasoning item")
        without_id = False
        kept: list[dict[str, Any]] = []
        for item in answer:
            item = copy.deepcopy(item)
            if item["type"] == "reasoning":
                if not kept_reasoning:
                    continue
                without_id = not self.faithful and self.data.draw(st.booleans(), label="reasoning without id")
                if without_id:
                    del item["id"]  # Zed replays reasoning items without their ids
                kept.append(item)
            elif item["type"] == "message":
                if self.quirks and self.data.draw(st.booleans(), label="drop message"):
                    continue  # a reasoning item left before nothing: orphaned
                kept.append(item)
            else:
                # Not right after a reasoning item kept with its id: OpenAI pairs the two by id and refuses the pair
                # without it, which the proxy repairs (tests/test_e2e_responses.py, "lost its id").
                paired = kept_reasoning and not without_id
                if not self.faithful and not paired and self.data.draw(st.booleans(), label="drop fc id"):
                    del item["id"]
                kept.append(item)
        outputs = [{"type": "function_call_output", "call_id": c["call_id"], "output": "a.txt"} for c in calls]
        # Not after a reasoning item without id: the proxy inserts that reasoning a second time
        # (test_properties.py::test_reasoning_kept_without_id_is_not_inserted_again_between_interleaved_calls).
        if outputs and not without_id and self.data.draw(st.booleans(), label="interleave outputs"):
            for item in kept:
                self.items.append(item)
                if item["type"] == "function_call":
                    self.items.append(outputs.pop(0))
        else:
            self.items += kept + outputs
        return not calls

    def verify(self, doc: dict[str, Any]) -> None:
        # Reasoning items sent without an id count too: the fake knows them by their encrypted content.
        ids = [self.fake.reasoning_of(item) for item in doc["input"] if item.get("type") == "reasoning"]
        assert len(ids) == len(set(ids)), f"a reasoning item twice: {ids}"
        for item in doc["input"]:
            if item.get("type") != "reasoning" or not item.get("id"):
                continue
            issued = self.fake.issued[item["id"]]
            copies = (issued.item, {**issued.item, "encrypted_content": issued.completed_content})
            assert item in copies, f"{item['id']} is not as issued"


# --- Anthropic Messages -------------------------------------------------------------------------


@dataclass
class AnthropicConversation(Conversation):
    def __post_init__(self) -> None:
        self.url = "https://api.anthropic.com/v1/messages"
        self.fake = fake_anthropic.MessagesFake()
        self.stream = self.data.draw(st.booleans(), label="stream")
        self.thinking = self.data.draw(st.sampled_from([True, True, True, False]), label="thinking")
        self.redacted = self.data.draw(st.sampled_from([None, "1", "both"]), label="redacted")
        self.messages: list[dict[str, Any]] = []

    @property
    def issues_state(self) -> bool:
        return self.thinking

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def request(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "messages": copy.deepcopy(self.messages),
            "tools": [{"name": "list_directory", "input_schema": {"type": "object"}}],
            "stream": self.stream,
        }
        if self.thinking:
            doc["thinking"] = {"type": "enabled", "budget_tokens": 2048}
        return doc

    def provide(self, doc: dict[str, Any], options: Options) -> tuple[bytes, bool, Any]:
        problem = self.fake.validate(doc)
        assert problem is None, f"Anthropic refused the request: {problem}"
        message = self.fake.answer(doc, options, self.redacted)
        if self.stream:
            return b"".join(fake_anthropic.stream_events(message, options)), True, message
        return json.dumps(message).encode(), False, message

    def keep(self, answer: Any) -> bool:
        uses = [block for block in answer["content"] if block["type"] == "tool_use"]
        if not uses:
            (text,) = [block["text"] for block in answer["content"] if block["type"] == "text"]
            as_string = self.data.draw(st.booleans(), label="answer as a string")
            self.messages.append(
                {"role": "assistant", "content": text if as_string else copy.deepcopy(answer["content"])}
            )
            return True
        self.has_calls = True
        kept_thinking = self.keeps("thinking blocks")
        content = []
        for block in answer["content"]:
            if block["type"] in fake_anthropic.THINKING_TYPES:
                if kept_thinking:
                    content.append(copy.deepcopy(block))
            elif block["type"] == "text":
                if self.keeps("text block"):
                    content.append(copy.deepcopy(block))
            else:
                content.append({k: copy.deepcopy(block[k]) for k in ("type", "id", "name", "input")})
        self.messages.append({"role": "assistant", "content": content})
        results = [{"type": "tool_result", "tool_use_id": use["id"], "content": "a.txt"} for use in uses]
        self.messages.append({"role": "user", "content": results})
        return False

    def verify(self, doc: dict[str, Any]) -> None:
        messages = doc["messages"]
        loop = fake_anthropic._loop_start(messages)
        for index, message in enumerate(messages):
            uses = fake_anthropic._tool_uses(message) if message.get("role") == "assistant" else []
            if not uses:
                continue
            blocks = [b for b in message["content"] if b.get("type") in fake_anthropic.THINKING_TYPES]
            issued = self.fake.issued[uses[0]["id"]]
            # Finished loops may go without their thinking; the current one must have it back, exactly.
            allowed = [issued] if index >= loop else [issued, []]
            assert blocks in allowed, f"messages[{index}]: thinking blocks not as issued"


# --- Gemini native ------------------------------------------------------------------------------

GEMINI_BASES = {
    "gemini-api": "https://generativelanguage.googleapis.com/v1beta/models/",
    "vertex": "https://aiplatform.googleapis.com/v1/projects/demo/locations/global/publishers/google/models/",
}
GEMINI_METHODS = [":generateContent", ":streamGenerateContent?alt=sse", ":streamGenerateContent"]
SNAKE = {
    "functionCall": "function_call",
    "functionResponse": "function_response",
    "thoughtSignature": "thought_signature",
}


def snake_case(value: Any) -> Any:
    if isinstance(value, dict):
        return {SNAKE.get(k, k): snake_case(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_case(v) for v in value]
    return value


@dataclass
class GeminiConversation(Conversation):
    def __post_init__(self) -> None:
        base = self.data.draw(st.sampled_from(sorted(GEMINI_BASES)), label="service")
        self.model = self.data.draw(st.sampled_from(["gemini-3-pro-preview", "gemini-2.5-flash"]), label="model")
        method = self.data.draw(st.sampled_from(GEMINI_METHODS), label="method")
        self.url = GEMINI_BASES[base] + self.model + method
        self.stream = "alt=sse" in method
        self.fake = fake_gemini.GeminiDialect()
        self.ids = self.data.draw(st.booleans(), label="call ids")
        self.thoughts = self.data.draw(st.booleans(), label="include thoughts")
        self.snake = not self.faithful and self.data.draw(st.booleans(), label="snake_case")
        self.contents: list[dict[str, Any]] = []

    def force_stream(self) -> None:
        self.url = self.url.split(":stream", 1)[0].split(":generate", 1)[0] + ":streamGenerateContent?alt=sse"
        self.stream = True

    def user(self, text: str) -> None:
        self.contents.append({"role": "user", "parts": [{"text": text}]})

    def request(self) -> dict[str, Any]:
        contents = copy.deepcopy(self.contents)
        return {
            "contents": snake_case(contents) if self.snake else contents,
            "tools": [{"functionDeclarations": [{"name": "list_directory", "parameters": {"type": "object"}}]}],
            "generationConfig": {"thinkingConfig": {"includeThoughts": self.thoughts}},
        }

    def provide(self, doc: dict[str, Any], options: Options) -> tuple[bytes, bool, Any]:
        path = "/" + self.url.split("/", 3)[3]
        headers = {"x-fake-call-ids": "1" if self.ids else "0"}
        reply = self.fake.handle(doc, Recorded("POST", path, headers, b"", doc), options)
        assert reply.status == 200, f"Gemini refused the request: {reply.doc}"
        if reply.events is not None:
            raw = b"".join(reply.events)
            return raw, True, fake_gemini._whole(sse_data(raw))
        whole = fake_gemini._whole(reply.doc) if isinstance(reply.doc, list) else reply.doc
        return json.dumps(reply.doc).encode(), False, whole

    def keep(self, answer: Any) -> bool:
        parts = answer["candidates"][0]["content"]["parts"]
        calls = [part["functionCall"] for part in parts if "functionCall" in part]
        self.has_calls = self.has_calls or bool(calls)
        drop_ids = bool(calls) and self.ids and not self.faithful and self.data.draw(st.booleans(), label="drop ids")
        kept = []
        for part in parts:
            part = copy.deepcopy(part)
            if part.get("thought") and not self.keeps("thought part"):
                continue
            if "thoughtSignature" in part and not self.keeps("signature"):
                del part["thoughtSignature"]
            if drop_ids and "functionCall" in part:
                part["functionCall"].pop("id", None)
            kept.append(part)
        self.contents.append({"role": "model", "parts": kept})
        if calls:
            results = []
            for call in calls:
                result = {"name": call["name"], "response": {"entries": ["a.txt"]}}
                if "id" in call and not drop_ids:
                    result["id"] = call["id"]
                results.append({"functionResponse": result})
            self.contents.append({"role": "user", "parts": results})
        return not calls

    def verify(self, doc: dict[str, Any]) -> None:
        for index, content in enumerate(doc["contents"]):
            if content.get("role") != "model":
                continue
            calls = fake_gemini._model_calls(content)
            for number, (position, part, call) in enumerate(calls):
                signature = fake_gemini._signature(part)
                where = f"contents[{index}].parts[{position}]"
                if number == 0:
                    # Every step's first call was signed when it was issued; the cache has it for every turn.
                    assert signature is not None, f"{where}: signature not restored"
                    assert self.fake._is_issued(signature, call), f"{where}: not the signature issued for the call"
                else:
                    assert signature is None, f"{where}: a signature on a call that was issued none"
            for position, part in enumerate(content["parts"]):
                signature = fake_gemini._signature(part)
                if "text" in part and signature is not None:
                    issued = self.fake.issued.get(signature, {})
                    assert "text" in issued, f"contents[{index}].parts[{position}]: not a text signature issued"


# --- Amazon Bedrock -----------------------------------------------------------------------------

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK_BASE = f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{quote(BEDROCK_MODEL, safe='')}"


class BedrockInvokeConversation(AnthropicConversation):
    """Claude through InvokeModel: the Messages body with `anthropic_version` and without `model` or `stream` (the
    path says them), streamed in `chunk` frames."""

    stream_type = fake_bedrock.EVENT_STREAM

    def __post_init__(self) -> None:
        super().__post_init__()
        self.force_stream() if self.stream else self._route()

    def _route(self) -> None:
        self.url = f"{BEDROCK_BASE}/{'invoke-with-response-stream' if self.stream else 'invoke'}"

    def force_stream(self) -> None:
        self.stream = True
        self._route()

    def request(self) -> dict[str, Any]:
        doc = super().request()
        del doc["model"], doc["stream"]
        return {"anthropic_version": "bedrock-2023-05-31", **doc}

    def provide(self, doc: dict[str, Any], options: Options) -> tuple[bytes, bool, Any]:
        raw, sse, message = super().provide({**doc, "model": BEDROCK_MODEL, "stream": self.stream}, options)
        if sse:
            raw = b"".join(fake_bedrock.chunk(event) for event in sse_data(raw))
        return raw, sse, message


@dataclass
class BedrockConverseConversation(Conversation):
    stream_type = fake_bedrock.EVENT_STREAM

    def __post_init__(self) -> None:
        self.fake = fake_bedrock.BedrockDialect().claude
        self.stream = self.data.draw(st.booleans(), label="stream")
        self.thinking = self.data.draw(st.sampled_from([True, True, True, False]), label="thinking")
        self.redacted = self.data.draw(st.sampled_from([None, "1", "both"]), label="redacted")
        self.messages: list[dict[str, Any]] = []
        self._route()

    def _route(self) -> None:
        self.url = f"{BEDROCK_BASE}/{'converse-stream' if self.stream else 'converse'}"

    def force_stream(self) -> None:
        self.stream = True
        self._route()

    @property
    def issues_state(self) -> bool:
        return self.thinking

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": [{"text": text}]})

    def request(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "messages": copy.deepcopy(self.messages),
            "inferenceConfig": {"maxTokens": 4096},
            "toolConfig": {"tools": [{"toolSpec": {"name": "list_directory", "inputSchema": {"json": {}}}}]},
        }
        if self.thinking:
            doc["additionalModelRequestFields"] = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
        return doc

    def provide(self, doc: dict[str, Any], options: Options) -> tuple[bytes, bool, Any]:
        claude_doc, problem = fake_bedrock.as_claude(doc, BEDROCK_MODEL)
        problem = problem or self.fake.validate(claude_doc)
        assert problem is None, f"Bedrock refused the request: {problem}"
        message = self.fake.answer(claude_doc, options, self.redacted)
        content = [fake_bedrock.converse_block(block) for block in message["content"]]
        if self.stream:
            return b"".join(fake_bedrock.converse_frames(content, message["stop_reason"])), True, content
        answer = {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": "end_turn"}
        return json.dumps(answer).encode(), False, content

    def keep(self, answer: Any) -> bool:
        uses = [block["toolUse"] for block in answer if "toolUse" in block]
        if not uses:
            self.messages.append({"role": "assistant", "content": copy.deepcopy(answer)})
            return True
        self.has_calls = True
        kept_reasoning = self.keeps("reasoning blocks")
        content = [
            copy.deepcopy(block)
            for block in answer
            if ("reasoningContent" in block and kept_reasoning)
            or ("text" in block and self.keeps("text block"))
            or "toolUse" in block
        ]
        self.messages.append({"role": "assistant", "content": content})
        results = [{"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "a.txt"}]}} for use in uses]
        self.messages.append({"role": "user", "content": results})
        return False

    def verify(self, doc: dict[str, Any]) -> None:
        claude_doc, problem = fake_bedrock.as_claude(doc, BEDROCK_MODEL)
        assert problem is None, problem
        AnthropicConversation.verify(self, claude_doc)  # the blocks Claude gets are the ones it issued


# One case per provider, so that each gets its share of examples.
CASES: dict[str, tuple[str, type[Conversation], str]] = {
    **{f"chat-{name}": ("chat_completions", ChatConversation, name) for name in CHAT_DIALECTS},
    "responses": ("openai_responses", ResponsesConversation, ""),
    "anthropic": ("anthropic_messages", AnthropicConversation, ""),
    "gemini": ("gemini_native", GeminiConversation, ""),
    "bedrock-invoke": ("anthropic_messages", BedrockInvokeConversation, ""),
    "bedrock-converse": ("bedrock_converse", BedrockConverseConversation, ""),
}
