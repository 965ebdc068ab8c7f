"""Fake OpenAI Responses API (`POST …/responses`): one fake for the wire format, a provider's rules plugged in.

`ResponsesFake` is the format: it reads the input items (and, where the provider keeps responses, the chain
`previous_response_id` continues), keeps what it issued (each reasoning item, its model, and the items it produced,
by `fc_`/`msg_` id and `call_id`), knows which reasoning item an item belongs to and whether it came right before
its group, and hands the rest to a provider: `OpenAI` or `Xai`, small objects that say where they are served, what
they refuse with which text, and how their answers and streams are shaped (the two differ in nearly every field, as
the captures show).

OpenAI (`…/responses`)
----------------------
Every answer begins with a reasoning item (`rs_…`, a summary, and a Fernet-looking
`encrypted_content` when the request asks for it with `include:
["reasoning.encrypted_content"]`); a tool turn follows it with `x-fake-parallel`
function calls (and, with `x-fake-content`, a message item first), a final
answer with a message item. Streams use the real framing and event order:
`output_item.added` carries a stub `encrypted_content`, `output_item.done` the
full value, and `response.completed` a re-encrypted copy of the same length
with different bytes. Responses are remembered by id for
`previous_response_id` (unless sent with `store: false`).

Rules enforced, with the real texts from the issues named (HTTP 400, envelope
`{"error":{"message":…,"type":"invalid_request_error","param":"input","code":null}}`
as in https://github.com/cline/cline/issues/12242):

* a function call or an assistant message sent with the `fc_`/`msg_` id it was
  issued whose reasoning item is not right before its group: "Item 'fc_…' of
  type 'function_call' was provided without its required 'reasoning' item:
  'rs_…'." (the ids the fake issued). The pair is checked by item id: an item
  sent without its id is taken without its reasoning
  (https://github.com/laravel/ai/pull/1052 sends a function call's id only
  beside its reasoning, its output paired by `call_id`).
  The group is the items of the same response, with tool outputs allowed in
  between (clients that interleave calls and outputs); how strict the real
  service is about interleaving is not known;
* a reasoning item followed by nothing, by an input-side item, or by an
  assistant message or function call sent without the id it was issued (the
  pair is checked by id): "Item 'rs_…' of type 'reasoning' was provided without
  its required following item." (https://github.com/openai/openai-node/issues/1567,
  https://github.com/mastra-ai/mastra/issues/11103);
* with `previous_response_id`, an item already in the stored chain:
  "Duplicate item found with id rs_…. Remove duplicate items from your input
  and try again." (https://github.com/vercel/ai/issues/7883);
* a reasoning item without `encrypted_content` from a response sent with
  `store: false`: the 404 "Item with id 'rs_…' not found. Items are not
  persisted when `store` is set to false. …"
  (https://github.com/anomalyco/opencode/issues/7724);
* an `encrypted_content` that is neither copy the fake issued for that item, or
  one the test revoked (`ResponsesFake.revoked`: the provider refusing its own
  value, as OpenAI did for every client on 2025-12-16, openai/codex #8120):
  see `UNVERIFIED`, or with `x-fake-wording: 2026` the later wording that names
  the item (`UNVERIFIED_ITEM`);
* an `encrypted_content` issued for another model (deployment): the same
  `invalid_encrypted_content` error (openai/codex #8145, #17541 after a model
  switch). Items produced under another model's reasoning are taken without
  it: the rule on required reasoning items is only applied to the model that
  issued them (the fake's assumption: with `store: false` the server cannot
  link an item of another model's answer to its reasoning).

xAI (`POST /xai/v1/responses`, standing for `https://api.x.ai/v1/responses`)
---------------------------------------------------------------------------
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
* an `encrypted_content` the fake did not issue, issued for another model, or revoked (`ResponsesFake.revoked`):
  "Could not decrypt the provided encrypted_content. …" (https://github.com/hackerai-tech/hackerai/pull/996; the
  same text for a blob from another account or vendor). Which of the two xAI says for an item that breaks both is not known: the summary is checked
  first.

A function call or message sent back without the reasoning item it came with is not refused: xAI answers, but the
model goes on without that reasoning (https://github.com/duolahypercho/codex-router/issues/888). The fake answers
200 and marks the answer `x-fake-degraded: reasoning-dropped`.
DeepSeek (`POST /deepseek/responses`, standing for `https://api.deepseek.com/responses`, also under `/v1`)
------------------------------------------------------------------------------------------------------
DeepSeek's Responses API (https://api-docs.deepseek.com/guides/responses_api) is stateless and thinks unless
`reasoning.effort` is "none" (https://api-docs.deepseek.com/guides/thinking_mode). Its reasoning is plain text: the
reasoning item carries `content: [{"type": "reasoning_text", …}]`, an empty `summary` and no `encrypted_content`
(https://github.com/NousResearch/hermes-agent/pull/97241); its stream sends `response.reasoning_text.delta` events
(https://github.com/anomalyco/opencode/issues/39992). The item's `rs_…` id and the other ids are the fake's
assumption. Its rule, in DeepSeek's OpenAI-style envelope:

* a function call of a thinking answer sent back without a reasoning item right before its group: "The
  `reasoning_text` in the thinking mode must be passed back to the API." (rikkahub/rikkahub #1629). Only presence is
  checked: clients replay the item as `type` and `content` alone (hermes-agent #97241).
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

from .fake_provider import Options, Recorded, Reply, call_for, sse_event

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
# The 2026 wording, which names the item (https://github.com/Wei-Shaw/sub2api/issues/2863,
# https://github.com/openai/codex/issues/17541).
UNVERIFIED_ITEM = (
    "The encrypted content for item {item_id} could not be verified. Reason: Encrypted content could not be "
    "decrypted or parsed."
)
# The fake's own text for an unknown or unstored previous response.
NO_PREVIOUS = "Previous response with id '{response_id}' not found."
FINAL_ANSWER = "The directory holds two files."
# xAI's
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "xai"
CAPTURED_STREAM = FIXTURES / "vercel_grok_code_fast_1_reasoning_encrypted_store_false_stream.chunks.txt"
CAPTURED_MODEL = "grok-code-fast-1"
UNDECRYPTABLE = (
    "Could not decrypt the provided encrypted_content. Ensure the value is the unmodified encrypted_content from a "
    "previous response."
)
COMPACTION_BLOB = "Could not decode the compaction blob. Ensure it is unmodified from the compact response."
DEGRADED = "reasoning-dropped"
INCLUDE_ENCRYPTED = "reasoning.encrypted_content"
# DeepSeek's, as https://github.com/rikkahub/rikkahub/issues/1629 quotes it from its Responses API.
REASONING_TEXT_MISSING = "The `reasoning_text` in the thinking mode must be passed back to the API."


def error(message: str, *, status: int = 400, param: str | None = "input", code: str | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})


def fernet_like(size: int) -> str:
    """A value shaped like OpenAI's encrypted_content: a Fernet token, "gAAAAAB…", url-safe base64."""
    return "gAAAAAB" + base64.urlsafe_b64encode(os.urandom(size)).decode()


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


