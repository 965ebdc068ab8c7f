"""Judging a refused signed or encrypted value against what the proxy captured for its place: which value the error is
about (the item it names, the ends of the value it quotes, or the one that differs from the capture) and whether the
client sent it as issued, altered it, or sent something the proxy never saw; and the advice for each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.diagnosis import classify
from llm_reasoning_proxy.diagnosis.verdicts import VERDICT_ADVICE, Judgement, judge
from llm_reasoning_proxy.dialects.openai import NOT_ASKED_ADVICE, OWN_VALUE_REFUSED
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.wire import by_name
from llm_reasoning_proxy.wire.base import SentValue
from mitmproxy import http
from mitmproxy.test import tflow, tutils

from tests.support import fake_gemini, fake_responses
from tests.support.addon_context import addon_context
from tests.support.scope import request_scope

RESPONSES = by_name("openai_responses")
GEMINI = by_name("gemini_native")
MODEL = "gpt-5"
CAPTURED = "gAAAAABcapturedvalueAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADQ=="
OTHER = "gAAAAABalteredvalueBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBXYZ="
QUESTION = {"role": "user", "content": "What is in the deleteme directory?"}


def value(location: str, sent: str | None, captured: str | None, *ids: str, asked: bool = True) -> SentValue:
    index = int(location.split("[", 1)[1].split("]", 1)[0])
    return SentValue(index, location, f"item {location}", sent, captured, tuple(ids), asked=asked)


def openai(message: str) -> bytes:
    return json.dumps(fake_responses.error(message, param=None, code="invalid_encrypted_content").doc).encode()


# --- judge: which value, and what it is ---------------------------------------------------------------


def test_a_value_the_text_names_by_id_is_judged_against_its_capture() -> None:
    text = fake_responses.UNVERIFIED_ITEM.format(item_id="rs_2")
    diagnosis = classify(400, openai(text))
    values = [value("input[1]", OTHER, CAPTURED, "rs_1"), value("input[4]", CAPTURED, CAPTURED, "rs_2")]
    assert judge(diagnosis, values) == Judgement("as_issued", values[1])
    values[1] = value("input[4]", OTHER, CAPTURED, "rs_2")
    assert judge(diagnosis, values) == Judgement("altered", values[1])
    values[1] = value("input[4]", OTHER, None, "rs_2")
    assert judge(diagnosis, values) == Judgement("unseen", values[1])


def test_a_value_the_text_quotes_by_its_ends_is_found_by_them() -> None:
    diagnosis = classify(400, openai(fake_responses.UNVERIFIED.format(abbreviated=f"{OTHER[:4]}...{OTHER[-4:]}")))
    assert diagnosis.quoted_ends == ("gAAA", "XYZ=")
    values = [value("input[1]", CAPTURED, CAPTURED, "rs_1"), value("input[4]", OTHER, None, "rs_2")]
    assert judge(diagnosis, values) == Judgement("unseen", values[1])


def test_a_text_that_names_no_value_blames_the_one_that_differs_from_the_capture() -> None:
    diagnosis = classify(400, json.dumps({"error": {"code": 400, "message": fake_gemini.FOREIGN_SIGNATURE}}))
    unchanged = value("contents[1].parts[0]", "c2ln", "c2ln")
    altered = value("contents[3].parts[0]", "b3RoZXI=", "c2ln")
    unseen = value("contents[5].parts[0]", "bmV3", None)
    assert judge(diagnosis, [unchanged, unseen, altered]) == Judgement("altered", altered)
    # None differs: no place is named, and the verdict says what the proxy could tell.
    assert judge(diagnosis, [unchanged, unseen]) == Judgement("none_differs", None)
    assert judge(diagnosis, [unchanged, unchanged._replace(location="contents[3].parts[0]", index=3)]) == Judgement(
        "as_issued", None
    )
    assert judge(diagnosis, []) is None


def test_an_item_sent_by_its_id_alone_is_judged_by_what_the_request_asked_for() -> None:
    diagnosis = classify(404, json.dumps(fake_responses.error(fake_responses.NOT_PERSISTED.format(item_id="rs_1")).doc))
    not_asked = value("input[1]", None, None, "rs_1", asked=False)
    assert judge(diagnosis, [not_asked]) == Judgement("not_asked", not_asked)
    asked = not_asked._replace(asked=True)
    assert judge(diagnosis, [asked]) == Judgement(None, asked)


# --- what each format sends back, and what the proxy captured for it -------------------------------------


def _reasoning_record(rs_id: str, call_id: str, fields: dict[str, Any], *, keyed_by_id: bool = True) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="openai_responses",
        fields={"type": "reasoning", "id": rs_id, "summary": [], **fields},
        tool_calls=[ToolCallRef(id=call_id, name="ls", arguments="{}", aliases=[f"fc_{call_id}"])],
        extra_keys=[rs_id] if keyed_by_id else [],
        response_id=f"resp_{rs_id}",
        request_model=MODEL,
    )


def _reader(*records: ReasoningRecord):
    stored = {key: record for record in records for key in record.keys()}
    asked: list[list[str]] = []

    def read(keys: list[str]) -> dict[str, ReasoningRecord]:
        asked.append(keys)
        return {key: stored[key] for key in keys if key in stored}

    return read, asked


def _call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": "ls", "arguments": "{}"}


def test_responses_sends_back_each_reasoning_item_with_its_captured_value() -> None:
    first = _reasoning_record("rs_1", "call_1", {"encrypted_content": CAPTURED})
    second = _reasoning_record("rs_2", "call_2", {"encrypted_content": CAPTURED + "2"}, keyed_by_id=False)
    doc = {
        "model": MODEL,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "input": [
            QUESTION,
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": CAPTURED},
            _call("call_1"),
            {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": OTHER},
            _call("call_2"),  # an older record, not keyed by its rs_ id: found through its call
            {"type": "reasoning", "summary": [], "encrypted_content": OTHER},  # no id, nothing captured
            {"type": "message", "role": "assistant", "content": "x"},
            {"type": "reasoning", "id": "rs_3"},  # by its id alone
            _call("call_3"),
        ],
    }
    read, _ = _reader(first, second)
    found = RESPONSES.sent_values(doc, MODEL, read)
    assert [(v.location, v.label, v.value, v.captured, v.item_ids, v.call_id) for v in found] == [
        ("input[1]", "reasoning item rs_1", CAPTURED, CAPTURED, ("rs_1",), "call_1"),
        ("input[3]", "reasoning item rs_2", OTHER, CAPTURED + "2", ("rs_2",), "call_2"),
        ("input[5]", "reasoning item without an id", OTHER, None, (), None),
        ("input[7]", "reasoning item rs_3", None, None, ("rs_3",), "call_3"),
    ]
    assert all(v.asked for v in found)
    assert not any(v.asked for v in RESPONSES.sent_values({**doc, "include": []}, MODEL, read))
    assert RESPONSES.sent_values({**doc, "model": "o3"}, "o3", read)[0].captured is None  # another model's capture


def test_gemini_sends_back_each_signed_part_with_its_captured_signature() -> None:
    record = ReasoningRecord(
        wire_format="gemini_native",
        tool_calls=[ToolCallRef(id="", name="ls", arguments={"p": 1}, fields={"thoughtSignature": "c2lnMQ=="})],
        request_model="gemini-3-pro-preview",
    )
    doc = {
        "contents": [
            {"role": "user", "parts": [{"text": "q"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "I will look.", "thoughtSignature": "dGV4dA=="},
                    {"functionCall": {"name": "ls", "args": {"p": 1}}, "thoughtSignature": "b3RoZXI="},
                    {"functionCall": {"id": "call_9", "name": "cat", "args": {}}, "thoughtSignature": "bmV3"},
                    {"functionCall": {"name": "rm", "args": {}}},
                ],
            },
        ]
    }
    read, _ = _reader(record)
    found = GEMINI.sent_values(doc, "gemini-3-pro-preview", read)
    assert [(v.location, v.label, v.value, v.captured, v.call_id, v.function) for v in found] == [
        ("contents[1].parts[0]", "answer text part", "dGV4dA==", None, None, None),
        ("contents[1].parts[1]", "function call `ls`", "b3RoZXI=", "c2lnMQ==", None, "ls"),
        ("contents[1].parts[2]", "function call `cat`", "bmV3", None, "call_9", "cat"),
    ]


def test_formats_whose_values_are_not_judged_send_none() -> None:
    for name in ("anthropic_messages", "chat_completions", "bedrock_converse"):
        assert by_name(name).sent_values({"messages": []}, None, lambda keys: {}) == []


# --- the explanation, through the hooks ---------------------------------------------------------------


def explained(
    tmp_path: Path, path: str, body: dict, status: int, error: dict, cached: list[ReasoningRecord] = ()
) -> tuple[dict, http.HTTPFlow, dict]:
    """One request through the repair and explain hooks, answered with `error`: its diagnosed event, the flow, and
    what the cache holds of the records afterwards (by key)."""
    config, repair, capture, explainer = make_addons()[:4]
    log = tmp_path / "events.jsonl"
    log.unlink(missing_ok=True)
    with addon_context(config, repair, capture, explainer) as tctx:
        tctx.configure(config, llm_cache="memory", llm_log=str(log))
        request = tutils.treq(
            method=b"POST",
            path=path.encode(),
            content=json.dumps(body).encode(),
            headers=http.Headers(content_type="application/json", authorization="Bearer sk-test"),
        )
        flow = tflow.tflow(req=request)
        scope = str(request_scope(flow.request))
        for record in cached:
            config.store.put(scope, record.keys(), record)
        repair.request(flow)
        flow.response = tutils.tresp(
            status_code=status,
            content=json.dumps(error).encode(),
            headers=http.Headers(content_type="application/json"),
        )
        explainer.response(flow)
        kept = config.store.get_many(scope, [key for record in cached for key in record.keys()])
    (event,) = [e for e in map(json.loads, log.read_text().splitlines()) if e["kind"] == "diagnosed"]
    return event, flow, kept


def _responses_body(reasoning: dict, *, include: bool = True) -> dict:
    extra = {"include": ["reasoning.encrypted_content"]} if include else {}
    return {
        "model": MODEL,
        "store": False,
        **extra,
        "input": [QUESTION, reasoning, _call("call_1"), {"type": "function_call_output", "call_id": "call_1"}],
    }


def test_an_item_sent_by_id_alone_without_include_is_explained_as_never_asked_for(tmp_path: Path) -> None:
    # What the proxy captured of an answer to a request without `include`: the item, without encrypted_content.
    record = _reasoning_record("rs_1", "call_1", {})
    body = _responses_body({"type": "reasoning", "id": "rs_1"}, include=False)
    error = fake_responses.error(fake_responses.NOT_PERSISTED.format(item_id="rs_1"), status=404).doc
    event, flow, _ = explained(tmp_path, "/v1/responses", body, 404, error, [record])
    assert event["rule"] == "responses_item_not_found" and event["location"] == "input[1]"
    assert event["item_ids"] == ["rs_1"] and event["advice"] == NOT_ASKED_ADVICE
    assert (
        'include: ["reasoning.encrypted_content"]' in flow.comment
        and "at input[1] (reasoning item rs_1" in flow.comment
    )

    # A request that did ask keeps the advice it had: the proxy never saw the value.
    event, _, _ = explained(tmp_path, "/v1/responses", _responses_body({"type": "reasoning", "id": "rs_1"}), 404, error)
    assert event["advice"] != NOT_ASKED_ADVICE and "never overwrites what the client sends" in event["advice"]


def test_refused_encrypted_content_names_its_item_and_says_whose_value_it_was(tmp_path: Path) -> None:
    record = _reasoning_record("rs_1", "call_1", {"encrypted_content": CAPTURED})
    quoted = fake_responses.UNVERIFIED.format(abbreviated=f"{OTHER[:4]}...{OTHER[-4:]}")
    error = fake_responses.error(quoted, param=None, code="invalid_encrypted_content").doc
    altered = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": OTHER}
    event, flow, kept = explained(tmp_path, "/v1/responses", _responses_body(altered), 400, error, [record])
    assert (event["location"], event["item_ids"], event["tool_call_ids"]) == ("input[1]", ["rs_1"], ["call_1"])
    assert event["advice"] == VERDICT_ADVICE["altered"] and event["healed"] == 0 and kept
    assert "at input[1] (reasoning item rs_1, tool call call_1)" in flow.comment

    # The client sent exactly what was captured: OpenAI refused its own value, and the proxy's copy stays.
    quoted = fake_responses.UNVERIFIED.format(abbreviated=f"{CAPTURED[:4]}...{CAPTURED[-4:]}")
    error = fake_responses.error(quoted, param=None, code="invalid_encrypted_content").doc
    as_issued = {**altered, "encrypted_content": CAPTURED}
    event, _, kept = explained(tmp_path, "/v1/responses", _responses_body(as_issued), 400, error, [record])
    assert event["location"] == "input[1]" and event["advice"] == OWN_VALUE_REFUSED
    assert event["healed"] == 0 and kept

    # The 2026 wording names the item; the proxy never saw this one.
    error = fake_responses.error(fake_responses.UNVERIFIED_ITEM.format(item_id="rs_1"), param=None).doc
    event, _, _ = explained(tmp_path, "/v1/responses", _responses_body(altered), 400, error)
    assert event["location"] == "input[1]" and event["item_ids"] == ["rs_1"]
    assert event["advice"] == VERDICT_ADVICE["unseen"]


def test_a_value_the_proxy_put_back_and_the_provider_refused_is_still_dropped(tmp_path: Path) -> None:
    record = _reasoning_record("rs_1", "call_1", {"encrypted_content": CAPTURED})
    quoted = fake_responses.UNVERIFIED.format(abbreviated=f"{CAPTURED[:4]}...{CAPTURED[-4:]}")
    error = fake_responses.error(quoted, param=None, code="invalid_encrypted_content").doc
    body = _responses_body({"type": "reasoning", "id": "rs_1"})  # the proxy puts the value back
    event, flow, kept = explained(tmp_path, "/v1/responses", body, 400, error, [record])
    assert json.loads(flow.request.content)["input"][1]["encrypted_content"] == CAPTURED
    assert event["location"] == "input[1]" and event["healed"] == 1 and not kept
    assert "refused a value the proxy put back" in event["advice"]


def test_xai_names_the_item_whose_value_differs_in_its_own_words(tmp_path: Path) -> None:
    record = _reasoning_record("rs_1", "call_1", {"encrypted_content": CAPTURED})
    error = {"code": "invalid-argument", "error": fake_responses.UNDECRYPTABLE}
    altered = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": OTHER}
    event, _, _ = explained(tmp_path, "/v1/responses", _responses_body(altered), 400, error, [record])
    assert event["provider"] == "xai" and event["location"] == "input[1]" and event["item_ids"] == ["rs_1"]
    assert event["advice"] == VERDICT_ADVICE["altered"]
    as_issued = {**altered, "encrypted_content": CAPTURED}
    event, _, _ = explained(tmp_path, "/v1/responses", _responses_body(as_issued), 400, error, [record])
    assert event.get("location") is None and event["advice"] == VERDICT_ADVICE["as_issued"]  # not OpenAI's words


GEMINI_PATH = "/v1beta/models/gemini-3-pro-preview:generateContent"


def _gemini_turn(name: str, signature: str) -> list[dict]:
    return [
        {"role": "model", "parts": [{"functionCall": {"name": name, "args": {}}, "thoughtSignature": signature}]},
        {"role": "user", "parts": [{"functionResponse": {"name": name, "response": {"files": []}}}]},
    ]


def _gemini_record(name: str, signature: str) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="gemini_native",
        tool_calls=[ToolCallRef(name=name, arguments={}, fields={"thoughtSignature": signature})],
        request_model="gemini-3-pro-preview",
    )


def test_a_corrupted_thought_signature_names_the_part_that_differs(tmp_path: Path) -> None:
    question = {"role": "user", "parts": [{"text": "q"}]}
    body = {"contents": [question, *_gemini_turn("ls", "c2lnMQ=="), *_gemini_turn("cat", "b3RoZXI=")]}
    cached = [_gemini_record("ls", "c2lnMQ=="), _gemini_record("cat", "c2lnMg==")]
    error = {"error": {"code": 400, "message": fake_gemini.FOREIGN_SIGNATURE, "status": "INVALID_ARGUMENT"}}
    event, flow, kept = explained(tmp_path, GEMINI_PATH, body, 400, error, cached)
    assert event["rule"] == "signature_invalid" and event["location"] == "contents[3].parts[0]"
    assert event["function"] == "cat" and event["advice"] == VERDICT_ADVICE["altered"]
    assert event["healed"] == 0 and len(kept) == 2
    assert "at contents[3].parts[0] (function call `cat`)" in flow.comment

    # Vertex AI's text; nothing differs from what the proxy holds, and it never saw one of them.
    vertex = "/v1/projects/p/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent"
    error["error"]["message"] = fake_gemini.VERTEX_FOREIGN_SIGNATURE
    event, _, _ = explained(tmp_path, vertex, body, 400, error, cached[:1])
    assert event.get("location") is None and event["advice"] == VERDICT_ADVICE["none_differs"]
