"""Gemini's native format (`generateContent`, `streamGenerateContent`; the Gemini API and Vertex AI): contents and
their parts.

A request's `contents` are shown one message each, by role ("user", "model"); the system instruction first. A
part is text, thought text (`thought: true`, shown as reasoning), a `functionCall` (its `args` as JSON text) or
a `functionResponse`, inline or file data, or anything else as it is. A `thoughtSignature` (or
`thought_signature`) is opaque, shown after the part it came on and tied to that part's call (by its id, else its
name: Gemini 3 sends calls without ids).

An answer is one `GenerateContentResponse`, a stream of them (one a `data:` event) or a JSON array of them
(`streamGenerateContent` without `alt=sse`). A streamed candidate's text parts are joined in order: a run of
answer text is one part, a run of thought text another, each with the signatures that came on its pieces (often
an empty text part at the very end); function calls come whole and stay as they came.
"""

from __future__ import annotations

from typing import Any

from ...shared.limits import MAX_CHOICES
from ..assembly import MAX_ASSEMBLED_CHARS, AnswerAssembler, ListTranscriber, merge_usage, other, text_of, usage_from
from ..conversation import Answer, Conversation, Message, Part, Usage
from .format import FUNCTION_RESPONSE_KEYS, METHODS, NAME, SIGNATURE_KEYS, call_parts, function_call, path_model

WIRE_FORMAT = NAME
STREAM_METHOD = METHODS[1]  # ":streamGenerateContent"
_INLINE_KEYS = ("inlineData", "inline_data")
_FILE_KEYS = ("fileData", "file_data")
_THINKING_KEYS = (("generationConfig", "thinkingConfig"), ("generation_config", "thinking_config"))


def _first(doc: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in doc:
            return key, doc[key]
    return None, None


def _signature(part: dict[str, Any]) -> tuple[str, str] | None:
    """The part's thought signature and the key it came under, when it has one."""
    for key in SIGNATURE_KEYS:
        value = part.get(key)
        if value is not None and value != "":
            return key, value if isinstance(value, str) else text_of(value)
    return None


def _media(data: Any, uri_key: str) -> Part:
    if not isinstance(data, dict):
        return Part("media", text=text_of(data))
    mime = data.get("mimeType", data.get("mime_type"))
    name = mime if isinstance(mime, str) else None
    uri = data.get(uri_key, data.get("file_uri"))
    if isinstance(uri, str):
        return Part("media", name=name, text=uri)
    inline = data.get("data")
    return Part("media", name=name, text=f"{len(inline):,} characters of base64" if isinstance(inline, str) else "")


def part_parts(part: Any, where: str) -> list[Part]:
    """One Gemini part as transcript parts: what it holds, then its signature."""
    if not isinstance(part, dict):
        return [other(where, part)]
    parts: list[Part] = []
    belongs_to = None
    call = function_call(part)
    _, response = _first(part, FUNCTION_RESPONSE_KEYS)
    _, inline = _first(part, _INLINE_KEYS)
    _, file = _first(part, _FILE_KEYS)
    if call is not None:
        call_id, name, arguments = call_parts(call)
        parts.append(Part("tool_call", text=text_of(arguments), call_id=call_id, name=name))
        belongs_to = call_id or name
    elif isinstance(response, dict):
        call_id = response.get("id") if isinstance(response.get("id"), str) else None
        name = response.get("name") if isinstance(response.get("name"), str) else None
        parts.append(Part("tool_result", text=text_of(response.get("response")), call_id=call_id, name=name))
    elif isinstance(part.get("text"), str):
        if part["text"]:
            thought = part.get("thought") is True
            parts.append(
                Part("reasoning", text=part["text"], field="thought") if thought else Part("text", text=part["text"])
            )
    elif inline is not None:
        parts.append(_media(inline, "uri"))
    elif file is not None:
        parts.append(_media(file, "fileUri"))
    signature = _signature(part)
    if signature is not None:
        parts.append(Part.opaque(signature[0], signature[1], belongs_to))
    elif not parts and "text" not in part:
        parts.append(other(where, part))  # executableCode, codeExecutionResult, a function call of the wrong shape
    return parts


def content_message(content: Any, where: str, default_role: str = "user") -> Message:
    if not isinstance(content, dict):
        if isinstance(content, str):  # the SDKs accept a bare string as a user content
            return Message(default_role, [Part("text", text=content)], where)
        return Message("?", [other(where, content)], where)
    role = content.get("role") if isinstance(content.get("role"), str) and content.get("role") else default_role
    parts = content.get("parts")
    if parts is None:
        return Message(role, [], where)
    if not isinstance(parts, list):
        return Message(role, [other(f"{where}.parts", parts)], where)
    found = [p for index, part in enumerate(parts) for p in part_parts(part, f"{where}.parts[{index}]")]
    return Message(role, found, where)


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        for key, value in tool.items():
            if key in ("functionDeclarations", "function_declarations"):
                for declaration in value if isinstance(value, list) else []:
                    name = declaration.get("name") if isinstance(declaration, dict) else None
                    if isinstance(name, str):
                        names.append(name)
            else:  # googleSearch, codeExecution, urlContext, ...
                names.append(key)
    return names


class GeminiTranscriber(ListTranscriber):
    wire_format = WIRE_FORMAT
    items_key = "contents"

    def preamble(self, doc: dict[str, Any], path: str) -> Conversation:
        conversation = Conversation(WIRE_FORMAT)
        conversation.model = path_model(path)
        conversation.stream = STREAM_METHOD in path.split("?", 1)[0]
        if conversation.model is None and isinstance(doc.get("model"), str):
            conversation.model = doc["model"]
        key, system = _first(doc, ("systemInstruction", "system_instruction"))
        if key is not None and system is not None:
            message = content_message(system, key)
            message.role = "system"
            conversation.messages.append(message)
        conversation.tools = _tool_names(doc.get("tools"))
        for config_key, thinking_key in _THINKING_KEYS:
            config = doc.get(config_key)
            if isinstance(config, dict) and thinking_key in config:
                conversation.settings[thinking_key] = config[thinking_key]
        return conversation

    def message(self, item: Any, where: str) -> Message:
        return content_message(item, where)

    def lone_item(self, value: Any) -> Message:
        return content_message(value, "contents")  # one content instead of a list of them

    def assembler(self) -> GeminiAssembler:
        return GeminiAssembler()


def gemini_usage(usage: Any) -> Usage:
    """Gemini's token counts; its `thoughtsTokenCount` is reported beside `candidatesTokenCount`, not in it."""
    return usage_from(
        usage,
        input="promptTokenCount",
        output="candidatesTokenCount",
        reasoning="thoughtsTokenCount",
        cache_read="cachedContentTokenCount",
        total="totalTokenCount",
    )


class _Run:
    """A run of streamed text parts of one kind ("text" or "thought"), joined once at the end, and the signatures
    that came on its pieces."""

    __slots__ = ("chars", "kind", "left_out", "pieces", "signatures")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.pieces: list[str] = []
        self.chars = 0
        self.left_out = 0
        self.signatures: list[Part] = []

    def add(self, text: str) -> None:
        if self.chars + len(text) > MAX_ASSEMBLED_CHARS:
            self.left_out += len(text)
            return
        self.pieces.append(text)
        self.chars += len(text)

    def parts(self) -> list[Part]:
        text = "".join(self.pieces)
        found = []
        if text:
            found.append(
                Part("reasoning", text=text, field="thought") if self.kind == "thought" else Part("text", text=text)
            )
        return found + self.signatures


class _Candidate:
    __slots__ = ("items", "role")

    def __init__(self) -> None:
        self.role = "model"
        self.items: list[_Run | Part] = []

    def add(self, part: Any, where: str) -> None:
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str) or function_call(part) is not None:
            self.items.extend(part_parts(part, where))
            return
        kind = "thought" if part.get("thought") is True else "text"
        last = self.items[-1] if self.items else None
        run = last if isinstance(last, _Run) and (last.kind == kind or not text) else None
        if text:
            if run is None:
                run = _Run(kind)
                self.items.append(run)
            run.add(text)
        signature = _signature(part)
        if signature is not None:
            opaque = Part.opaque(signature[0], signature[1])
            if run is not None:
                run.signatures.append(opaque)
            else:
                self.items.append(opaque)

    def message(self, where: str) -> Message:
        parts: list[Part] = []
        left_out = 0
        for item in self.items:
            if isinstance(item, _Run):
                parts += item.parts()
                left_out += item.left_out
            else:
                parts.append(item)
        return Message(self.role, parts, where, note=f"{left_out:,} characters left out" if left_out else "")


