"""Fake Amazon Bedrock (bedrock-runtime): Claude behind InvokeModel and Converse, streams in AWS event-stream frames.

`POST /model/{modelId}/invoke` and `/invoke-with-response-stream` take the Anthropic Messages body (with
`anthropic_version`, the model in the path); `/converse` and `/converse-stream` take Converse's own body. Either way
the request is handed to Claude as Anthropic messages, and Claude's rules and texts are the fake Anthropic API's
(`fake_anthropic.MessagesFake`, its own instance): what Claude refuses comes back as Bedrock sends a model's
error, HTTP 400 `{"message": "The model returned the following errors: <Claude's text>"}` with
`x-amzn-ErrorType: ValidationException` (langchain-ai/langchain-aws #844, can1357/oh-my-pi PR #10486). A Converse
`reasoningText` without its `signature` is Claude's `thinking.signature: Field required`; one with its text emptied
and its signature kept, in the latest assistant message, Claude's "cannot be modified" (unless Claude's betas, the
body's `anthropic_beta` list, or Converse's `additionalModelRequestFields.anthropic_beta`, ask for
`redact-thinking-2026-02-12`).

Streams are event-stream frames (`application/vnd.amazon.eventstream`): InvokeModelWithResponseStream wraps each of
Claude's events, base64, in the `bytes` of a `chunk` event; ConverseStream sends `messageStart`, `contentBlockDelta`
(reasoning text, then its signature in a delta of its own; a redacted blob whole), `contentBlockStart` for a tool use,
`contentBlockStop`, `messageStop`, `metadata`, each payload with Bedrock's random padding `p` (the pydantic-ai
cassettes in tests/fixtures/bedrock/).

Requests signed with AWS SigV4 are checked as AWS checks them (`sigv4.verify`, over the body as received): a
request changed after signing gets AWS's 403. `Authorization: Bearer …` (a Bedrock API key) signs nothing.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from llm_reasoning_proxy.wire.event_stream import event_frame

from . import sigv4
from .fake_anthropic import MessagesFake, betas, omitted, stream_events
from .fake_provider import Options, Recorded, Reply

ROUTE = re.compile(
    r"^/model/(?P<model>[^/?]+(?:/[^/?]+)*?)/(?P<action>invoke-with-response-stream|invoke|converse-stream|converse)$"
)
# The access keys the fake knows (access key id -> secret access key): AWS's documented example key.
SECRETS = {"AKIAIOSFODNN7EXAMPLE": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
MODEL_ERRORS = "The model returned the following errors: "
VALIDATION = "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
# AWS's text (IAM user guide, "Troubleshoot Signature Version 4 signing for AWS API requests").
SIGNATURE_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access "
    "Key and signing method. Consult the service documentation for details."
)
SIGNATURE_MISSING = "messages.{index}.content.{block}.thinking.signature: Field required"
EVENT_STREAM = "application/vnd.amazon.eventstream"


def bedrock_error(status: int, message: str, error_type: str) -> Reply:
    return Reply(status, {"message": message}, headers={"x-amzn-errortype": error_type})


def _padding(payload: dict[str, Any]) -> bytes:
    """A payload with Bedrock's padding key, whose length varies from frame to frame."""
    size = len(json.dumps(payload)) % 37 + 1
    return json.dumps({**payload, "p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[:size]}).encode()


def frame(event_type: str, payload: dict[str, Any]) -> bytes:
    return event_frame(event_type, _padding(payload))


def chunk(event: dict[str, Any]) -> bytes:
    """One of Claude's events as InvokeModelWithResponseStream sends it."""
    return frame("chunk", {"bytes": base64.b64encode(json.dumps(event).encode()).decode()})


class BedrockDialect:
    name = "bedrock"

    def __init__(self) -> None:
        self.claude = MessagesFake()  # the models behind it: their rules, and what they issued
        self.secrets = dict(SECRETS)  # a test adds access keys of its own

    def matches(self, path: str) -> bool:
        return ROUTE.match(path.split("?", 1)[0]) is not None

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        route = ROUTE.match(recorded.path.split("?", 1)[0])
        assert route is not None
        authorization = recorded.headers.get("authorization", "")
        if authorization.startswith(sigv4.ALGORITHM):
            if not sigv4.verify("POST", recorded.path, recorded.headers, recorded.body, self.secrets):
                return bedrock_error(403, SIGNATURE_MISMATCH, "InvalidSignatureException")
        elif not authorization.startswith("Bearer "):
            return bedrock_error(403, "Missing Authentication Token", "MissingAuthenticationTokenException")
        model = route["model"].replace("%3A", ":").replace("%3a", ":")
        if route["action"].startswith("invoke"):
            return self.invoke(doc, model, route["action"] == "invoke-with-response-stream", recorded, options)
        return self.converse(doc, model, route["action"] == "converse-stream", recorded, options)

    # InvokeModel -----------------------------------------------------------------------------
    def invoke(self, doc: dict, model: str, stream: bool, recorded: Recorded, options: Options) -> Reply:
        claude_doc = {**doc, "model": model}
        problem = self.claude.validate(claude_doc, betas(None, doc.get("anthropic_beta")))
        if problem is not None:
            return bedrock_error(400, MODEL_ERRORS + problem, VALIDATION)
        message = self.claude.answer(claude_doc, options, recorded.headers.get("x-fake-redacted"), omitted(recorded))
        message["id"] = message["id"].replace("msg_01", "msg_bdrk_01", 1)
        if not stream:
            return Reply(200, message)
        events = [json.loads(event.split(b"data: ", 1)[1]) for event in stream_events(message, options)]
        events[-1]["amazon-bedrock-invocationMetrics"] = {"inputTokenCount": 10, "outputTokenCount": 5}
        return Reply(200, events=[chunk(event) for event in events], headers={"content-type": EVENT_STREAM})

    # Converse --------------------------------------------------------------------------------
    def converse(self, doc: dict, model: str, stream: bool, recorded: Recorded, options: Options) -> Reply:
        claude_doc, problem = as_claude(doc, model)
        extra = doc.get("additionalModelRequestFields") or {}
        problem = problem or self.claude.validate(claude_doc, betas(None, extra.get("anthropic_beta")))
        if problem is not None:
            return bedrock_error(400, MODEL_ERRORS + problem, VALIDATION)
        message = self.claude.answer(claude_doc, options, recorded.headers.get("x-fake-redacted"), omitted(recorded))
        content = [converse_block(block) for block in message["content"]]
        stop = message["stop_reason"]
        if stream:
            return Reply(200, events=converse_frames(content, stop), headers={"content-type": EVENT_STREAM})
        usage = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
        answer = {"role": "assistant", "content": content}
        return Reply(
            200, {"output": {"message": answer}, "stopReason": stop, "usage": usage, "metrics": {"latencyMs": 9}}
        )


def _claude_block(block: Any, index: int, position: int) -> tuple[dict | None, str | None]:
    """A Converse content block as Claude gets it, or the error Claude gives for it."""
    if not isinstance(block, dict):
        return None, None
    if "text" in block:
        return {"type": "text", "text": block["text"]}, None
    if "toolUse" in block:
        use = block["toolUse"]
        return {
            "type": "tool_use",
            "id": use.get("toolUseId"),
            "name": use.get("name"),
            "input": use.get("input"),
        }, None
    if "toolResult" in block:
        result = block["toolResult"]
        return {"type": "tool_result", "tool_use_id": result.get("toolUseId"), "content": result.get("content")}, None
    reasoning = block.get("reasoningContent")
    if isinstance(reasoning, dict) and "redactedContent" in reasoning:
        return {"type": "redacted_thinking", "data": base64.b64decode(reasoning["redactedContent"]).decode()}, None
    if isinstance(reasoning, dict) and isinstance(reasoning.get("reasoningText"), dict):
        text = reasoning["reasoningText"]
        if "signature" not in text:
            return None, SIGNATURE_MISSING.format(index=index, block=position)
        return {"type": "thinking", "thinking": text.get("text"), "signature": text["signature"]}, None
    return None, None


def as_claude(doc: dict, model: str) -> tuple[dict, str | None]:
    """A Converse request as the Anthropic messages Bedrock hands Claude, and the first error that makes."""
    messages = []
    for index, message in enumerate(doc.get("messages") or []):
        content = []
        for position, block in enumerate(message.get("content") or []):
            converted, problem = _claude_block(block, index, position)
            if problem is not None:
                return {}, problem
            if converted is not None:
                content.append(converted)
        messages.append({"role": message.get("role"), "content": content})
    extra = doc.get("additionalModelRequestFields") or {}
    tools = [{"name": t["toolSpec"]["name"]} for t in (doc.get("toolConfig") or {}).get("tools", []) if "toolSpec" in t]
    claude_doc: dict[str, Any] = {"model": model, "messages": messages, "tools": tools}
    if isinstance(extra.get("thinking"), dict):
        claude_doc["thinking"] = extra["thinking"]
    return claude_doc, None


def converse_block(block: dict) -> dict:
    """One of Claude's content blocks as Converse answers it (a redacted block's data base64 once more)."""
    if block["type"] == "thinking":
        return {"reasoningContent": {"reasoningText": {"text": block["thinking"], "signature": block["signature"]}}}
    if block["type"] == "redacted_thinking":
        return {"reasoningContent": {"redactedContent": base64.b64encode(block["data"].encode()).decode()}}
    if block["type"] == "tool_use":
        return {"toolUse": {"toolUseId": block["id"], "name": block["name"], "input": block["input"]}}
    return {"text": block["text"]}


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text) or [text]


def converse_frames(content: list[dict], stop_reason: str) -> list[bytes]:
    """The ConverseStream frames of an answer, in Bedrock's order."""
    frames = [frame("messageStart", {"role": "assistant"})]

    def delta(index: int, value: dict) -> None:
        frames.append(frame("contentBlockDelta", {"contentBlockIndex": index, "delta": value}))

    for index, block in enumerate(content):
        reasoning = block.get("reasoningContent")
        if reasoning is not None and "redactedContent" in reasoning:
            delta(index, {"reasoningContent": {"redactedContent": reasoning["redactedContent"]}})
        elif reasoning is not None:
            for piece in _words(reasoning["reasoningText"]["text"]):
                delta(index, {"reasoningContent": {"text": piece}})
            delta(index, {"reasoningContent": {"signature": reasoning["reasoningText"]["signature"]}})
        elif "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            frames.append(frame("contentBlockStart", {"start": start, "contentBlockIndex": index}))
            arguments = json.dumps(use["input"])
            for at in range(0, len(arguments), 5):
                delta(index, {"toolUse": {"input": arguments[at : at + 5]}})
        else:
            for piece in _words(block["text"]):
                delta(index, {"text": piece})
        frames.append(frame("contentBlockStop", {"contentBlockIndex": index}))
    frames.append(frame("messageStop", {"stopReason": stop_reason}))
    usage = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    frames.append(frame("metadata", {"usage": usage, "metrics": {"latencyMs": 9}}))
    return frames