def _lost_its_id(item: Any) -> bool:
    """An assistant message or a function call sent back without the id it was issued: OpenAI pairs a reasoning
    item with the item after it by id, and refuses the pair without it (mastra-ai/mastra#11103, vercel/ai#7099)."""
    produced = _is_message(item, "assistant") or (isinstance(item, dict) and item.get("type") == "function_call")
    return produced and not (isinstance(item.get("id"), str) and item["id"])


def _abbreviated(value: str) -> str:
    return f"{value[:4]}...{value[-4:]}"


def _item_id(kind: str, prefix: str) -> str:
    """An id like the real ones: the items of one response share the response's hex prefix."""
    return f"{kind}_{prefix}{secrets.token_hex(13)}"


def xai_error(text: str) -> Reply:
    """xAI's 400, in its envelope."""
    return Reply(400, {"code": "invalid-argument", "error": text})


def captured_payloads() -> list[str]:
    """The captured stream, one payload a line, as recorded."""
    return [line for line in CAPTURED_STREAM.read_text().splitlines() if line.strip()]


@dataclass
class IssuedReasoning:
    response_id: str
    item: dict[str, Any]  # as issued whole: the output_item.done copy of a stream, or the document's
    model: str  # the model the request named
    completed_content: str | None = None  # OpenAI: the encrypted_content of the response.completed copy
    stored: bool = True
    produced: set[str] = field(default_factory=set)  # fc_ / msg_ ids and call_ids issued after it


