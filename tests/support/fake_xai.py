"""Fake xAI Responses API (`POST /xai/v1/responses`, standing for `https://api.x.ai/v1/responses`).

The path prefix routes requests here instead of to the OpenAI fake; xAI's answers differ from OpenAI's where the
real captures in tests/fixtures/xai/ show it:

* a bare UUID as the response id, reused by its items: `rs_<id>`, `msg_<id>`, function calls `fc_<id>_<n>` (the
  shape xAI gives its server-side tool calls in vercel/ai's `xai-web-search-tool.1.json`; its ids for client
  function calls and their `call_<8 digits>` call_id, the id shape of xAI's chat completions in vercel/ai's
  `xai-tool-call.json`, are the fake's assumptions);
* `encrypted_content` only when the request has `include: ["reasoning.encrypted_content"]`: standard base64, not a
  Fernet token; absent from `response.output_item.added`, whole in `response.output_item.done`, the same bytes in
  `response.completed`;
* stream payloads with `sequence_number` and without `event:` lines (the capture keeps one payload per line, so the
  real framing is not known); usage with `num_sources_used` and `cost_in_usd_ticks`.

A request without tools for the captured model that asks for encrypted reasoning is answered with the capture itself:
streamed, the store-false stream (`vercel_grok_code_fast_1_reasoning_encrypted_store_false_stream.chunks.txt`), as
JSON its final response.

Rules enforced, with xAI's texts in its envelope `{"code": "invalid-argument", "error": …}`
(https://github.com/vercel/ai/blob/main/packages/xai/src/xai-error.ts):

* a reasoning item with `encrypted_content` but no `summary`: "Could not decode the compaction blob. …"
  (https://github.com/chenyme/grok2api/pull/689, checked against xAI);
* an `encrypted_content` the fake did not issue, or issued for another model: "Could not decrypt the provided
  encrypted_content. …" (https://github.com/hackerai-tech/hackerai/pull/996; the same text for a blob from another
  account or vendor). Which of the two xAI says for an item that breaks both is not known: the summary is checked
  first.

A function call or message sent back without the reasoning item it came with is not refused: xAI answers, but the
model goes on without that reasoning (https://github.com/duolahypercho/codex-router/issues/888). The fake answers
200 and marks the answer `x-fake-degraded: reasoning-dropped`.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fake_provider import Options, Recorded, Reply, sse_event

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "xai"
CAPTURED_STREAM = FIXTURES / "vercel_grok_code_fast_1_reasoning_encrypted_store_false_stream.chunks.txt"
CAPTURED_MODEL = "grok-code-fast-1"
UNDECRYPTABLE = (
    "Could not decrypt the provided encrypted_content. Ensure the value is the unmodified encrypted_content from a "
    "previous response."
)
COMPACTION_BLOB = "Could not decode the compaction blob. Ensure it is unmodified from the compact response."
DEGRADED = "reasoning-dropped"
FINAL_ANSWER = "The directory holds two files."
INCLUDE_ENCRYPTED = "reasoning.encrypted_content"


def error(text: str) -> Reply:
    return Reply(400, {"code": "invalid-argument", "error": text})


def captured_payloads() -> list[str]:
    """The captured stream, one payload a line, as recorded."""
    return [line for line in CAPTURED_STREAM.read_text().splitlines() if line.strip()]


@dataclass
class Issued:
    """A reasoning item as issued, and the items it produced."""

    item: dict[str, Any]
    model: str
    produced: set[str] = field(default_factory=set)  # fc_/msg_ ids and call_ids


def _is_message(item: Any, role: str) -> bool:
    return isinstance(item, dict) and item.get("type") in (None, "message") and item.get("role") == role


def _reasoning_item(response_id: str, summary: str, encrypted: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": f"rs_{response_id}",
        "summary": [{"text": summary, "type": "summary_text"}],
        "type": "reasoning",
        "status": "completed",
    }
    if encrypted:  # standard base64, as the capture's 1731 characters are
        item["encrypted_content"] = base64.b64encode(os.urandom(1298)).decode()
    return item


class XaiResponsesDialect:
    name = "xai"

    def __init__(self) -> None:
        self.issued: dict[str, Issued] = {}  # rs id -> what was issued
        self._owner: dict[str, str] = {}  # fc/msg id or call_id -> rs id
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        route = path.split("?")[0].rstrip("/")
        return route.startswith("/xai/") and route.endswith("/responses")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        items = doc.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or [])
        model = str(doc.get("model", ""))
        with self._lock:
            failure = self._refusal(items, model)
            if failure is not None:
                return failure
            headers = {"x-fake-degraded": DEGRADED} if self._dropped(items) else {}
            reply = self._answer(doc, items, model, options)
        reply.headers.update(headers)
        return reply

    # rules -----------------------------------------------------------------------------------
    def _refusal(self, items: list[Any], model: str) -> Reply | None:
        for item in items:
            if not isinstance(item, dict) or item.get("type") != "reasoning" or "encrypted_content" not in item:
                continue
            if "summary" not in item:
                return error(COMPACTION_BLOB)
            issued = self.issued.get(str(item.get("id")))
            if issued is None or issued.item.get("encrypted_content") != item["encrypted_content"]:
                return error(UNDECRYPTABLE)
            if issued.model != model:
                return error(UNDECRYPTABLE)
        return None

    def _dropped(self, items: list[Any]) -> bool:
        """Whether an item the model produced came back without its reasoning item before its group."""
        for index, item in enumerate(items):
            owner = self._owner_of(item)
            if owner is None:
                continue
            before = index - 1
            while before >= 0 and self._in_group(items[before], owner):
                before -= 1
            previous = items[before] if before >= 0 else None
            if not (isinstance(previous, dict) and previous.get("type") == "reasoning" and previous.get("id") == owner):
                return True
        return False

    def _owner_of(self, item: Any) -> str | None:
        if not isinstance(item, dict):
            return None
        if item.get("type") == "function_call":
            return self._owner.get(str(item.get("call_id")))
        if _is_message(item, "assistant"):
            return self._owner.get(str(item.get("id")))
        return None

    def _in_group(self, item: Any, owner: str) -> bool:
        if self._owner_of(item) == owner:
            return True
        kind = item.get("type") if isinstance(item, dict) else None
        return isinstance(kind, str) and kind.endswith("_output")

    # answers ---------------------------------------------------------------------------------
    def _answer(self, doc: dict, items: list[Any], model: str, options: Options) -> Reply:
        streamed = bool(doc.get("stream"))
        encrypted = INCLUDE_ENCRYPTED in (doc.get("include") or [])
        if not doc.get("tools") and model == CAPTURED_MODEL and encrypted:
            return self._captured(streamed)
        last = items[-1] if items else None
        tool_turn = _is_message(last, "user") and bool(doc.get("tools"))
        response_id = str(uuid.uuid4())
        name = next(
            (t.get("name") for t in doc.get("tools") or [] if isinstance(t, dict) and t.get("name")), "list_directory"
        )
        summary = f"The user asks what is in a directory. I should call {name}." if tool_turn else "Summarise it."
        reasoning = _reasoning_item(response_id, summary, encrypted)
        output: list[dict[str, Any]] = [reasoning]
        if tool_turn:
            output += [
                {
                    "call_id": f"call_{secrets.randbelow(10**8):08d}",
                    "name": name,
                    "arguments": json.dumps({"path": f"dir{i}"}),
                    "type": "function_call",
                    "id": f"fc_{response_id}_{i}",
                    "status": "completed",
                }
                for i in range(options.parallel)
            ]
        else:
            output.append(
                {
                    "content": [{"type": "output_text", "text": FINAL_ANSWER, "logprobs": [], "annotations": []}],
                    "id": f"msg_{response_id}",
                    "role": "assistant",
                    "type": "message",
                    "status": "completed",
                }
            )
        self._issue(reasoning, output[1:], model)
        response = self._response(doc, response_id, model, output)
        if not streamed:
            return Reply(200, response)
        return Reply(200, events=[sse_event(payload) for payload in _stream(response)])

    def _captured(self, streamed: bool) -> Reply:
        payloads = captured_payloads()
        response = json.loads(payloads[-1])["response"]
        self._issue(response["output"][0], response["output"][1:], CAPTURED_MODEL)
        if not streamed:
            return Reply(200, response)
        return Reply(200, events=[sse_event(payload) for payload in payloads])

    def _issue(self, reasoning: dict[str, Any], produced: list[dict[str, Any]], model: str) -> None:
        issued = Issued(json.loads(json.dumps(reasoning)), model)
        for item in produced:
            key = item["call_id"] if item["type"] == "function_call" else item["id"]
            issued.produced.add(key)
            self._owner[key] = reasoning["id"]
        self.issued[reasoning["id"]] = issued

    @staticmethod
    def _response(doc: dict, response_id: str, model: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "created_at": int(time.time()),
            "id": response_id,
            "max_output_tokens": None,
            "model": model,
            "object": "response",
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": doc.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None},
            "temperature": None,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": doc.get("tools") or [],
            "top_p": None,
            "usage": {
                "input_tokens": 216,
                "input_tokens_details": {"cached_tokens": 192},
                "output_tokens": 83,
                "output_tokens_details": {"reasoning_tokens": 25},
                "total_tokens": 299,
                "num_sources_used": 0,
                "num_server_side_tools_used": 0,
                "cost_in_usd_ticks": 1399000,
            },
            "user": None,
            "incomplete_details": None,
            "status": "completed",
            "store": doc.get("store") is not False,
            "metadata": {},
        }


def _stream(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The payloads of a streamed answer, in the captured order; `response.completed` repeats the items as they were
    done, byte for byte."""
    started = {**response, "output": [], "status": "in_progress"}
    payloads: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(response["output"]):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "reasoning":
            text = item["summary"][0]["text"]
            added = {k: v for k, v in item.items() if k != "encrypted_content"}
            payloads.append(
                {
                    "type": "response.output_item.added",
                    "item": {**added, "summary": [], "status": "in_progress"},
                    "output_index": index,
                }
            )
            part = {"text": "", "type": "summary_text"}
            payloads.append({"type": "response.reasoning_summary_part.added", **at, "part": part, "summary_index": 0})
            payloads += [
                {"type": "response.reasoning_summary_text.delta", "delta": piece, **at, "summary_index": 0}
                for piece in re.findall(r"\S+\s*", text)
            ]
            payloads.append({"type": "response.reasoning_summary_text.done", **at, "summary_index": 0, "text": text})
            payloads.append(
                {
                    "type": "response.reasoning_summary_part.done",
                    **at,
                    "part": {**part, "text": text},
                    "summary_index": 0,
                }
            )
        elif item["type"] == "function_call":
            payloads.append(
                {
                    "type": "response.output_item.added",
                    "item": {**item, "arguments": "", "status": "in_progress"},
                    "output_index": index,
                }
            )
            payloads.append({"type": "response.function_call_arguments.delta", "delta": item["arguments"], **at})
            payloads.append({"type": "response.function_call_arguments.done", "arguments": item["arguments"], **at})
        else:
            text = item["content"][0]["text"]
            payloads.append(
                {
                    "type": "response.output_item.added",
                    "item": {**item, "content": [], "status": "in_progress"},
                    "output_index": index,
                }
            )
            payloads += [
                {"type": "response.output_text.delta", "content_index": 0, "delta": piece, **at, "logprobs": []}
                for piece in re.findall(r"\S+\s*", text)
            ]
            payloads.append({"type": "response.output_text.done", "content_index": 0, **at, "text": text})
        payloads.append({"type": "response.output_item.done", "item": item, "output_index": index})
    payloads.append({"type": "response.completed", "response": response})
    return [{"sequence_number": n, **payload} for n, payload in enumerate(payloads)]