def _index(value: Any, position: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else position


class GeminiAssembler(AnswerAssembler):
    def __init__(self) -> None:
        super().__init__()
        self._candidates: dict[int, _Candidate] = {}

    def _common(self, doc: dict[str, Any]) -> None:
        answer = self.answer
        if isinstance(doc.get("modelVersion"), str):
            answer.model = doc["modelVersion"]
        if isinstance(doc.get("usageMetadata"), dict):
            answer.usage = merge_usage(answer.usage, gemini_usage(doc["usageMetadata"]))
        error = doc.get("error")
        if isinstance(error, dict):
            answer.problem = text_of(error.get("message") or error)
        elif isinstance(error, str) and error:
            answer.problem = error
        feedback = doc.get("promptFeedback")
        if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
            answer.finish = feedback["blockReason"]

    def _candidate_list(self, doc: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
        candidates = doc.get("candidates")
        candidates = candidates if isinstance(candidates, list) else []
        self.kept.entries_left_out += max(0, len(candidates) - MAX_CHOICES)
        found = []
        for position, candidate in enumerate(candidates[:MAX_CHOICES]):
            if not isinstance(candidate, dict):
                continue
            found.append((_index(candidate.get("index"), position), candidate))
            if isinstance(candidate.get("finishReason"), str):
                self.answer.finish = candidate["finishReason"]
        return found

    def event(self, payload: dict[str, Any], name: str | None) -> None:
        self._common(payload)
        for index, candidate in self._candidate_list(payload):
            state = self.kept.slot(self._candidates, index, _Candidate, MAX_CHOICES)
            if state is None:
                continue
            content = candidate.get("content")
            if not isinstance(content, dict):
                continue
            if isinstance(content.get("role"), str) and content["role"]:
                state.role = content["role"]
            parts = content.get("parts")
            where = f"candidates[{index}].content.parts"
            if isinstance(parts, list):
                for part in parts:
                    state.add(part, where)
            elif parts is not None:
                state.items.append(other(where, parts))

    def document(self, doc: dict[str, Any]) -> None:
        self._common(doc)
        for index, candidate in self._candidate_list(doc):
            content = candidate.get("content")
            where = f"candidates[{index}]"
            message = Message("model", [], where) if content is None else content_message(content, where, "model")
            self.answer.messages.append(message)

    def finish(self) -> Answer:
        for index in sorted(self._candidates):
            self.answer.messages.append(self._candidates[index].message(f"candidates[{index}]"))
        note = self.kept.note()
        if note is not None:
            self.answer.messages.append(Message("?", [note], "candidates"))
        self._candidates.clear()
        return self.answer


TRANSCRIBER = GeminiTranscriber()