@dataclass
class StoredResponse:
    previous: str | None
    stored: bool
    items: list[dict[str, Any]]  # the request's input, then the output


# the format ---------------------------------------------------------------------------------------
class ResponsesFake:
    """The Responses format as one provider serves it."""

    def __init__(self, provider: OpenAI | Xai | None = None) -> None:
        self.provider = provider or OpenAI()
        self.name = self.provider.name
        self.issued: dict[str, IssuedReasoning] = {}  # rs id -> what was issued
        self.calls: dict[str, tuple[str, str]] = {}  # call_id -> (fc id, rs id)
        self.messages: dict[str, str] = {}  # msg id -> rs id
        self.responses: dict[str, StoredResponse] = {}  # kept for `previous_response_id`, where the provider does
        self._by_content: dict[str, str] = {}  # each issued encrypted_content -> rs id
        # encrypted_content values issued but no longer accepted: the provider refusing its own value
        self.revoked: set[str] = set()
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return self.provider.matches(path.split("?")[0].rstrip("/"))

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        with self._lock:
            return self.provider.handle(self, doc, _items_of(doc.get("input")), options)

    # what was issued ---------------------------------------------------------------------------
    def issue(
        self,
        reasoning: dict[str, Any],
        produced: list[dict[str, Any]],
        model: str,
        response_id: str,
        *,
        completed: str | None = None,
        stored: bool = True,
    ) -> IssuedReasoning:
        """Keeps a reasoning item as issued and the items its answer produced."""
        issued = IssuedReasoning(response_id, json.loads(json.dumps(reasoning)), model, completed, stored)
        for item in produced:
            issued.produced.add(item["id"])
            if item["type"] == "function_call":
                issued.produced.add(item["call_id"])
                self.calls[item["call_id"]] = (item["id"], reasoning["id"])
            else:
                self.messages[item["id"]] = reasoning["id"]
        self.issued[reasoning["id"]] = issued
        for content in (reasoning.get("encrypted_content"), completed):
            if content:
                self._by_content[content] = reasoning["id"]
        return issued

    def owner_of(self, item: Any) -> str | None:
        """The reasoning item an item the model produced came with (a function call by its `call_id`, some clients
        omitting the `fc_` id; a message by its `msg_` id)."""
        if not isinstance(item, dict):
            return None
        if item.get("type") == "function_call":
            return self.calls.get(str(item.get("call_id")), (None, None))[1]
        if _is_message(item, "assistant"):
            return self.messages.get(str(item.get("id")))
        return None

    def reasoning_of(self, item: Any, *, by_content: bool = True) -> str | None:
        """Which issued reasoning item a request's reasoning item is: by id, or by value when sent without one."""
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            return None
        if item.get("id"):
            return item["id"]
        return self._by_content.get(item.get("encrypted_content")) if by_content else None

    def in_group(self, item: Any, rs_id: str) -> bool:
        """Whether an item belongs to the group of items the reasoning item produced (tool outputs allowed in
        between, for clients that interleave calls and outputs)."""
        if self.owner_of(item) == rs_id:
            return True
        kind = item.get("type") if isinstance(item, dict) else None
        return isinstance(kind, str) and kind.endswith("_output")

    def reasoning_before(self, whole: list[Any], position: int, rs_id: str, *, by_content: bool = True) -> bool:
        """Whether the item at `position` has its reasoning item right before its group."""
        before = position - 1
        while before >= 0 and self.in_group(whole[before], rs_id):
            before -= 1
        return before >= 0 and self.reasoning_of(whole[before], by_content=by_content) == rs_id

    def tool_names(self, doc: dict) -> list[str]:
        tools = doc.get("tools") or []
        names = [t.get("name") for t in tools if isinstance(t, dict) and t.get("type") == "function"]
        return [n for n in names if isinstance(n, str) and n]

    def tool_name(self, doc: dict) -> str:
        return next(iter(self.tool_names(doc)), "list_directory")


