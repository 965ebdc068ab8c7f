"""A recorded or passing flow as a transcript: the conversation its request carries (marked against what the
client sent, when a proxy repaired it live), and its answer or the diagnosis of its error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mitmproxy import http

from .. import wire as formats
from ..diagnosis import Diagnosis, classify
from ..shared import jsoncodec
from ..shared.flow_meta import flow_meta
from ..shared.limits import MAX_DECODED_BYTES, MAX_ERROR_BODY_BYTES
from ..wire.content_encoding import Undecodable, message_body, message_prefix
from ..wire.conversation import Answer, Conversation
from ..wire.event_stream import is_aws_event_stream
from ..wire.sse import is_event_stream, looks_like_event_stream
from . import conversation, read_answer
from .client_sent import client_sent_body
from .diff import Changes, compare


class NotTranscribed(ValueError):
    """A flow that is not LLM traffic, or whose body cannot be read: the reason is the message."""


_FORMAT_NAMES = frozenset(f.name for f in formats.FORMATS)


def wire_format_of(flow: http.HTTPFlow) -> formats.WireFormat | None:
    """The format the proxy gave the flow, else the format that would claim its request. Cheap for other traffic
    (the content view asks for every message shown): only a POST on an LLM route has its body decoded."""
    meta = flow_meta(flow)
    name = meta.get("format") if meta is not None else None
    if isinstance(name, str) and name in _FORMAT_NAMES:
        return formats.by_name(name)
    request = flow.request
    if not formats.routed(request.method, request.path):
        return None
    try:
        return formats.claim(request.method, request.path, message_body(request, MAX_DECODED_BYTES))
    except Undecodable:
        return None


def _document(body: bytes) -> Any:
    try:
        return jsoncodec.loads(body)
    except ValueError as e:
        raise NotTranscribed(f"the body is {jsoncodec.why_not_read(e)}") from e


@dataclass(slots=True)
class RequestTranscript:
    wire_format: str
    sent: Conversation  # what went upstream
    client_sent: Conversation | None = None  # what the client sent, when a proxy repaired the request live
    changes: Changes | None = None  # `sent` against `client_sent`, marked


def transcribe_request(flow: http.HTTPFlow, wire_format: formats.WireFormat) -> RequestTranscript:
    path = flow.request.path
    try:
        sent = conversation(wire_format.name, _document(message_body(flow.request, MAX_DECODED_BYTES)), path)
        original = client_sent_body(flow)
    except Undecodable as e:
        raise NotTranscribed(f"the request body {e}") from e
    transcript = RequestTranscript(wire_format.name, sent)
    if original is not None:
        transcript.client_sent = conversation(wire_format.name, _document(original), path)
        transcript.changes = compare(transcript.client_sent.messages, sent.messages)
    return transcript


def transcribe_answer(flow: http.HTTPFlow, wire_format: formats.WireFormat) -> Answer:
    response = flow.response
    if response is None:
        raise NotTranscribed("no response")
    try:
        body = message_body(response, MAX_DECODED_BYTES)
    except Undecodable as e:
        raise NotTranscribed(f"the response body {e}") from e
    aws_frames = is_aws_event_stream(response.headers)
    sse = is_event_stream(response.headers) or (not aws_frames and looks_like_event_stream(body))
    return read_answer(wire_format.name, body, sse=sse, aws_frames=aws_frames)


def diagnose(flow: http.HTTPFlow) -> Diagnosis | None:
    """The diagnosis of a 4xx or 5xx answer (what the provider's error text says), else None."""
    response = flow.response
    if response is None or response.status_code < 400:
        return None
    return classify(response.status_code, message_prefix(response, MAX_ERROR_BODY_BYTES))
