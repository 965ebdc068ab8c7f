"""Fake Gemini native dialect: `…/models/{model}:generateContent` and `:streamGenerateContent` on the Gemini API
(`/v1beta/models/…`) and Vertex AI (`/v1/projects/{p}/locations/{l}/publishers/google/models/…`).

Rules, as https://ai.google.dev/gemini-api/docs/thought-signatures (and Vertex AI's page of that name) describes the
real services (enforced for models named "gemini-3…"):

* In the current turn (after the most recent user content with a part that is not a `functionResponse`), the
  first `functionCall` part of every model content must carry a `thoughtSignature` (or `thought_signature`);
  otherwise 400 with the Gemini API's or Vertex AI's own text, N being the 1-based index into `contents`.
* A signature present on a current-turn `functionCall` part must decode (standard or URL-safe base64) to the
  bytes issued with that call (same name and arguments), or be the placeholder the service takes: on the Gemini
  API base64 of "skip_thought_signature_validator" or "context_engineering_is_the_way_to_go", on Vertex AI the
  literal "skip_thought_signature_validator". Anything else: "Thought signature is not valid." (that wording is
  unconfirmed: seen only in client reports, langchain-ai/langchain-google #1570 and PR #1581).
* A signature the fake issued for another model, on any model content of any turn: "Corrupted thought
  signature." on the Gemini API (google-gemini/gemini-cli #13467), "Unable to submit request because Thought
  signature is not valid.. Learn more: …" on Vertex AI (NoeFabris/opencode-antigravity-auth #368).

Answers: a tool turn (an optional `thought: true` part when `includeThoughts` is asked for, an optional text part
from `x-fake-content`, then `x-fake-parallel` functionCall parts, the first signed) while fewer than
`x-fake-steps` tool steps were taken in the current turn, else a text answer (for gemini-3 its last part signed,
in a stream an empty text part at the end). `?alt=sse` streams `data:` lines separated by CRLF CRLF as the real
service does; `:streamGenerateContent` without it answers with a JSON array. Calls get `functionCall.id`s only
when the request carries `x-fake-call-ids: 1` (the Gemini 3 capture had none).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import threading
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, call_for

GEMINI_API_MISSING_SIGNATURE = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
    "correctly, and missing thought_signature may lead to degraded model performance. Additional data, function "
    "call `default_api:{name}` , position {position}. Please refer to "
    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
VERTEX_MISSING_SIGNATURE = (
    "Unable to submit request because function call `default_api:{name}` in the {position}. content block is "
    "missing a `thought_signature`. Learn more: "
    "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
)
# Unconfirmed wording, seen only in client reports: https://github.com/langchain-ai/langchain-google/pull/1581
INVALID_SIGNATURE = "Thought signature is not valid."
FOREIGN_SIGNATURE = "Corrupted thought signature."
VERTEX_FOREIGN_SIGNATURE = (
    "Unable to submit request because Thought signature is not valid.. Learn more: "
    "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
)
NO_CONTENTS = "* GenerateContentRequest.contents: contents is not specified\n"
VERTEX_PLACEHOLDER = "skip_thought_signature_validator"
GEMINI_API_PLACEHOLDERS = frozenset({b"skip_thought_signature_validator", b"context_engineering_is_the_way_to_go"})
ANSWER = ["The directory", " holds two files."]
THOUGHT = "**Planning**\n\nI should list the directory to answer.\n\n"
METHODS = (":generateContent", ":streamGenerateContent")


def decode_signature(value: str) -> bytes | None:
    """The bytes of a signature, read as protobuf `bytes` from JSON: standard or URL-safe base64."""
    text = value.replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _signature(part: dict) -> Any:
    return part.get("thoughtSignature", part.get("thought_signature"))


def _function_call(part: Any) -> dict | None:
    if not isinstance(part, dict):
        return None
    call = part.get("functionCall", part.get("function_call"))
    return call if isinstance(call, dict) else None


def _canonical(arguments: Any) -> str:
    return json.dumps({} if arguments is None else arguments, sort_keys=True, separators=(",", ":"))


def turn_start(contents: list) -> int:
    """Where the current turn begins: after the last user content holding a part that is not a function result."""
    start = 0
    for index, content in enumerate(contents):
        if not isinstance(content, dict) or content.get("role") == "model":
            continue
        parts = content.get("parts") or []
        if any(isinstance(p, dict) and "functionResponse" not in p and "function_response" not in p for p in parts):
            start = index + 1
    return start


def _model_calls(content: Any) -> list[tuple[int, dict, dict]]:
    if not isinstance(content, dict) or content.get("role") != "model":
        return []
    parts = content.get("parts") or []
    return [(i, part, call) for i, part in enumerate(parts) if (call := _function_call(part)) is not None]


def _tool_names(doc: dict) -> list[str]:
    return [
        declaration["name"]
        for tool in doc.get("tools") or []
        if isinstance(tool, dict)
        for declaration in tool.get("functionDeclarations") or tool.get("function_declarations") or []
        if isinstance(declaration, dict) and declaration.get("name")
    ]


def _tool_name(doc: dict) -> str:
    return next(iter(_tool_names(doc)), "list_directory")


def _wants_thoughts(doc: dict) -> bool:
    config = doc.get("generationConfig") or doc.get("generation_config") or {}
    thinking = config.get("thinkingConfig") or config.get("thinking_config") or {}
    return bool(thinking.get("includeThoughts") or thinking.get("include_thoughts"))


class GeminiDialect:
    name = "gemini"

    def __init__(self) -> None:
        self.issued: dict[str, dict[str, Any]] = {}  # signature as sent -> {"name", "args", "id"} or {"text"}
        self.placeholders: list[dict[str, Any]] = []  # {"path", "content", "part", "value"} per placeholder seen
        self.revoked: set[str] = set()  # signatures issued but no longer accepted (a value corrupted in storage)
        self._by_bytes: dict[bytes, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return path.split("?", 1)[0].endswith(METHODS)

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        route, _, query = recorded.path.partition("?")
        model = route.rpartition(":")[0].rpartition("/models/")[2]
        vertex = "/projects/" in route
        contents = doc.get("contents")
        if not isinstance(contents, list) or not contents:
            return _error(NO_CONTENTS)
        error = self.validate(contents, model, vertex, recorded.path)
        if error is not None:
            return _error(error)
        ids = recorded.headers.get("x-fake-call-ids", "") not in ("", "0")
        response_id = uuid.uuid4().hex[:23]
        chunks = self.answer(doc, model, options, ids=ids)
        for chunk in chunks:
            chunk |= {"modelVersion": model, "responseId": response_id}
        if route.endswith(":streamGenerateContent"):
            if "alt=sse" in query.split("&"):
                return Reply(200, events=[b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks])
            return Reply(200, chunks)
        return Reply(200, _whole(chunks))

    # rules -----------------------------------------------------------------------------------
    def validate(self, contents: list, model: str, vertex: bool, path: str) -> str | None:
        if self._foreign(contents, model):
            return VERTEX_FOREIGN_SIGNATURE if vertex else FOREIGN_SIGNATURE
        if "gemini-3" not in model:
            return None
        for index in range(turn_start(contents), len(contents)):
            calls = _model_calls(contents[index])
            if not calls:
                continue
            _, first_part, first_call = calls[0]
            if _signature(first_part) is None:
                template = VERTEX_MISSING_SIGNATURE if vertex else GEMINI_API_MISSING_SIGNATURE
                return template.format(name=first_call.get("name", ""), position=index + 1)
            for position, part, call in calls:
                signature = _signature(part)
                if signature is None:
                    continue
                if self._is_placeholder(signature, vertex):
                    with self._lock:
                        self.placeholders.append({"path": path, "content": index, "part": position, "value": signature})
                elif not self._is_issued(signature, call):
                    return INVALID_SIGNATURE
        return None

    def _foreign(self, contents: list, model: str) -> bool:
        """Whether any model content carries a signature the fake issued for another model."""
        for content in contents:
            if not isinstance(content, dict) or content.get("role") != "model":
                continue
            for part in content.get("parts") or []:
                signature = _signature(part) if isinstance(part, dict) else None
                raw = decode_signature(signature) if isinstance(signature, str) else None
                with self._lock:
                    issued = self._by_bytes.get(raw) if raw is not None else None
                if issued is not None and issued.get("model", model) != model:
                    return True
        return False

    def _is_placeholder(self, signature: Any, vertex: bool) -> bool:
        if not isinstance(signature, str):
            return False
        if vertex:
            return signature == VERTEX_PLACEHOLDER
        return decode_signature(signature) in GEMINI_API_PLACEHOLDERS

    def _is_issued(self, signature: Any, call: dict) -> bool:
        if signature in self.revoked:
            return False
        raw = decode_signature(signature) if isinstance(signature, str) else None
        with self._lock:
            issued = self._by_bytes.get(raw) if raw is not None else None
        if issued is None or "name" not in issued:
            return False
        return issued["name"] == call.get("name") and _canonical(issued["args"]) == _canonical(call.get("args"))

    def _issue(self, **what: Any) -> str:
        raw = os.urandom(120)
        signature = base64.b64encode(raw).decode()
        with self._lock:
            self.issued[signature] = what
            self._by_bytes[raw] = what
        return signature

    # answers ---------------------------------------------------------------------------------
    def answer(self, doc: dict, model: str, options: Options, *, ids: bool) -> list[dict]:
        """The stream chunks of the answer (a whole answer is their parts, merged)."""
        contents = doc["contents"]
        start = turn_start(contents)
        steps = sum(1 for content in contents[start:] if _model_calls(content))
        last = contents[-1]
        if isinstance(last, dict) and last.get("role") != "model" and steps < options.steps:
            return self._tool_turn(doc, model, steps, options, ids=ids)
        return self._final_turn(model)

    def _tool_turn(self, doc: dict, model: str, step: int, options: Options, *, ids: bool) -> list[dict]:
        asked = call_for(options, _tool_names(doc))
        name = asked.name if asked else _tool_name(doc)
        chunks = []
        if _wants_thoughts(doc):
            chunks.append(_chunk([{"text": THOUGHT, "thought": True}]))
        if options.content:
            chunks.append(_chunk([{"text": options.content}]))
        for i in range(options.parallel):
            call: dict[str, Any] = {
                "name": name,
                "args": dict(asked.arguments) if asked else {"path": f"step{step}/dir{i}"},
            }
            if ids:
                call["id"] = f"call_{uuid.uuid4().hex[:16]}"
            part: dict[str, Any] = {"functionCall": call}
            if i == 0:  # parallel calls: only the first is signed
                part["thoughtSignature"] = self._issue(name=name, args=call["args"], id=call.get("id"), model=model)
            chunks.append(_chunk([part]))
        chunks.append(_chunk([{"text": ""}], finish=True))
        return chunks

    def _final_turn(self, model: str) -> list[dict]:
        parts: list[dict[str, Any]] = [{"text": text} for text in ANSWER]
        closing: dict[str, Any] = {"text": ""}
        signature = self._issue(text="".join(ANSWER), model=model)
        if "gemini-3" in model:
            closing["thoughtSignature"] = signature  # Gemini 3 signs the last part
        else:
            parts[0]["thoughtSignature"] = signature  # Gemini 2.5 signs the first part after the thoughts
        return [_chunk([part]) for part in parts] + [_chunk([closing], finish=True)]


def _chunk(parts: list[dict], *, finish: bool = False) -> dict:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 40}}


def _whole(chunks: list[dict]) -> dict:
    """A non-streamed answer: the streamed parts, text pieces merged into one part as the service does."""
    parts: list[dict[str, Any]] = []
    for chunk in chunks:
        for part in chunk["candidates"][0]["content"]["parts"]:
            previous = parts[-1] if parts else None
            mergeable = previous is not None and "text" in previous and "text" in part
            if mergeable and previous.get("thought") == part.get("thought"):
                previous["text"] += part["text"]
                if "thoughtSignature" in part:
                    previous.setdefault("thoughtSignature", part["thoughtSignature"])
            elif part.get("text") != "" or "thoughtSignature" in part:
                parts.append(dict(part))
    whole = dict(chunks[-1])
    whole["candidates"] = [{**chunks[-1]["candidates"][0], "content": {"parts": parts, "role": "model"}}]
    return whole


def _error(message: str) -> Reply:
    return Reply(400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})
