"""A flow's request or answer as lines of styled text: what the LLM content view shows in mitmweb and the console.

Each line is a list of (style, text) pieces; the style names are mitmproxy's own (header, key, text, highlight,
error, warn), which the console and mitmweb both colour.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mitmproxy import http

from ..diagnosis import Diagnosis
from ..shared.flow_meta import flow_meta
from ..shared.limits import cut_text
from ..wire.conversation import Answer, Conversation, Message, Part, Usage
from .diff import Changes
from .flows import NotTranscribed, diagnose, transcribe_answer, transcribe_request, wire_format_of

Line = list[tuple[str, str]]
MAX_PART_CHARS = 16 * 1024  # a part's text past this is cut in the view (the body itself has it all)
MAX_LINES = 50_000
MARK_STYLE = {"restored": "highlight", "new": "highlight", "merged": "warn", "removed": "error", "dropped": "error"}


@dataclass(slots=True)
class Rendered:
    title: str
    lines: list[Line] = field(default_factory=list)

    def add(self, *pieces: tuple[str, str]) -> None:
        if len(self.lines) < MAX_LINES:
            self.lines.append(list(pieces))
        elif len(self.lines) == MAX_LINES:
            self.lines.append([("warn", "… the rest is left out of this view")])

    def text(self) -> str:
        return "\n".join("".join(text for _, text in line) for line in self.lines)


def opaque_label(part: Part) -> str:
    return f"{part.length:,} characters, sha256 {part.digest}"


def _mark(mark: str | None) -> list[tuple[str, str]]:
    return [(MARK_STYLE.get(mark, "warn"), f"[{mark}] ")] if mark else []


def _text_lines(view: Rendered, lead: list[tuple[str, str]], text: str, style: str = "text") -> None:
    text = cut_text(text, MAX_PART_CHARS) if len(text) > MAX_PART_CHARS else text
    lines = text.split("\n") or [""]
    view.add(*lead, (style, lines[0]))
    for line in lines[1:]:
        view.add(("text", "    "), (style, line))


def render_part(view: Rendered, part: Part) -> None:
    lead = [("text", "  ")] + _mark(part.mark)
    if part.kind == "text":
        _text_lines(view, lead, part.text)
    elif part.kind == "reasoning":
        _text_lines(view, lead + [("key", f"reasoning ({part.field}): ")], part.text, "warn")
    elif part.kind == "opaque":
        call = f" of {part.call_id}" if part.call_id else ""
        view.add(*lead, ("key", f"{part.field}{call}: "), ("value", opaque_label(part)))
    elif part.kind == "tool_call":
        view.add(
            *lead, ("key", "tool call "), ("value", f"{part.name or '?'}"), ("text", f"  id {part.call_id or '-'}")
        )
        _text_lines(view, [("text", "    ")], part.text)
    elif part.kind == "tool_result":
        _text_lines(view, lead + [("key", f"tool result for {part.call_id or '?'}: ")], part.text)
    elif part.kind == "media":
        view.add(*lead, ("key", f"{part.name or 'media'}: "), ("text", part.text))
    else:
        _text_lines(view, lead + [("key", f"{part.field or 'other'}: ")], part.text)


def render_message(view: Rendered, message: Message) -> None:
    note = f"  ({message.note})" if message.note else ""
    view.add(*_mark(message.mark), ("header", f"{message.role}"), ("text", f"  {message.where}{note}"))
    for part in message.parts:
        render_part(view, part)


def usage_line(usage: Usage) -> str:
    names = (
        ("input", usage.input),
        ("output", usage.output),
        ("reasoning", usage.reasoning),
        ("cache read", usage.cache_read),
        ("cache write", usage.cache_write),
        ("total", usage.total),
    )
    return ", ".join(f"{name} {value:,}" for name, value in names if value is not None)


def render_conversation(conversation: Conversation, changes: Changes | None) -> Rendered:
    count = len(conversation.messages)
    view = Rendered(f"LLM {conversation.wire_format}: {conversation.model or '?'}, {count} message(s)")
    view.add(
        ("key", "model: "),
        ("value", conversation.model or "?"),
        ("text", "  (streamed)" if conversation.stream else ""),
    )
    for name, value in conversation.settings.items():
        view.add(("key", f"{name}: "), ("value", str(value)))
    if conversation.tools:
        view.add(("key", "tools: "), ("text", ", ".join(conversation.tools)))
    if changes is not None:
        summary = f"the proxy restored {changes.added}, removed {changes.removed}, merged {changes.merged}"
        view.add(("highlight" if changes else "text", summary if changes else "the proxy sent it as the client did"))
    view.add(("text", ""))
    for message in changes.messages if changes is not None else conversation.messages:
        render_message(view, message)
    return view


def render_answer(answer: Answer) -> Rendered:
    how = f"streamed, {answer.events:,} events" if answer.streamed else "JSON"
    view = Rendered(f"LLM answer ({how})")
    view.add(("key", "model: "), ("value", answer.model or "?"), ("text", f"  ({how})"))
    if answer.finish:
        view.add(("key", "finish: "), ("value", answer.finish))
    if answer.usage:
        view.add(("key", "usage: "), ("value", usage_line(answer.usage)))
    if answer.unreadable:
        view.add(("warn", f"{answer.unreadable} event(s) held no JSON"))
    if answer.problem:
        view.add(("error", f"error in the stream: {answer.problem}"))
    view.add(("text", ""))
    for message in answer.messages:
        render_message(view, message)
    return view


def render_diagnosis(flow: http.HTTPFlow, diagnosis: Diagnosis) -> Rendered:
    status = flow.response.status_code if flow.response is not None else 0
    view = Rendered(f"LLM error {status}: {diagnosis.rule}")
    view.add(("error", f"HTTP {status}: "), ("text", diagnosis.summary))
    view.add(("key", "rule: "), ("value", diagnosis.rule), ("text", f"  provider {diagnosis.provider}"))
    if diagnosis.field:
        view.add(("key", "field: "), ("value", diagnosis.field))
    meta = flow_meta(flow) or {}
    found = meta.get("diagnosis") if isinstance(meta.get("diagnosis"), dict) else {}
    location = found.get("location") or (f"index {diagnosis.index}" if diagnosis.index is not None else None)
    if location:
        view.add(("key", "where: "), ("value", str(location)))
    for finding in found.get("findings") or []:
        view.add(("warn", f"- {finding}"))
    if flow.comment:
        view.add(("text", ""))
        for line in flow.comment.splitlines():
            view.add(("text", line))
    view.add(("text", ""))
    _text_lines(view, [("key", "the provider said: ")], diagnosis.message)
    return view


def render(flow: http.HTTPFlow, message: http.Message) -> Rendered | None:
    """The view of `message` (the flow's request or response), or None for traffic that is not LLM traffic."""
    wire_format = wire_format_of(flow)
    if wire_format is None:
        return None
    try:
        if message is flow.request:
            request = transcribe_request(flow, wire_format)
            return render_conversation(request.sent, request.changes)
        diagnosis = diagnose(flow)
        if diagnosis is not None:
            return render_diagnosis(flow, diagnosis)
        return render_answer(transcribe_answer(flow, wire_format))
    except NotTranscribed as e:
        return Rendered(f"LLM {wire_format.name}: not shown", [[("warn", f"not shown: {e}")]])
