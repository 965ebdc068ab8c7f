"""The Gemini native format: capture over real captures, and repair as pure functions over parsed bodies."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from pathlib import Path

import pytest
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef, arguments_digest
from llm_reasoning_proxy.wire import CacheView, RepairContext
from llm_reasoning_proxy.wire.gemini.format import GeminiNative, text_key

from tests.support import capture

FIXTURES = Path(__file__).parent / "fixtures" / "gemini"
FORMAT = GeminiNative()
GEMINI_API = "/v1beta/models/gemini-3-pro-preview:generateContent"
VERTEX = "/v1/projects/demo/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent"
MODEL = "gemini-3-pro-preview"
SKIP_BASE64 = "c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="
ROUNDTRIP = "pydanticai_gemini3pro_stream_functioncall_signature_roundtrip"
TEXT_SIGNED = "pydanticai_gemini25pro_stream_thought_parts_text_signature_0_response_200.sse"
STREAMS = sorted(FIXTURES.glob("*.sse"))


def tap_records(raw: bytes, **options) -> list[ReasoningRecord]:
    return capture.tap_records(FORMAT, raw, **options)


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def sse_documents(raw: bytes) -> list[dict]:
    return [json.loads(line[5:]) for line in raw.decode().splitlines() if line.startswith("data:")]


def oracle(docs: list[dict]) -> dict:
    """Every signed part of a response, read the simplest way: (kind, name or text so far, signature)."""
    signed, answer = [], ""
    for doc in docs:
        for part in doc["candidates"][0]["content"]["parts"]:
            if "functionCall" in part:
                signed.append(("call", part["functionCall"]["name"], part.get("thoughtSignature")))
            elif not part.get("thought"):
                if "thoughtSignature" in part:
                    signed.append(("text", "first" if not answer else "last", part["thoughtSignature"]))
                answer += part["text"]
    return {"signed": [s for s in signed if s[2] is not None], "answer": answer}


def from_records(records: list[ReasoningRecord]) -> dict:
    signed, answer = [], None
    for record in records:
        signed += [("call", c.name, c.fields["thoughtSignature"]) for c in record.tool_calls if c.fields]
        if "thoughtSignature" in record.fields:
            signed.append(("text", record.fields["signedTextPart"], record.fields["thoughtSignature"]))
            (key,) = record.extra_keys
            answer = key
    return {"signed": signed, "answer": answer}


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("size", [None, 1, 7])
def test_stream_capture_is_independent_of_chunking(path: Path, size: int | None) -> None:
    raw = path.read_bytes()
    records = tap_records(raw, sse=True, size=size)
    assert records == tap_records(raw, sse=True)
    expected = oracle(sse_documents(raw))
    got = from_records(records)
    assert got["signed"] == expected["signed"]
    if got["answer"] is not None:
        assert got["answer"] == text_key(expected["answer"])


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_gzipped_stream_capture(path: Path) -> None:
    raw = path.read_bytes()
    assert tap_records(gzip.compress(raw), sse=True, size=7, encoding="gzip") == tap_records(raw, sse=True)


@pytest.mark.parametrize("size", [None, 1, 7])
def test_document_capture(size: int | None) -> None:
    raw = (FIXTURES / "pydanticai_gemini3pro_dummy_signature_context_engineering_response_200.json").read_bytes()
    (record,) = tap_records(raw, sse=False, size=size)
    assert record.tool_calls == [
        ToolCallRef(
            name="final_result",
            arguments='{"city":"Mexico City","country":"Mexico"}',
            fields={"thoughtSignature": json.loads(raw)["candidates"][0]["content"]["parts"][0]["thoughtSignature"]},
        )
    ]
    assert record.fields == {} and record.extra_keys == []
    assert record.response_id == "TeAgaaKoDO-tz7IPmu30uQo"
    assert record.response_model == "gemini-3-pro-preview"


def test_gemini3_streamed_function_call_signature() -> None:
    raw = (FIXTURES / f"{ROUNDTRIP}_0_response_200.sse").read_bytes()
    assert b"\r\n\r\n" in raw
    (record,) = tap_records(raw, sse=True, size=7)
    (call,) = record.tool_calls
    assert (call.id, call.name, call.arguments_sha256) == ("", "get_country", arguments_digest({}))
    assert call.fields["thoughtSignature"].startswith(
        "EpwICpkIAXLI2nxlU6gsWZaZHRYkX1orzuM8vSUFwaAt1JRxEC2hJzPAcAu3PWaKz7X+"
    )
    assert len(call.fields["thoughtSignature"]) == 1408
    assert record.response_id == "QUVVadTSNJ6_qtsPvN7J8Q0"
    stored = record.model_copy(update={"request_model": MODEL})
    assert len(stored.keys()) == 1 and stored.keys()[0].startswith("fp:")


def test_unsigned_final_answer_gives_no_record() -> None:
    raw = (FIXTURES / f"{ROUNDTRIP}_1_response_200.sse").read_bytes()
    assert tap_records(raw, sse=True, size=1) == []


def test_codecompanion_thought_part_and_signed_call_in_one_chunk() -> None:
    raw = (FIXTURES / "codecompanion_functioncall_thoughtsignature_stream.sse").read_bytes()
    (record,) = tap_records(raw, sse=True, size=7)
    assert record.tool_calls == [
        ToolCallRef(
            id="abc123",
            name="file_search",
            arguments='{"query":"README.md"}',
            fields={"thoughtSignature": "Ev0BCvoBAb4"},
        )
    ]
    assert record.fields == {}  # the thought text is not kept


def test_gemini25_text_part_signature() -> None:
    raw = (FIXTURES / TEXT_SIGNED).read_bytes()
    (record,) = tap_records(raw, sse=True, size=7)
    answer = "".join(
        part["text"]
        for doc in sse_documents(raw)
        for part in doc["candidates"][0]["content"]["parts"]
        if not part.get("thought")
    )
    assert answer.startswith("This is a great question!") and answer.endswith("might not see you.")
    assert record.fields["signedTextPart"] == "first"
    assert record.fields["thoughtSignature"].startswith("CiIB0e2Kb6Syj1a961EfbWv4W5C8RgAA")
    assert record.extra_keys == [text_key(answer)]
    assert record.tool_calls == []
    assert record.response_model == "gemini-2.5-pro"


def test_gemini3_signature_on_the_closing_empty_text_part() -> None:
    """The docs' FAQ case: the real answer stream, with the signature on its last, empty part."""
    raw = (FIXTURES / f"{ROUNDTRIP}_1_response_200.sse").read_bytes()
    signed_end = raw.replace(b'{"text": ""}', b'{"text": "", "thoughtSignature": "Q2xvc2luZw=="}')
    assert signed_end != raw
    (record,) = tap_records(signed_end, sse=True, size=7)
    assert record.fields == {"thoughtSignature": "Q2xvc2luZw==", "signedTextPart": "last"}
    assert record.extra_keys == [text_key("The capital of Mexico is Mexico City.")]
    assert record.tool_calls == [] and record.response_id == "REVVabaiCdq4qtsPnZu96Qo"