# providers ---------------------------------------------------------------------------------------
class OpenAI:
    """OpenAI's Responses API: responses kept for `previous_response_id`, Fernet-looking encrypted reasoning
    re-encrypted in `response.completed`, its rules and texts."""

    name = "responses"

    def matches(self, route: str) -> bool:
        return route.endswith("/responses")

    def handle(self, fake: ResponsesFake, doc: dict, items: list[Any], options: Options) -> Reply:
        chain, failure = self.chain(fake, doc, items)
        if failure is not None:
            return failure
        failure = self.validate(fake, chain, items, str(doc.get("model", "")), options.wording)
        if failure is not None:
            return failure
        return self.answer(fake, doc, chain, items, options)

    # rules -----------------------------------------------------------------------------------
    def chain(self, fake: ResponsesFake, doc: dict, items: list[Any]) -> tuple[list[Any], Reply | None]:
        """The stored items `previous_response_id` continues, oldest first."""
        previous = doc.get("previous_response_id")
        if not previous:
            return [], None
        stored = fake.responses.get(previous)
        if stored is None or not stored.stored:
            return [], error(NO_PREVIOUS.format(response_id=previous), param="previous_response_id")
        chain: list[Any] = []
        response_id: str | None = previous
        while response_id is not None:
            stored = fake.responses[response_id]
            chain = stored.items + chain
            response_id = stored.previous
        held = {item.get("id") for item in chain if isinstance(item, dict) and item.get("id")}
        for item in items:
            if isinstance(item, dict) and item.get("id") in held:
                return chain, error(DUPLICATE_ITEM.format(item_id=item["id"]))
        return chain, None

    def validate(
        self, fake: ResponsesFake, chain: list[Any], items: list[Any], model: str = "", wording: str | None = None
    ) -> Reply | None:
        whole = chain + items
        for position in range(len(chain), len(whole)):
            item = whole[position]
            if not isinstance(item, dict):
                continue
            if item.get("type") == "reasoning":
                following = whole[position + 1] if position + 1 < len(whole) else None
                failure = self._check_reasoning(fake, item, following, model, wording)
            elif item.get("type") == "function_call" and item.get("call_id") in fake.calls and item.get("id"):
                fc_id, rs_id = fake.calls[item["call_id"]]
                failure = self._check_produced(fake, whole, position, fc_id, "function_call", rs_id, model)
            elif _is_message(item, "assistant") and item.get("id") in fake.messages:
                rs_id = fake.messages[item["id"]]
                failure = self._check_produced(fake, whole, position, item["id"], "message", rs_id, model)
            else:
                failure = None
            if failure is not None:
                return failure
        return None

    def _check_reasoning(
        self, fake: ResponsesFake, item: dict, following: Any, model: str, wording: str | None
    ) -> Reply | None:
        rs_id = item.get("id")
        issued = fake.issued.get(rs_id) if isinstance(rs_id, str) else None
        content = item.get("encrypted_content")
        if issued is not None:
            if content is None and not issued.stored:
                return error(NOT_PERSISTED.format(item_id=rs_id), status=404)
            copies = (issued.item.get("encrypted_content"), issued.completed_content)
            if content is not None and (content not in copies or content in fake.revoked or issued.model != model):
                if wording == "2026":
                    message = UNVERIFIED_ITEM.format(item_id=rs_id)
                else:
                    message = UNVERIFIED.format(abbreviated=_abbreviated(str(content)))
                return error(message, param=None, code="invalid_encrypted_content")
        if rs_id and (following is None or _is_input_side(following) or _lost_its_id(following)):
            return error(ORPHANED_REASONING.format(rs_id=rs_id))
        return None

    def _check_produced(
        self, fake: ResponsesFake, whole: list[Any], position: int, item_id: str, item_type: str, rs_id: str, model: str
    ) -> Reply | None:
        if fake.issued[rs_id].model != model or fake.reasoning_before(whole, position, rs_id):
            return None
        return error(MISSING_REASONING.format(item_id=item_id, item_type=item_type, rs_id=rs_id))

    # answers ---------------------------------------------------------------------------------
    def answer(self, fake: ResponsesFake, doc: dict, chain: list[Any], items: list[Any], options: Options) -> Reply:
        whole = chain + items
        model = str(doc.get("model", ""))
        last_user = max((i for i, item in enumerate(whole) if _is_message(item, "user")), default=-1)
        steps_done = {
            fake.issued[fake.calls[item["call_id"]][1]].response_id if item.get("call_id") in fake.calls else "other"
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

        asked = call_for(options, fake.tool_names(doc))
        name = asked.name if asked else fake.tool_name(doc)
        summary = f"**Planning**\n\nI should call `{name}` to answer." if tool_turn else "**Answering**\n\nSummarise."
        summary += f" {options.say}" if options.say else ""
        # encrypted_content only for a request that asks for it
        # (https://platform.openai.com/docs/guides/reasoning)
        encrypted = INCLUDE_ENCRYPTED in (doc.get("include") or [])
        full, stub = fernet_like(1000), fernet_like(600)
        completed = (fernet_like(1000) if streamed else full) if encrypted else None  # same length, other bytes
        reasoning = {
            "id": _item_id("rs", prefix),
            "type": "reasoning",
            "encrypted_content": full,
            "summary": [{"type": "summary_text", "text": summary}],
        }
        if not encrypted:
            del reasoning["encrypted_content"]
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
                        "arguments": json.dumps(asked.arguments if asked else {"path": f"dir{i}"}),
                        "call_id": "call_" + secrets.token_hex(12),
                        "name": name,
                    }
                )
        fake.issue(reasoning, output[1:], model, response_id, completed=completed, stored=stored)
        fake.responses[response_id] = StoredResponse(doc.get("previous_response_id"), stored, items + output)

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
        return Reply(200, events=self.events(response, stub, completed, options))

    @classmethod
    def events(cls, response: dict, stub: str, completed: str | None, options: Options) -> list[bytes]:
        """The stream of fixture openai-responses/codecompanion_gpt5_reasoning_stream.sse: created, each item
        added/deltas/done, then completed."""
        return numbered(cls.event_docs(response, stub, completed, options))

    @staticmethod
    def event_docs(response: dict, stub: str, completed: str | None, options: Options) -> list[dict[str, Any]]:
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
                        "item": {**item, "summary": []} | ({"encrypted_content": stub} if completed else {}),
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
            {**item, "encrypted_content": completed} if item["type"] == "reasoning" and completed else item
            for item in response["output"]
        ]
        events.append({"type": "response.completed", "response": {**response, "output": final_output}})
        return events


