"""Fake OpenAI Responses API dialect (`POST …/responses`): reasoning items and the items they produced.

Every answer begins with a reasoning item (`rs_…`, a Fernet-looking
`encrypted_content`, a summary); a tool turn follows it with `x-fake-parallel`
function calls (and, with `x-fake-content`, a message item first), a final
answer with a message item. Streams use the real framing and event order:
`output_item.added` carries a stub `encrypted_content`, `output_item.done` the
full value, and `response.completed` a re-encrypted copy of the same length
with different bytes. Responses are remembered by id for
`previous_response_id` (unless sent with `store: false`).

Rules enforced, with the real texts from the issues named (HTTP 400, envelope
`{"error":{"message":…,"type":"invalid_request_error","param":"input","code":null}}`
as in https://github.com/cline/cline/issues/12242):

* a function call (matched by `call_id`; some clients omit the `fc_` id) or an
  assistant message (matched by its `msg_` id) whose reasoning item is not
  right before its group: "Item 'fc_…' of type 'function_call' was provided
  without its required 'reasoning' item: 'rs_…'." (the ids the fake issued).
  The group is the items of the same response, with tool outputs allowed in
  between (clients that interleave calls and outputs); how strict the real
  service is about interleaving is not known;
* a reasoning item followed by nothing or by an input-side item: "Item 'rs_…'
  of type 'reasoning' was provided without its required following item."
  (https://github.com/openai/openai-node/issues/1567);
* with `previous_response_id`, an item already in the stored chain:
  "Duplicate item found with id rs_…. Remove duplicate items from your input
  and try again." (https://github.com/vercel/ai/issues/7883);
* a reasoning item without `encrypted_content` from a response sent with
  `store: false`: the 404 "Item with id 'rs_…' not found. Items are not
  persisted when `store` is set to false. …"
  (https://github.com/anomalyco/opencode/issues/7724);
* an `encrypted_content` that is neither copy the fake issued for that item:
  see `UNVERIFIED`;
* an `encrypted_content` issued for another model (deployment): the same
  `invalid_encrypted_content` error (openai/codex #8145, #17541 after a model
  switch). Items produced under another model's reasoning are taken without
  it: the rule on required reasoning items is only applied to the model that
  issued them (the fake's assumption: with `store: false` the server cannot
  link an item of another model's answer to its reasoning).
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .fake_provider import Options, Recorded, Reply, sse_event

MISSING_REASONING = (
    "Item '{item_id}' of type '{item_type}' was provided without its required 'reasoning' item: '{rs_id}'."
)
ORPHANED_REASONING = "Item '{rs_id}' of type 'reasoning' was provided without its required following item."
DUPLICATE_ITEM = "Duplicate item found with id {item_id}. Remove duplicate items from your input and try again."
NOT_PERSISTED = (
    "Item with id '{item_id}' not found. Items are not persisted when `store` is set to false. "
    "Try again with `store` set to true, or remove this item from your input."
)
# The fake's own text: no quote of the real one for a tampered value was found. Its shape (first and last four
# characters, code "invalid_encrypted_content", param null) follows reports of the real error in
# openai/codex issues #8132 and #8145.
UNVERIFIED = "The encrypted content {abbreviated} could not be verified."
# The fake's own text for an unknown or unstored previous response.
NO_PREVIOUS = "Previous response with id '{response_id}' not found."
FINAL_ANSWER = "The directory holds two files."


def error(message: str, *, status: int = 400, param: str | None = "input", code: str | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})


def fernet_like(size: int) -> str:
    """A value shaped like OpenAI's encrypted_content: a Fernet token, "gAAAAAB…", url-safe base64."""
    return "gAAAAAB" + base64.urlsafe_b64encode(os.urandom(size)).decode()


@dataclass
class IssuedReasoning:
    response_id: str
    item: dict[str, Any]  # as issued whole: the output_item.done copy of a stream, or the document's
    completed_content: str  # the encrypted_content of the response.completed copy
    stored: bool
    produced: list[str] = field(default_factory=list)  # fc_ / msg_ ids issued after it
    model: str = ""  # the model the request named