def test_json_array_stream_without_alt_sse() -> None:
    docs = sse_documents((FIXTURES / f"{ROUNDTRIP}_0_response_200.sse").read_bytes())
    (record,) = tap_records(json.dumps(docs).encode(), sse=False, size=7)
    assert (
        record.tool_calls[0].fields["thoughtSignature"]
        == docs[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    )


def test_cut_stream_keeps_signed_calls_and_drops_text_signatures() -> None:
    raw = (FIXTURES / f"{ROUNDTRIP}_0_response_200.sse").read_bytes()
    (record,) = tap_records(raw[: raw.index(b"\r\n\r\n") + 4], sse=True, complete=False)
    assert record.complete is False and record.tool_calls[0].fields

    raw = (FIXTURES / TEXT_SIGNED).read_bytes()
    assert tap_records(raw[: len(raw) // 2], sse=True, complete=False) == []


# claims ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, model",
    [
        ("/v1beta/models/gemini-3-pro-preview:generateContent", "gemini-3-pro-preview"),
        ("/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse", "gemini-3-pro-preview"),
        ("/v1beta/models/gemini-2.5-flash:generateContent?key=AIzaabc", "gemini-2.5-flash"),
        (VERTEX, "gemini-3-pro-preview"),
        (
            "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            "gemini-2.5-pro",
        ),
    ],
)
def test_claims_gemini_paths_and_reads_the_model_from_them(path: str, model: str) -> None:
    body = b'{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}'
    assert FORMAT.claims("POST", path, body)
    assert FORMAT.request_model(path, body, None) == model
    assert FORMAT.request_model(path, body, {"model": "other"}) == model


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("GET", GEMINI_API, b'{"contents":[]}'),
        ("POST", "/v1beta/models/gemini-3-pro-preview:countTokens", b'{"contents":[]}'),
        ("POST", "/v1beta/openai/chat/completions", b'{"contents":[],"messages":[]}'),
        ("POST", GEMINI_API, b'{"messages":[]}'),
        ("POST", "/v1beta/generateContent", b'{"contents":[]}'),
    ],
)
def test_leaves_other_traffic_alone(method: str, path: str, body: bytes) -> None:
    assert not FORMAT.claims(method, path, body)