def numbered(events: list[dict[str, Any]]) -> list[bytes]:
    """Stream events as SSE, each with its `sequence_number`."""
    return [
        sse_event({"type": event["type"], "sequence_number": n, **event}, event["type"])
        for n, event in enumerate(events)
    ]


class DeepSeek(OpenAI):
    """DeepSeek's Responses API: stateless, plain-text reasoning items, every tool turn's reasoning back."""

    name = "deepseek_responses"

    def matches(self, route: str) -> bool:
        return route.startswith("/deepseek/") and route.endswith("/responses")

    def handle(self, fake: ResponsesFake, doc: dict, items: list[Any], options: Options) -> Reply:
        model = str(doc.get("model", ""))
        for position, item in enumerate(items):
            if not (isinstance(item, dict) and item.get("type") == "function_call"):
                continue
            rs_id = fake.calls.get(str(item.get("call_id")), (None, None))[1]
            if rs_id is None or fake.issued[rs_id].model != model:
                continue
            before = position - 1
            while before >= 0 and fake.in_group(items[before], rs_id):
                before -= 1
            if before < 0 or not (isinstance(items[before], dict) and items[before].get("type") == "reasoning"):
                envelope = {"message": REASONING_TEXT_MISSING, "type": "invalid_request_error", "param": None}
                return Reply(400, {"error": {**envelope, "code": "invalid_request_error"}})
        return self.answer(fake, {**doc, "store": False, "previous_response_id": None}, [], items, options)

    def answer(self, fake: ResponsesFake, doc: dict, chain: list[Any], items: list[Any], options: Options) -> Reply:
        streamed = bool(doc.get("stream"))
        reply = super().answer(fake, {**doc, "stream": False}, chain, items, options)
        response = reply.doc
        for position, item in enumerate(response["output"]):
            if item["type"] == "reasoning":
                text = item["summary"][0]["text"]
                plain = {"id": item["id"], "type": "reasoning", "summary": [], "content": [_reasoning_text(text)]}
                response["output"][position] = plain
                fake.issued[item["id"]].item = json.loads(json.dumps(plain))
        if not streamed:
            return reply
        return Reply(200, events=numbered(_deepseek_events(response, options)))