@dataclass
class StoredResponse:
    previous: str | None
    stored: bool
    items: list[dict[str, Any]]  # the request's input, then the output


def _items_of(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return list(value) if isinstance(value, list) else []


def _is_message(item: Any, *roles: str) -> bool:
    return isinstance(item, dict) and item.get("type") in (None, "message") and item.get("role") in roles


def _is_input_side(item: Any) -> bool:
    if _is_message(item, "user", "system", "developer"):
        return True
    kind = item.get("type") if isinstance(item, dict) else None
    return isinstance(kind, str) and kind.endswith("_output")


def _abbreviated(value: str) -> str:
    return f"{value[:4]}...{value[-4:]}"


def _item_id(kind: str, prefix: str) -> str:
    """An id like the real ones: the items of one response share the response's hex prefix."""
    return f"{kind}_{prefix}{secrets.token_hex(13)}"


class ResponsesDialect:
    name = "responses"

    def __init__(self) -> None:
        self.issued: dict[str, IssuedReasoning] = {}  # rs id -> what was issued
        self.calls: dict[str, tuple[str, str]] = {}  # call_id -> (fc id, rs id)
        self.messages: dict[str, str] = {}  # msg id -> rs id
        self.responses: dict[str, StoredResponse] = {}
        self._by_content: dict[str, str] = {}  # either issued encrypted_content -> rs id
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return path.split("?")[0].rstrip("/").endswith("/responses")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        with self._lock:
            items = _items_of(doc.get("input"))
            chain, failure = self._chain(doc, items)
            if failure is not None:
                return failure
            failure = self.validate(chain, items, str(doc.get("model", "")))
            if failure is not None:
                return failure
            return self._answer(doc, chain, items, options)

    # rules -----------------------------------------------------------------------------------
    def _chain(self, doc: dict, items: list[Any]) -> tuple[list[Any], Reply | None]:
        """The stored items `previous_response_id` continues, oldest first."""
        previous = doc.get("previous_response_id")
        if not previous:
            return [], None
        stored = self.responses.get(previous)
        if stored is None or not stored.stored:
            return [], error(NO_PREVIOUS.format(response_id=previous), param="previous_response_id")
        chain: list[Any] = []
        response_id: str | None = previous
        while response_id is not None:
            stored = self.responses[response_id]
            chain = stored.items + chain
            response_id = stored.previous
        held = {item.get("id") for item in chain if isinstance(item, dict) and item.get("id")}
        for item in items:
            if isinstance(item, dict) and item.get("id") in held:
                return chain, error(DUPLICATE_ITEM.format(item_id=item["id"]))
        return chain, None

    def validate(self, chain: list[Any], items: list[Any], model: str = "") -> Reply | None:
        whole = chain + items
        for position in range(len(chain), len(whole)):
            item = whole[position]
            if not isinstance(item, dict):
                continue
            if item.get("type") == "reasoning":
                following = whole[position + 1] if position + 1 < len(whole) else None
                failure = self._check_reasoning(item, following, model)
            elif item.get("type") == "function_call" and item.get("call_id") in self.calls:
                fc_id, rs_id = self.calls[item["call_id"]]
                failure = self._check_produced(whole, position, fc_id, "function_call", rs_id, model)
            elif _is_message(item, "assistant") and item.get("id") in self.messages:
                rs_id = self.messages[item["id"]]
                failure = self._check_produced(whole, position, item["id"], "message", rs_id, model)
            else:
                failure = None
            if failure is not None:
                return failure
        return None

    def _check_reasoning(self, item: dict, following: Any, model: str) -> Reply | None:
        rs_id = item.get("id")
        issued = self.issued.get(rs_id) if isinstance(rs_id, str) else None
        content = item.get("encrypted_content")
        if issued is not None:
            if content is None and not issued.stored:
                return error(NOT_PERSISTED.format(item_id=rs_id), status=404)
            if content is not None and (
                content not in (issued.item["encrypted_content"], issued.completed_content) or issued.model != model
            ):
                message = UNVERIFIED.format(abbreviated=_abbreviated(str(content)))
                return error(message, param=None, code="invalid_encrypted_content")
        if rs_id and (following is None or _is_input_side(following)):
            return error(ORPHANED_REASONING.format(rs_id=rs_id))
        return None

    def _reasoning_of(self, item: Any) -> str | None:
        """Which issued reasoning item a request's reasoning item is: by id, or by value when sent without one."""
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            return None
        if item.get("id"):
            return item["id"]
        return self._by_content.get(item.get("encrypted_content"))

    def _check_produced(
        self, whole: list[Any], position: int, item_id: str, item_type: str, rs_id: str, model: str
    ) -> Reply | None:
        if self.issued[rs_id].model != model:
            return None
        produced = set(self.issued[rs_id].produced)
        before = position - 1
        while before >= 0 and self._in_group(whole[before], produced):
            before -= 1
        if before >= 0 and self._reasoning_of(whole[before]) == rs_id:
            return None
        return error(MISSING_REASONING.format(item_id=item_id, item_type=item_type, rs_id=rs_id))

    def _in_group(self, item: Any, produced: set[str]) -> bool:
        if not isinstance(item, dict):
            return False
        if item.get("type") == "function_call":
            return self.calls.get(item.get("call_id"), ("", ""))[0] in produced
        if _is_message(item, "assistant"):
            return item.get("id") in produced
        return isinstance(item.get("type"), str) and item["type"].endswith("_output")

    # answers ---------------------------------------------------------------------------------
    def _answer(self, doc: dict, chain: list[Any], items: list[Any], options: Options) -> Reply:
        whole = chain + items
        model = str(doc.get("model", ""))
        last_user = max((i for i, item in enumerate(whole) if _is_message(item, "user")), default=-1)
        steps_done = {
            self.issued[self.calls[item["call_id"]][1]].response_id if item.get("call_id") in self.calls else "other"
            for item in whole[last_user + 1 :]
            if isinstance(item, dict) and item.get("type") == "function_call"
        }
        last = whole[-1] if whole else None
        wants_tool = _is_message(last, "user") or (
            isinstance(last, dict) and last.get("type") == "function_call_output"
        )
        tool_turn = wants_tool and len(steps_done) < options.steps
        streamed = bool(doc.get("stream"))
        stored = doc.get("store") is not False
        prefix = secrets.token_hex(12)
        response_id = _item_id("resp", prefix)

        name = self._tool_name(doc)
        summary = f"**Planning**\n\nI should call `{name}` to answer." if tool_turn else "**Answering**\n\nSummarise."
        summary += f" {options.say}" if options.say else ""
        full, stub = fernet_like(1000), fernet_like(600)
        completed = fernet_like(1000) if streamed else full  # same length, other bytes
        reasoning = {
            "id": _item_id("rs", prefix),
            "type": "reasoning",
            "encrypted_content": full,
            "summary": [{"type": "summary_text", "text": summary}],
        }
        output: list[dict[str, Any]] = [reasoning]
        text = options.content if tool_turn else FINAL_ANSWER
        if text:
            output.append(
                {
                    "id": _item_id("msg", prefix),
                    "type": "message",
                    "status": "completed",
                    "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}],
                    "role": "assistant",
                }
            )
        if tool_turn:
            for i in range(options.parallel):
                output.append(
                    {
                        "id": _item_id("fc", prefix),
                        "type": "function_call",
                        "status": "completed",
                        "arguments": json.dumps({"path": f"dir{i}"}),
                        "call_id": "call_" + secrets.token_hex(12),
                        "name": name,
                    }
                )
        issued = IssuedReasoning(response_id, json.loads(json.dumps(reasoning)), completed, stored, model=model)
        for item in output[1:]:
            issued.produced.append(item["id"])
            if item["type"] == "function_call":
                self.calls[item["call_id"]] = (item["id"], reasoning["id"])
            else:
                self.messages[item["id"]] = reasoning["id"]
        self.issued[reasoning["id"]] = issued
        self._by_content[full] = self._by_content[completed] = reasoning["id"]
        self.responses[response_id] = StoredResponse(doc.get("previous_response_id"), stored, items + output)

        response = {
            "id": response_id,
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": doc.get("instructions"),
            "model": model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": doc.get("previous_response_id"),
            "reasoning": {"effort": "medium", "summary": None},
            "store": stored,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": doc.get("tools") or [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 5,
                "output_tokens_details": {"reasoning_tokens": 3},
                "total_tokens": 15,
            },
            "metadata": {},
        }
        if not streamed:
            return Reply(200, response)
        return Reply(200, events=self._events(response, stub, completed, options))

    @staticmethod
    def _tool_name(doc: dict) -> str:
        tools = doc.get("tools") or []
        names = [t.get("name") for t in tools if isinstance(t, dict) and t.get("type") == "function"]
        return next((n for n in names if isinstance(n, str) and n), "list_directory")

    @staticmethod
    def _events(response: dict, stub: str, completed: str, options: Options) -> list[bytes]:
        """The stream of fixture openai-responses/codecompanion_gpt5_reasoning_stream.sse: created, each item
        added/deltas/done, then completed."""
        events: list[dict[str, Any]] = []
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        events += [
            {"type": "response.created", "response": started},
            {"type": "response.in_progress", "response": started},
        ]
        for index, item in enumerate(response["output"]):
            at = {"item_id": item["id"], "output_index": index}
            if item["type"] == "reasoning":
                text = item["summary"][0]["text"]
                part = {"type": "summary_text", "text": ""}
                events.append(
                    {
                        "type": "response.output_item.added",
                        "output_index": index,
                        "item": {**item, "encrypted_content": stub, "summary": []},
                    }
                )
                events.append({"type": "response.reasoning_summary_part.added", **at, "summary_index": 0, "part": part})
                pieces = re.findall(r"\S+\s*|\s+", text) + [""] * (options.events or 0)
                events += [
                    {
                        "type": "response.reasoning_summary_text.delta",
                        **at,
                        "summary_index": 0,
                        "delta": piece,
                        "obfuscation": secrets.token_urlsafe(6),
                    }
                    for piece in pieces
                ]
                events.append({"type": "response.reasoning_summary_text.done", **at, "summary_index": 0, "text": text})
                events.append(
                    {
                        "type": "response.reasoning_summary_part.done",
                        **at,
                        "summary_index": 0,
                        "part": {**part, "text": text},
                    }
                )
            elif item["type"] == "message":
                text = item["content"][0]["text"]
                part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
                events.append(
                    {
                        "type": "response.output_item.added",
                        "output_index": index,
                        "item": {**item, "status": "in_progress", "content": []},
                    }
                )
                events.append({"type": "response.content_part.added", **at, "content_index": 0, "part": part})
                events += [
                    {"type": "response.output_text.delta", **at, "content_index": 0, "delta": piece, "logprobs": []}
                    for piece in re.findall(r"\S+\s*", text)
                ]
                events.append(
                    {"type": "response.output_text.done", **at, "content_index": 0, "text": text, "logprobs": []}
                )
                events.append(
                    {"type": "response.content_part.done", **at, "content_index": 0, "part": {**part, "text": text}}
                )
            else:
                arguments = item["arguments"]
                events.append(
                    {
                        "type": "response.output_item.added",
                        "output_index": index,
                        "item": {**item, "status": "in_progress", "arguments": ""},
                    }
                )
                events += [
                    {
                        "type": "response.function_call_arguments.delta",
                        **at,
                        "delta": arguments[i : i + 4],
                        "obfuscation": secrets.token_urlsafe(6),
                    }
                    for i in range(0, len(arguments), 4)
                ]
                events.append(
                    {
                        "type": "response.function_call_arguments.done",
                        **at,
                        "name": item["name"],
                        "arguments": arguments,
                    }
                )
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        final_output = [
            {**item, "encrypted_content": completed} if item["type"] == "reasoning" else item
            for item in response["output"]
        ]
        events.append({"type": "response.completed", "response": {**response, "output": final_output}})
        return [
            sse_event({"type": event["type"], "sequence_number": n, **event}, event["type"])
            for n, event in enumerate(events)
        ]