def test_only_bodies_with_a_function_call_are_parsed() -> None:
    assert not FORMAT.may_need_repair((FIXTURES / f"{ROUNDTRIP}_0_request.json").read_bytes())
    assert not FORMAT.may_need_repair(
        (FIXTURES / "pydanticai_gemini25pro_stream_thought_parts_text_signature_0_request.json").read_bytes()
    )
    assert FORMAT.may_need_repair((FIXTURES / f"{ROUNDTRIP}_1_request.json").read_bytes())
    assert FORMAT.may_need_repair(b'{"contents":[{"role":"model","parts":[{"function_call":{"name":"f"}}]}]}')


# repair ----------------------------------------------------------------------------------------


def captured(*calls: ToolCallRef, model: str = MODEL, response_id: str = "resp-1", **fields: str) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="gemini_native",
        fields=fields,
        tool_calls=list(calls),
        response_id=response_id,
        request_model=model,
    )


def signed(name: str, args: dict, signature: str, call_id: str = "") -> ToolCallRef:
    return ToolCallRef(
        id=call_id, name=name, arguments=json.dumps(args, sort_keys=True), fields={"thoughtSignature": signature}
    )


def unsigned(name: str, args: dict, call_id: str = "") -> ToolCallRef:
    return ToolCallRef(id=call_id, name=name, arguments=json.dumps(args, sort_keys=True))


def cached_for(doc: dict, records: list[ReasoningRecord], model: str | None = MODEL) -> CacheView:
    """What the proxy would find in a cache holding `records`, for this request."""
    stored = {key: r for r in records for key in r.keys()}
    return CacheView({k: stored[k] for k in FORMAT.lookup_keys(doc, model) if k in stored}, model)


def context(path: str = GEMINI_API, placeholder: str = "auto", model: str | None = MODEL) -> RepairContext:
    return RepairContext(path=path, model=model, placeholder=placeholder)


def user(text: str) -> dict:
    return {"role": "user", "parts": [{"text": text}]}


def model_calls(*calls: tuple[str, dict], ids: tuple[str, ...] = ()) -> dict:
    parts = []
    for i, (name, args) in enumerate(calls):
        call = {"name": name, "args": args}
        if i < len(ids):
            call["id"] = ids[i]
        parts.append({"functionCall": call})
    return {"role": "model", "parts": parts}


def results(*names: str) -> dict:
    return {"role": "user", "parts": [{"functionResponse": {"name": n, "response": {"result": "ok"}}} for n in names]}


def request(*contents: dict) -> dict:
    return {"contents": [user("What is in deleteme?"), *contents]}


def test_pydantic_ai_round_trip_gets_its_signature_back_on_the_same_part() -> None:
    (record,) = tap_records((FIXTURES / f"{ROUNDTRIP}_0_response_200.sse").read_bytes(), sse=True, size=7)
    record = record.model_copy(update={"request_model": MODEL})
    original = load(f"{ROUNDTRIP}_1_request.json")
    sent_signature = original["contents"][1]["parts"][0]["thoughtSignature"]
    assert "-" in sent_signature and "_" in sent_signature  # pydantic-ai re-encoded it URL-safe
    doc = copy.deepcopy(original)
    del doc["contents"][1]["parts"][0]["thoughtSignature"]

    actions = FORMAT.repair(doc, cached_for(doc, [record]), context())
    part = doc["contents"][1]["parts"][0]
    assert part["thoughtSignature"] == record.tool_calls[0].fields["thoughtSignature"]
    assert base64.b64decode(part["thoughtSignature"]) == base64.urlsafe_b64decode(sent_signature)
    assert set(part) == {"functionCall", "thoughtSignature"}
    assert doc["contents"][0] == original["contents"][0] and doc["contents"][2] == original["contents"][2]
    assert [a.describe() for a in actions] == [
        "restored thoughtSignature on contents[1].parts[0] "
        "(tool call pyd_ai_29bf73b69e02448588e15893d47a3e7e, matched by name and arguments)"
    ]
    assert actions[0].via == "fingerprint" and actions[0].response_id == "QUVVadTSNJ6_qtsPvN7J8Q0"