def _reasoning_text(text: str) -> dict[str, Any]:
    return {"type": "reasoning_text", "text": text}


def _deepseek_events(response: dict, options: Options) -> list[dict[str, Any]]:
    """OpenAI's stream of the answer, its reasoning item's events those of plain-text reasoning."""
    reasoning = next(item for item in response["output"] if item["type"] == "reasoning")
    text = reasoning["content"][0]["text"]
    with_summary = {
        "output": [
            {**item, "summary": [{"type": "summary_text", "text": text}]} if item is reasoning else item
            for item in response["output"]
        ]
    }
    events = []
    for event in OpenAI.event_docs({**response, **with_summary}, "", "", options):
        kind = event["type"]
        if kind.startswith("response.reasoning_summary"):
            if kind == "response.reasoning_summary_text.delta":
                events.append({**{k: v for k, v in event.items() if k != "summary_index"},
                               "type": "response.reasoning_text.delta", "content_index": 0})  # fmt: skip
            continue
        if kind in ("response.output_item.added", "response.output_item.done") and event["item"]["type"] == "reasoning":
            item = reasoning if kind.endswith("done") else {**reasoning, "content": []}
            event = {**event, "item": item}
        elif kind == "response.completed":
            event = {**event, "response": response}
        events.append(event)
    return events


class Xai:
    """xAI's Responses API: UUID ids, encrypted reasoning only when asked for, answers to what it cannot use, its
    rules and texts."""

    name = "xai"

    def matches(self, route: str) -> bool:
        return route.startswith("/xai/") and route.endswith("/responses")

    def handle(self, fake: ResponsesFake, doc: dict, items: list[Any], options: Options) -> Reply:
        model = str(doc.get("model", ""))
        failure = self.refusal(fake, items, model)
        if failure is not None:
            return failure
        headers = {"x-fake-degraded": DEGRADED} if self.dropped(fake, items) else {}
        reply = self.answer(fake, doc, items, model, options)
        reply.headers.update(headers)
        return reply

    # rules -----------------------------------------------------------------------------------
    def refusal(self, fake: ResponsesFake, items: list[Any], model: str) -> Reply | None:
        for item in items:
            if not isinstance(item, dict) or item.get("type") != "reasoning" or "encrypted_content" not in item:
                continue
            if "summary" not in item:
                return xai_error(COMPACTION_BLOB)
            issued = fake.issued.get(str(item.get("id")))
            if issued is None or issued.item.get("encrypted_content") != item["encrypted_content"]:
                return xai_error(UNDECRYPTABLE)
            if item["encrypted_content"] in fake.revoked:
                return xai_error(UNDECRYPTABLE)
            if issued.model != model:
                return xai_error(UNDECRYPTABLE)
        return None

    def dropped(self, fake: ResponsesFake, items: list[Any]) -> bool:
        """Whether an item the model produced came back without its reasoning item (by its id) before its group."""
        return any(
            (owner := fake.owner_of(item)) is not None
            and not fake.reasoning_before(items, index, owner, by_content=False)
            for index, item in enumerate(items)
        )

    # answers ---------------------------------------------------------------------------------
    def answer(self, fake: ResponsesFake, doc: dict, items: list[Any], model: str, options: Options) -> Reply:
        streamed = bool(doc.get("stream"))
        encrypted = INCLUDE_ENCRYPTED in (doc.get("include") or [])
        if not doc.get("tools") and model == CAPTURED_MODEL and encrypted:
            return self.captured(fake, streamed)
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
        fake.issue(reasoning, output[1:], model, response_id)
        response = self.document(doc, response_id, model, output)
        if not streamed:
            return Reply(200, response)
        return Reply(200, events=[sse_event(payload) for payload in _xai_stream(response)])

    def captured(self, fake: ResponsesFake, streamed: bool) -> Reply:
        payloads = captured_payloads()
        response = json.loads(payloads[-1])["response"]
        fake.issue(response["output"][0], response["output"][1:], CAPTURED_MODEL, response["id"])
        if not streamed:
            return Reply(200, response)
        return Reply(200, events=[sse_event(payload) for payload in payloads])

    @staticmethod
    def document(doc: dict, response_id: str, model: str, output: list[dict[str, Any]]) -> dict[str, Any]:
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


def _xai_stream(response: dict[str, Any]) -> list[dict[str, Any]]:
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
