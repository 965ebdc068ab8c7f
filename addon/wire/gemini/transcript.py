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

from ..assembly import AnswerAssembler, ListTranscriber, merge_usage, other, text_of, usage_from
from ..conversation import Answer, Conversation, Message, Part, Usage
from .parts import FUNCTION_RESPONSE_KEYS, METHODS, NAME, call_parts, function_call, path_model, shown_signature
from .stream import Candidate, GeminiStream, Run, Signature, Unlisted

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
    signature = shown_signature(part)
    if signature is not None:
        key, value = signature
        parts.append(Part.opaque(key, value if isinstance(value, str) else text_of(value), belongs_to))
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
    # The chunks that say the answer's usage and why it stopped (each names its model and id): an answer read for its
    # summary alone reads no other (ReadingAndAssembling). Gemini puts its usage so far on most chunks, and a stream
    # may end without a finishReason (a capture of Gemini 3's), so most chunks are read.
    summary_markers = (b'"finishReason"', b'"usageMetadata"')
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


def run_parts(run: Run) -> list[Part]:
    """A run of streamed text as one part, then the signatures that came on its pieces."""
    text = run.text()
    found = []
    if text:
        found.append(
            Part("reasoning", text=text, field="thought") if run.kind == "thought" else Part("text", text=text)
        )
    return found + [_opaque(signature) for signature in run.signatures]


def _opaque(signature: Signature) -> Part:
    return Part.opaque(signature.key, signature.value if isinstance(signature.value, str) else text_of(signature.value))


def candidate_message(candidate: Candidate, where: str) -> Message:
    """A streamed candidate as one message: its runs of text joined, every other part as it came."""
    parts: list[Part] = []
    left_out = 0
    for item in candidate.items or ():
        if isinstance(item, Run):
            parts += run_parts(item)
            left_out += item.left_out
        elif isinstance(item, Signature):
            parts.append(_opaque(item))
        elif isinstance(item, Unlisted):
            parts.append(other(f"{where}.content.parts", item.value))
        else:
            parts += part_parts(item, f"{where}.content.parts")
    return Message(candidate.role, parts, where, note=f"{left_out:,} characters left out" if left_out else "")


class GeminiAssembler(AnswerAssembler):
    def __init__(self) -> None:
        super().__init__()
        self.stream = GeminiStream(keep_text=True, kept=self.kept)

    def _common(self, doc: dict[str, Any]) -> None:
        answer = self.answer
        if isinstance(doc.get("modelVersion"), str):
            answer.model = doc["modelVersion"]
        if isinstance(doc.get("responseId"), str):
            answer.id = doc["responseId"]
        if isinstance(doc.get("usageMetadata"), dict):
            answer.usage = merge_usage(answer.usage, gemini_usage(doc["usageMetadata"]))
        error = doc.get("error")
        if isinstance(error, dict):
            answer.problem = text_of(error.get("message") or error)
        elif isinstance(error, str) and error:
            answer.problem = error

    def event(self, payload: dict[str, Any], name: str | None) -> None:
        self._common(payload)
        self.stream.chunk(payload)

    def document(self, doc: dict[str, Any]) -> None:
        self._common(doc)
        self.stream.response(doc)

    def finish(self) -> Answer:
        stream = self.stream
        if stream.finish is not None:
            self.answer.finish = stream.finish
        for index, content in stream.whole:
            where = f"candidates[{index}]"
            message = Message("model", [], where) if content is None else content_message(content, where, "model")
            self.answer.messages.append(message)
        for index in sorted(stream.candidates):
            self.answer.messages.append(candidate_message(stream.candidates[index], f"candidates[{index}]"))
        note = self.kept.note()
        if note is not None:
            self.answer.messages.append(Message("?", [note], "candidates"))
        stream.candidates.clear()
        stream.whole.clear()
        return self.answer


TRANSCRIBER = GeminiTranscriber()