def test_client_signatures_in_real_requests_are_left_alone() -> None:
    for name in (
        f"{ROUNDTRIP}_1_request.json",
        "pydanticai_gemini3pro_dummy_signature_context_engineering_request.json",
    ):
        doc = load(name)
        before = copy.deepcopy(doc)
        (record,) = tap_records((FIXTURES / f"{ROUNDTRIP}_0_response_200.sse").read_bytes(), sse=True)
        record = record.model_copy(update={"request_model": MODEL})
        assert FORMAT.repair(doc, cached_for(doc, [record]), context()) == []
        assert doc == before


def test_parallel_calls_only_the_first_gets_the_signature() -> None:
    doc = request(model_calls(("ls", {"path": "a"}), ("ls", {"path": "b"})), results("ls", "ls"))
    record = captured(signed("ls", {"path": "a"}, "SIG/A+=="), unsigned("ls", {"path": "b"}))
    actions = FORMAT.repair(doc, cached_for(doc, [record]), context())
    assert doc["contents"][1]["parts"] == [
        {"functionCall": {"name": "ls", "args": {"path": "a"}}, "thoughtSignature": "SIG/A+=="},
        {"functionCall": {"name": "ls", "args": {"path": "b"}}},
    ]
    assert [a.location for a in actions] == ["contents[1].parts[0]"]


def test_parallel_calls_with_the_same_name_and_arguments_get_one_signature() -> None:
    doc = request(model_calls(("now", {}), ("now", {})), results("now", "now"))
    record = captured(signed("now", {}, "SIG"), unsigned("now", {}))
    FORMAT.repair(doc, cached_for(doc, [record]), context())
    assert [p.get("thoughtSignature") for p in doc["contents"][1]["parts"]] == ["SIG", None]


def test_sequential_steps_each_get_their_own_signature() -> None:
    doc = request(
        model_calls(("ls", {"path": "a"})),
        results("ls"),
        model_calls(("cat", {"path": "a/x"})),
        results("cat"),
    )
    records = [captured(signed("ls", {"path": "a"}, "S1")), captured(signed("cat", {"path": "a/x"}, "S2"))]
    actions = FORMAT.repair(doc, cached_for(doc, records), context())
    assert doc["contents"][1]["parts"][0]["thoughtSignature"] == "S1"
    assert doc["contents"][3]["parts"][0]["thoughtSignature"] == "S2"
    assert [(a.kind, a.location) for a in actions] == [
        ("restored", "contents[1].parts[0]"),
        ("restored", "contents[3].parts[0]"),
    ]


@pytest.mark.parametrize("key", ["thoughtSignature", "thought_signature"])
def test_a_signature_the_client_sent_is_never_overwritten(key: str) -> None:
    doc = request(model_calls(("ls", {"path": "a"})), results("ls"))
    doc["contents"][1]["parts"][0][key] = "theirs"
    before = copy.deepcopy(doc)
    assert FORMAT.repair(doc, cached_for(doc, [captured(signed("ls", {"path": "a"}, "ours"))]), context()) == []
    assert doc == before


def test_null_signature_counts_as_missing_and_keeps_its_spelling() -> None:
    doc = request(model_calls(("ls", {"path": "a"})), results("ls"))
    doc["contents"][1]["parts"][0]["thought_signature"] = None
    FORMAT.repair(doc, cached_for(doc, [captured(signed("ls", {"path": "a"}, "ours"))]), context())
    assert doc["contents"][1]["parts"][0] == {
        "functionCall": {"name": "ls", "args": {"path": "a"}},
        "thought_signature": "ours",
    }


def test_snake_case_request_gets_the_snake_case_field() -> None:
    doc = {
        "contents": [
            user("What is in deleteme?"),
            {"role": "model", "parts": [{"function_call": {"name": "ls", "args": {"path": "a"}}}]},
            {"role": "user", "parts": [{"function_response": {"name": "ls", "response": {}}}]},
        ]
    }
    actions = FORMAT.repair(doc, cached_for(doc, [captured(signed("ls", {"path": "a"}, "S"))]), context())
    assert doc["contents"][1]["parts"][0] == {
        "function_call": {"name": "ls", "args": {"path": "a"}},
        "thought_signature": "S",
    }
    assert actions[0].fields == ["thought_signature"]


def test_id_matches_first_then_name_and_arguments() -> None:
    record = captured(signed("ls", {"path": "a"}, "S", call_id="call_1"))
    by_id = request(model_calls(("ls", {"path": "changed"}), ids=("call_1",)), results("ls"))
    (action,) = FORMAT.repair(by_id, cached_for(by_id, [record]), context(placeholder="off"))
    assert (action.via, action.tool_call_id) == ("id", "call_1")
    assert by_id["contents"][1]["parts"][0]["thoughtSignature"] == "S"

    by_arguments = request(model_calls(("ls", {"path": "a"}), ids=("client-id",)), results("ls"))
    (action,) = FORMAT.repair(by_arguments, cached_for(by_arguments, [record]), context(placeholder="off"))
    assert (action.via, action.tool_call_id) == ("fingerprint", "client-id")

    neither = request(model_calls(("ls", {"path": "b"}), ids=("client-id",)), results("ls"))
    assert FORMAT.repair(neither, cached_for(neither, [record]), context(placeholder="off")) == []
    assert "thoughtSignature" not in neither["contents"][1]["parts"][0]


def test_arguments_match_whatever_their_key_order_or_absence() -> None:
    doc = request(
        {"role": "model", "parts": [{"functionCall": {"name": "get_country"}}]},
        results("get_country"),
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {"b": 2, "a": 1}}}]},
        results("ls"),
    )
    records = [captured(signed("get_country", {}, "S1")), captured(signed("ls", {"a": 1, "b": 2}, "S2"))]
    FORMAT.repair(doc, cached_for(doc, records), context(placeholder="off"))
    assert doc["contents"][1]["parts"][0]["thoughtSignature"] == "S1"
    assert doc["contents"][3]["parts"][0]["thoughtSignature"] == "S2"


def test_records_of_another_model_are_not_replayed() -> None:
    other = captured(signed("ls", {"path": "a"}, "S", call_id="call_1"), model="gemini-2.5-pro")
    doc = request(model_calls(("ls", {"path": "a"}), ids=("call_1",)), results("ls"))
    cache = cached_for(doc, [other])
    assert FORMAT.repair(doc, cache, context(placeholder="off")) == []
    assert "thoughtSignature" not in doc["contents"][1]["parts"][0]
    assert cache.mismatched == {"call_1": "gemini-2.5-pro"}
    # Without an id the name-and-arguments key itself names the model: nothing is even found.
    doc = request(model_calls(("ls", {"path": "a"})), results("ls"))
    assert cached_for(doc, [other]).found == {}


@pytest.mark.parametrize(
    "path, setting, sent",
    [
        (GEMINI_API, "auto", SKIP_BASE64),
        (VERTEX, "auto", "skip_thought_signature_validator"),
        (
            GEMINI_API + "?key=abc",
            "Y29udGV4dF9lbmdpbmVlcmluZ19pc190aGVfd2F5X3RvX2dv",
            "Y29udGV4dF9lbmdpbmVlcmluZ19pc190aGVfd2F5X3RvX2dv",
        ),
        (
            VERTEX.replace(":generateContent", ":streamGenerateContent?alt=sse"),
            "auto",
            "skip_thought_signature_validator",
        ),
    ],
    ids=["gemini-api", "vertex", "custom", "vertex-stream"],
)
def test_placeholder_on_a_cache_miss(path: str, setting: str, sent: str) -> None:
    assert base64.b64decode(SKIP_BASE64) == b"skip_thought_signature_validator"
    doc = request(model_calls(("ls", {"path": "a"}), ("ls", {"path": "b"}), ids=("c1", "c2")), results("ls", "ls"))
    actions = FORMAT.repair(doc, CacheView({}, MODEL), context(path, setting))
    assert [p.get("thoughtSignature") for p in doc["contents"][1]["parts"]] == [sent, None]
    (action,) = actions
    assert (action.kind, action.location, action.index, action.degraded) == (
        "placeholder",
        "contents[1].parts[0]",
        1,
        True,
    )
    assert action.tool_call_id == "c1" and action.fields == ["thoughtSignature"]
    assert (
        action.describe()
        == "sent placeholder thoughtSignature on contents[1].parts[0] (tool call c1): nothing cached (degraded)"
    )


@pytest.mark.parametrize(
    "setting, path, model",
    [
        ("off", GEMINI_API, MODEL),
        ("auto", "/v1beta/models/gemini-2.5-pro:generateContent", "gemini-2.5-pro"),
        ("auto", "/v1beta/models/gemini-2.5-pro:generateContent", None),
    ],
)
def test_no_placeholder_when_off_or_not_gemini3(setting: str, path: str, model: str | None) -> None:
    doc = request(model_calls(("ls", {"path": "a"})), results("ls"))
    before = copy.deepcopy(doc)
    assert FORMAT.repair(doc, CacheView({}, model), context(path, setting, model)) == []
    assert doc == before


def test_placeholder_uses_the_path_model_when_the_context_has_none() -> None:
    doc = request(model_calls(("ls", {"path": "a"})), results("ls"))
    (action,) = FORMAT.repair(doc, CacheView({}, None), context(GEMINI_API, "auto", None))
    assert action.kind == "placeholder"


def test_only_the_current_turn_gets_placeholders() -> None:
    doc = {
        "contents": [
            user("First question"),
            model_calls(("ls", {"path": "old"})),
            results("ls"),
            {"role": "model", "parts": [{"text": "Done."}]},
            user("Second question"),
            model_calls(("ls", {"path": "new"})),
            results("ls"),
            {"role": "model", "parts": [{"text": "Looking further."}, {"functionCall": {"name": "cat", "args": {}}}]},
            results("cat"),
        ]
    }
    actions = FORMAT.repair(doc, CacheView({}, MODEL), context())
    assert [a.location for a in actions] == ["contents[5].parts[0]", "contents[7].parts[1]"]
    assert "thoughtSignature" not in doc["contents"][1]["parts"][0]


def test_a_user_content_with_text_beside_function_results_starts_the_turn() -> None:
    doc = request(
        model_calls(("ls", {"path": "a"})),
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}, {"text": "Now stop."}]},
        model_calls(("ls", {"path": "b"})),
        results("ls"),
    )
    assert [a.location for a in FORMAT.repair(doc, CacheView({}, MODEL), context())] == ["contents[3].parts[0]"]


def test_restore_beats_placeholder_and_fills_only_the_misses() -> None:
    doc = request(model_calls(("ls", {"path": "a"})), results("ls"), model_calls(("ls", {"path": "b"})), results("ls"))
    actions = FORMAT.repair(doc, cached_for(doc, [captured(signed("ls", {"path": "a"}, "S"))]), context())
    assert [(a.kind, a.location) for a in actions] == [
        ("restored", "contents[1].parts[0]"),
        ("placeholder", "contents[3].parts[0]"),
    ]
    assert doc["contents"][1]["parts"][0]["thoughtSignature"] == "S"
    assert doc["contents"][3]["parts"][0]["thoughtSignature"] == SKIP_BASE64


def test_repair_is_idempotent() -> None:
    doc = request(
        {"role": "model", "parts": [{"text": "Let me look."}, {"functionCall": {"name": "ls", "args": {"path": "a"}}}]},
        results("ls"),
        model_calls(("ls", {"path": "b"})),
        results("ls"),
    )
    records = [captured(signed("ls", {"path": "a"}, "S"), signedTextPart="first", thoughtSignature="T")]
    assert len(FORMAT.repair(doc, cached_for(doc, records), context())) == 3
    once = copy.deepcopy(doc)
    assert FORMAT.repair(doc, cached_for(doc, records), context()) == []
    assert doc == once


def test_text_signature_comes_back_by_answer_text() -> None:
    (record,) = tap_records((FIXTURES / TEXT_SIGNED).read_bytes(), sse=True, size=7)
    record = record.model_copy(update={"request_model": "gemini-2.5-pro"})
    raw = (FIXTURES / TEXT_SIGNED).read_bytes()
    answer = "".join(
        p["text"] for d in sse_documents(raw) for p in d["candidates"][0]["content"]["parts"] if not p.get("thought")
    )
    doc = {
        "contents": [
            user("How do I cross the street?"),
            {"role": "model", "parts": [{"text": "thinking…", "thought": True}, {"text": answer}]},
            user("And with a bike?"),
            model_calls(("dummy", {})),
            results("dummy"),
        ]
    }
    path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    actions = FORMAT.repair(doc, cached_for(doc, [record], "gemini-2.5-pro"), context(path, "auto", "gemini-2.5-pro"))
    assert doc["contents"][1]["parts"][1]["thoughtSignature"] == record.fields["thoughtSignature"]
    assert "thoughtSignature" not in doc["contents"][1]["parts"][0]
    assert [a.describe() for a in actions] == ["restored thoughtSignature on contents[1].parts[1]"]


@pytest.mark.parametrize("placement, expected", [("first", [0]), ("last", [2])])
def test_text_signature_goes_on_the_first_or_last_answer_part(placement: str, expected: list[int]) -> None:
    parts = [{"text": "The capital"}, {"text": " is Mexico City."}, {"text": ""}]
    record = captured(thoughtSignature="T", signedTextPart=placement)
    record = record.model_copy(update={"extra_keys": [text_key("The capital is Mexico City.")]})
    doc = request({"role": "model", "parts": parts}, user("Thanks"), model_calls(("ls", {})), results("ls"))
    FORMAT.repair(doc, cached_for(doc, [record]), context(placeholder="off"))
    assert [i for i, p in enumerate(doc["contents"][1]["parts"]) if "thoughtSignature" in p] == expected


def test_text_signature_is_not_added_beside_one_the_client_kept() -> None:
    record = captured(thoughtSignature="T", signedTextPart="last").model_copy(update={"extra_keys": [text_key("A B")]})
    doc = request(
        {"role": "model", "parts": [{"text": "A", "thoughtSignature": "theirs"}, {"text": " B"}]},
        user("Next"),
        model_calls(("ls", {})),
        results("ls"),
    )
    FORMAT.repair(doc, cached_for(doc, [record]), context(placeholder="off"))
    assert doc["contents"][1]["parts"] == [{"text": "A", "thoughtSignature": "theirs"}, {"text": " B"}]


def test_lookup_keys() -> None:
    doc = request(
        {"role": "model", "parts": [{"text": "Answer."}]},
        user("More"),
        model_calls(("ls", {"path": "a"}), ids=("call_9",)),
        results("ls"),
    )
    keys = FORMAT.lookup_keys(doc, MODEL)
    assert keys[0] == text_key("Answer.")
    assert keys[1] == "call_9" and keys[2].startswith("fp:") and len(keys) == 3


@pytest.mark.parametrize(
    "doc",
    [
        None,
        [],
        "contents",
        {"contents": "x"},
        {"contents": [None, 3, "model", {"role": "model"}, {"role": "model", "parts": "x"}]},
        {"contents": [{"role": "model", "parts": [None, 1, "t", {"functionCall": "x"}, {"functionCall": None}]}]},
        {"contents": [{"role": "model", "parts": [{"functionCall": {"name": 3, "args": [1]}}, {"text": 5}]}]},
        {"contents": [{"parts": [{"functionResponse": None}]}, {"role": "model", "parts": [{"functionCall": {}}]}]},
    ],
)
def test_odd_shapes_do_not_raise(doc: object) -> None:
    before = copy.deepcopy(doc)
    keys = FORMAT.lookup_keys(doc, MODEL)
    actions = FORMAT.repair(doc, CacheView({}, MODEL), context(placeholder="off"))
    assert actions == [] and doc == before
    assert isinstance(keys, list)


def test_odd_shapes_in_a_response_give_no_records() -> None:
    reader = FORMAT.reader()
    for doc in [None, [], {"candidates": "x"}, {"candidates": [None, {"content": []}, {"content": {"parts": [3]}}]}]:
        reader.feed_document(doc)
    reader.feed_document({"candidates": [{"content": {"parts": [{"functionCall": "x", "thoughtSignature": 5}]}}]})
    assert reader.records(complete=True) == []


def test_an_answer_of_countless_candidates_is_bounded_and_not_cached() -> None:
    """Each candidate index the capture meets is a state it holds: an answer that lists more than MAX_CHOICES of
    them (a real one asks for a few) holds no more, and is not cached, as a chat answer with too many choices."""
    from llm_reasoning_proxy.shared.limits import MAX_CHOICES

    signed = {"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "c2ln"}
    chunks = [
        {"candidates": [{"index": index, "content": {"role": "model", "parts": [signed if index == 0 else {}]}}]}
        for index in range(MAX_CHOICES * 40)
    ]
    reader = FORMAT.reader()
    for chunk in chunks:
        reader.feed_document(chunk)
    assert reader.budget.over == f"it has more than {MAX_CHOICES} candidates"
    assert len(reader.candidates) == MAX_CHOICES
