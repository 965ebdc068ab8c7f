"""Captured flows as redacted fixtures: credentials, placeholders, stream framing, fixture directories, flows again."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.offline.fixtures import (
    ExchangeFixture,
    Expectation,
    RequestFixture,
    build_fixtures,
    clean_url,
    fixture_to_flow,
    read_fixture_dir,
    write_fixture_dir,
)
from llm_reasoning_proxy.offline.fixtures.placeholders import (
    OPAQUE_DATA_TYPES,
    OPAQUE_KEYS,
    OPAQUE_LIST_KEYS,
    stream_fragments,
)
from llm_reasoning_proxy.shared.redact import redact_json
from llm_reasoning_proxy.wire import by_name
from llm_reasoning_proxy.wire.gemini.format import PLACEHOLDER_BASE64
from mitmproxy import http
from mitmproxy.test import tflow, tutils

from tests.support.addon_context import addon_context
from tests.support.capture import pieces, tap_records
from tests.support.planted import planted

FIXTURES = Path(__file__).parent / "fixtures"
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
GEMINI_STREAM = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
# The path each provider directory's captures were sent to.
PROVIDER_PATHS = {
    "anthropic": MESSAGES,
    "copilot": "/chat/completions",
    "deepseek": CHAT,
    "gemini": GEMINI_STREAM,
    "gemini-openai-compat": "/v1beta/openai/chat/completions",
    "mistral": CHAT,
    "openai-responses": RESPONSES,
    "openrouter": "/api/v1/chat/completions",
    "zai": "/api/paas/v4/chat/completions",
    "dashscope": "/compatible-mode/v1/chat/completions",
}
SSE = "text/event-stream"
JSON = "application/json"


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def fixture_json(name: str) -> Any:
    return json.loads(fixture_bytes(name))


def exchange(
    path: str,
    body: Any,
    response: bytes | Any | None = None,
    *,
    content_type: str = JSON,
    status: int = 200,
    headers: dict[str, str] | None = None,
    response_headers: dict[str, str] | None = None,
) -> http.HTTPFlow:
    """A captured exchange as mitmproxy hands it over; `response` is raw bytes or a JSON document."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    request_headers = http.Headers(**{"content_type": JSON, **(headers or {})})
    request = tutils.treq(
        method=b"POST", scheme=b"https", host="api.example.com", port=443, path=path.encode(), headers=request_headers
    )
    request.content = content
    if response is None:
        return tflow.tflow(req=request)
    raw = response if isinstance(response, bytes) else json.dumps(response).encode()
    answer = tutils.tresp(
        status_code=status, headers=http.Headers(**{"content_type": content_type, **(response_headers or {})})
    )
    answer.content = raw
    return tflow.tflow(req=request, resp=answer)


def replay(flows: list[http.HTTPFlow]) -> list[list[str]]:
    """Runs flows through the addon's hooks in order (fresh in-memory cache); the repairs made on each request."""
    addons = make_addons()
    config, repair, capture = addons[:3]
    with addon_context(*addons) as tctx:
        # As when flows are saved: the repairs are then kept on each flow.
        tctx.configure(config, llm_cache="memory", llm_log="", llm_keep_bodies="true")
        for flow in flows:
            answer, flow.response = flow.response, None
            repair.request(flow)
            if answer is None:
                continue
            flow.response = answer
            raw, answer.raw_content = answer.raw_content or b"", None  # as live: the body is still to come
            capture.responseheaders(flow)
            for piece in [*pieces(raw, 97), b""]:
                flow.response.stream(piece)
            capture.response(flow)
    return [flow.metadata.get("llm", {}).get("repairs", []) for flow in flows]


def char_classes(text: str) -> str:
    return re.sub("[0-9]", "9", re.sub("[A-Z]", "A", re.sub("[a-z]", "a", text)))


def assert_masked(original: str, masked: str) -> None:
    assert len(masked) == len(original)
    assert char_classes(masked) == char_classes(original)
    assert masked != original


def stream_docs(sse: str) -> list[Any]:
    docs = []
    for line in re.split(r"\r\n|\r|\n", sse):
        if line.startswith("data:"):
            try:
                docs.append(json.loads(line[5:]))
            except ValueError:
                continue
    return docs


def dumped(fixtures: list[ExchangeFixture]) -> str:
    return json.dumps([f.model_dump() for f in fixtures])


# --- credentials ---------------------------------------------------------------------------------

BEARER = planted("ghu_", "PlantedBearerToken0123456789abcdef")
X_API_KEY = "planted-x-api-key-7d1e"
GOOG_KEY = planted("AIzaSy", "PlantedGoogHeaderKey0123456789abcd")
COOKIE = "planted_cookie_session_4411"
QUERY_KEY = "planted-query-key-9931"
QUERY_API_KEY = "planted-query-api-key-5520"
BODY_SK = planted("sk-proj-", "PlantedBodyKey0123456789abcdef")
BODY_AIZA = planted("AIzaSy", "PlantedBodyKey0123456789abcdefghij")
SSE_SK = planted("sk-ant-api03-", "PlantedStreamKey0123456789")
SSE_AIZA = planted("AIzaSy", "PlantedStreamKey0123456789abcdefgh")
BODY_FIELD = "planted-litellm-body-api-key"
NESTED_FIELD = "planted-mcp-header-value"
STREAM_FIELD = "planted-stream-password"
SET_COOKIE = "planted_set_cookie_8812"
QUOTED_COOKIE = "planted_quoted_cookie_3301"
ORGANIZATION = "org-PlantedOrganization"
PLANTED = [
    BEARER,
    X_API_KEY,
    GOOG_KEY,
    COOKIE,
    QUERY_KEY,
    QUERY_API_KEY,
    BODY_SK,
    BODY_AIZA,
    SSE_SK,
    SSE_AIZA,
    BODY_FIELD,
    NESTED_FIELD,
    STREAM_FIELD,
    SET_COOKIE,
    QUOTED_COOKIE,
    ORGANIZATION,
]


def secret_laden_flow() -> http.HTTPFlow:
    body = {
        "model": "gemini-3-pro-preview",
        "api_key": BODY_FIELD,
        "tools": [{"type": "mcp", "headers": {"X-Api-Key": NESTED_FIELD}}],
        "messages": [
            {"role": "system", "content": f"use {BODY_SK} for OpenAI"},
            {"role": "user", "content": f"my Gemini key is {BODY_AIZA}, keep it safe"},
        ],
    }
    lines = fixture_bytes("copilot/codecompanion_gemini3_tool_call_reasoning_opaque_stream.sse").split(b"\n")
    planted = [
        b": authorization: Bearer " + BEARER.encode(),
        b'data: {"choices":[{"index":0,"delta":{"content":"key '
        + SSE_SK.encode()
        + b" and "
        + SSE_AIZA.encode()
        + b'","role":"assistant"}}]}',
        b'data: {"choices":[{"index":0,"delta":{"content":"","password":"' + STREAM_FIELD.encode() + b'"}}]}',
        # Masked as text, this line would lose the backslash of an escaped quote and stop being JSON.
        b'data: {"choices":[{"index":0,"delta":{"content":"Cookie: s=' + QUOTED_COOKIE.encode() + b'\\"v\\" end"}}]}',
    ]
    stream = b"\n".join([*lines[:2], *planted, *lines[2:]])
    return exchange(
        f"/chat/completions?key={QUERY_KEY}&alt=sse&api_key={QUERY_API_KEY}",
        body,
        stream,
        content_type=SSE,
        headers={
            "authorization": f"Bearer {BEARER}",
            "x-api-key": X_API_KEY,
            "x-goog-api-key": GOOG_KEY,
            "cookie": f"session={COOKIE}; theme=dark",
            "openai-organization": ORGANIZATION,
            "user-agent": "Zed/0.200.0",
            "editor-version": "Zed/0.200.0",
            "copilot-integration-id": "zed",
            "x-initiator": "agent",
        },
        response_headers={"set-cookie": f"sid={SET_COOKIE}", "x-request-id": "req_1"},
    )


@pytest.mark.parametrize("placeholders", [False, True], ids=["as-is", "placeholders"])
def test_no_planted_credential_reaches_the_written_files(tmp_path: Path, placeholders: bool) -> None:
    fixtures = build_fixtures([secret_laden_flow()], placeholders=placeholders)
    written = write_fixture_dir(fixtures, tmp_path / "out", source="flows.mitm")
    text = b"".join(path.read_bytes() for path in written).decode()
    assert [secret for secret in PLANTED if secret in text] == []
    (fixture,) = fixtures
    assert fixture.request.url == "https://api.example.com/chat/completions?alt=sse"
    assert fixture.request.headers == {
        "content-type": JSON,
        "user-agent": "Zed/0.200.0",
        "editor-version": "Zed/0.200.0",
        "copilot-integration-id": "zed",
        "x-initiator": "agent",
    }
    assert fixture.response is not None and fixture.response.headers == {"content-type": SSE}
    body = fixture.request.body
    assert body["api_key"] == "[REDACTED]" and body["tools"][0]["headers"] == {"X-Api-Key": "[REDACTED]"}
    assert [m["content"] for m in body["messages"]] == [
        "use [REDACTED] for OpenAI",
        "my Gemini key is [REDACTED], keep it safe",
    ]
    sse = fixture.response.sse
    assert ": authorization: [REDACTED]\n" in sse
    assert '"content":"key [REDACTED] and [REDACTED]"' in sse
    # A secret only the decoded JSON shows: that line alone is written again from the redacted document.
    assert 'data: {"choices":[{"index":0,"delta":{"content":"","password":"[REDACTED]"}}]}\n' in sse
    assert 'data: {"choices":[{"index":0,"delta":{"content":"Cookie: [REDACTED]\\"v\\" end"}}]}\n' in sse
    data_lines = [line[6:] for line in sse.split("\n") if line.startswith("data: ") and line != "data: [DONE]"]
    assert len(data_lines) == 7 and all(json.loads(line) for line in data_lines)


def test_secret_query_parameters_and_user_info_are_removed_from_urls() -> None:
    url = "https://me:pw@gen.example.com/v1/x?alt=sse&KEY=1&api%5Fkey=2&foo=a%20b&access_token=3&x=1;sig=4"
    assert clean_url(url) == "https://gen.example.com/v1/x?alt=sse&foo=a%20b&x=1;sig=[REDACTED]"


def test_values_under_keys_naming_secrets_are_replaced_and_others_kept() -> None:
    doc = {
        "apiKey": "a",
        "aws_secret_access_key": "b",
        "vertex_credentials": '{"private_key": "c"}',
        "client-secret": 12345,
        "password": "",
        "is_secret": False,
        "max_tokens": 100,
        "logprobs": {"content": [{"token": "Hello", "logprob": -0.1}]},
        "signature": "EqEECkYICxgCKkAo",
    }
    assert redact_json(doc) == {
        "apiKey": "[REDACTED]",
        "aws_secret_access_key": "[REDACTED]",
        "vertex_credentials": "[REDACTED]",
        "client-secret": "[REDACTED]",
        "password": "",
        "is_secret": False,
        "max_tokens": 100,
        "logprobs": {"content": [{"token": "Hello", "logprob": -0.1}]},
        "signature": "EqEECkYICxgCKkAo",
    }


# --- placeholders: Copilot -----------------------------------------------------------------------

COPILOT_STREAM = "copilot/codecompanion_gemini3_tool_call_reasoning_opaque_stream.sse"


def copilot_turns() -> tuple[list[http.HTTPFlow], str, str]:
    """Turn 1 (streamed answer), turn 2 that drops the opaque and sends content [], turn 2 again as sent correctly."""
    raw = fixture_bytes(COPILOT_STREAM)
    deltas = [choice["delta"] for doc in stream_docs(raw.decode()) for choice in doc["choices"]]
    opaque = "".join(d["reasoning_opaque"] for d in deltas if "reasoning_opaque" in d)
    reasoning = "".join(d["reasoning_text"] for d in deltas if "reasoning_text" in d)
    (call,) = [c for d in deltas for c in d.get("tool_calls", [])]
    call = {"id": call["id"], "type": "function", "function": call["function"]}
    prompt = [{"role": "user", "content": "update quotes.lua"}]
    result = {"role": "tool", "tool_call_id": call["id"], "content": "lua/quotes.lua"}
    turn_1 = {"model": "gemini-3-pro-preview", "stream": True, "messages": prompt}
    dropped = {"role": "assistant", "content": [], "tool_calls": [call]}
    whole = {"role": "assistant", "content": None, "reasoning_text": reasoning, "reasoning_opaque": opaque}
    flows = [
        exchange("/chat/completions", turn_1, raw, content_type=SSE),
        exchange("/chat/completions", {**turn_1, "messages": [*prompt, dropped, result]}),
        exchange("/chat/completions", {**turn_1, "messages": [*prompt, {**whole, "tool_calls": [call]}, result]}),
    ]
    return flows, opaque, reasoning


def test_copilot_opaque_gets_one_placeholder_in_the_stream_and_in_the_request_that_sends_it_back() -> None:
    flows, opaque, reasoning = copilot_turns()
    answer, _, resent = build_fixtures(flows, placeholders=True)
    (masked,) = [
        c["delta"]["reasoning_opaque"]
        for d in stream_docs(answer.response.sse)
        for c in d["choices"]
        if "reasoning_opaque" in c["delta"]
    ]
    assert_masked(opaque, masked)
    assert resent.request.body["messages"][1]["reasoning_opaque"] == masked
    # Text reasoning stays readable, in the stream and in the request.
    assert resent.request.body["messages"][1]["reasoning_text"] == reasoning
    texts = [
        c["delta"]["reasoning_text"]
        for d in stream_docs(answer.response.sse)
        for c in d["choices"]
        if "reasoning_text" in c["delta"]
    ]
    assert "".join(texts) == reasoning
    assert opaque not in dumped([answer, resent])
    # Only the opaque value changed: same length, same lines.
    assert len(answer.response.sse) == len(flows[0].response.content.decode())


def test_copilot_fixture_replays_to_the_same_repair_with_the_placeholder_restored() -> None:
    flows, _, _ = copilot_turns()
    fixtures = build_fixtures(flows, placeholders=True)
    replayed = [fixture_to_flow(f) for f in fixtures]
    repairs = replay(replayed)
    assert repairs == replay(flows)
    assert repairs == [
        [],
        [
            "content [] -> null on messages[1]",
            "restored reasoning_text, reasoning_opaque on messages[1] (tool call call_MHxoeW9qWnVicVd6R0FkMFZ3UWw)",
        ],
        [],
    ]
    sent_back = fixtures[2].request.body["messages"][1]
    restored = replayed[1].request.json()["messages"][1]
    assert restored["reasoning_opaque"] == sent_back["reasoning_opaque"]
    assert restored["reasoning_text"] == sent_back["reasoning_text"]


# --- placeholders: LiteLLM signature-carrying ids ------------------------------------------------

LITELLM_SHORT_ID = "call_00d09e4f03654b668abe3e361f1e"
LITELLM_SIGNATURE = base64.b64encode(bytes(range(7, 250, 3)) + b"\xfb\xff").decode()


def litellm_turns() -> list[http.HTTPFlow]:
    full_id = f"{LITELLM_SHORT_ID}__thought__{LITELLM_SIGNATURE}"
    cut_id = f"{LITELLM_SHORT_ID}__thought__{LITELLM_SIGNATURE[:40]}"
    function = {"name": "calculator", "arguments": '{"expression": "2+2"}'}
    answer = {
        "id": "chatcmpl-1",
        "model": "gemini-3-pro-preview",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": full_id,
                            "type": "function",
                            "function": function,
                            "provider_specific_fields": {"thought_signature": LITELLM_SIGNATURE},
                        }
                    ],
                },
            }
        ],
    }
    prompt = [{"role": "user", "content": "what is 2+2?"}]

    def turn(call_id: str, **extra: Any) -> dict[str, Any]:
        call = {"id": call_id, "type": "function", "function": function, **extra}
        messages = [
            *prompt,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": "4"},
        ]
        return {"model": "gemini/gemini-3-pro-preview", "messages": messages}

    return [
        exchange(CHAT, {"model": "gemini/gemini-3-pro-preview", "messages": prompt}, answer),
        exchange(CHAT, turn(full_id, provider_specific_fields={"thought_signature": LITELLM_SIGNATURE})),
        exchange(CHAT, turn(cut_id)),
        exchange(CHAT, turn(LITELLM_SHORT_ID)),
    ]


def test_litellm_id_suffix_is_replaced_alike_in_ids_tool_results_and_provider_fields() -> None:
    answer, resent, cut, stripped = build_fixtures(litellm_turns(), placeholders=True)
    (call,) = answer.response.body["choices"][0]["message"]["tool_calls"]
    short, mark, masked = call["id"].partition("__thought__")
    assert (short, mark) == (LITELLM_SHORT_ID, "__thought__")
    assert_masked(LITELLM_SIGNATURE, masked)
    assert call["provider_specific_fields"] == {"thought_signature": masked}
    messages = resent.request.body["messages"]
    assert messages[1]["tool_calls"][0]["id"] == messages[2]["tool_call_id"] == call["id"]
    assert messages[1]["tool_calls"][0]["provider_specific_fields"] == {"thought_signature": masked}
    # A client that cut the id short sends the start of the same placeholder.
    cut_id = f"{LITELLM_SHORT_ID}__thought__{masked[:40]}"
    assert cut.request.body["messages"][1]["tool_calls"][0]["id"] == cut.request.body["messages"][2]["tool_call_id"]
    assert cut.request.body["messages"][2]["tool_call_id"] == cut_id
    assert stripped.request.body["messages"][2]["tool_call_id"] == LITELLM_SHORT_ID
    assert LITELLM_SIGNATURE[:40] not in dumped([answer, resent, cut, stripped])


def test_litellm_fixture_replays_to_the_same_id_repairs() -> None:
    flows = litellm_turns()
    fixtures = build_fixtures(flows, placeholders=True)
    replayed = [fixture_to_flow(f) for f in fixtures]
    repairs = replay(replayed)
    full_id = fixtures[0].response.body["choices"][0]["message"]["tool_calls"][0]["id"]
    masked = full_id.partition("__thought__")[2]
    cut_id = f"{LITELLM_SHORT_ID}__thought__{masked[:40]}"
    assert repairs == [
        [],
        [],
        *(
            [
                f"restored provider_specific_fields on messages[1].tool_calls[0] (tool call {sent})",
                f"restored full tool call id on messages[1].tool_calls[0] and its tool results (tool call {full_id})",
            ]
            for sent in (cut_id, LITELLM_SHORT_ID)
        ),
    ]
    assert replayed[2].request.json()["messages"][2]["tool_call_id"] == full_id
    assert replayed[3].request.json()["messages"][2]["tool_call_id"] == full_id
    # The original traffic gets the same repairs; the log names its ids, signature and all.
    unmasked = [
        [r.replace(masked, LITELLM_SIGNATURE).replace(masked[:40], LITELLM_SIGNATURE[:40]) for r in flow]
        for flow in repairs
    ]
    assert replay(flows) == unmasked


# --- placeholders: OpenAI Responses --------------------------------------------------------------

RESPONSES_STREAM = "openai-responses/pydanticai_gpt5_stream_reasoning_function_calls_0_response_200.sse"


def responses_turns(*, keep_reasoning: bool) -> list[http.HTTPFlow]:
    request = fixture_json("openai-responses/pydanticai_gpt5_stream_reasoning_function_calls_0_request.json")
    raw = fixture_bytes(RESPONSES_STREAM)
    done = [d["item"] for d in stream_docs(raw.decode()) if d["type"] == "response.output_item.done"]
    reasoning, call = done
    replayed = [reasoning] if keep_reasoning else []
    replayed.append({k: call[k] for k in ("id", "type", "arguments", "call_id", "name")})
    replayed.append({"type": "function_call_output", "call_id": call["call_id"], "output": "Final result processed."})
    turn_2 = {**request, "input": [*request["input"], *replayed]}
    return [exchange(RESPONSES, request, raw, content_type=SSE), exchange(RESPONSES, turn_2)]


def test_responses_stub_done_and_completed_copies_are_each_mapped() -> None:
    flows = responses_turns(keep_reasoning=True)
    originals = re.findall(r'"encrypted_content":"([^"]*)"', flows[0].response.content.decode())
    answer, resent = build_fixtures(flows, placeholders=True)
    masks = re.findall(r'"encrypted_content":"([^"]*)"', answer.response.sse)
    assert [len(v) for v in originals] == [824, 3896, 3896]
    for original, masked in zip(originals, masks, strict=True):
        assert_masked(original, masked)
    assert len(set(masks)) == 3
    # The value the client sends back is the full one from output_item.done.
    assert resent.request.body["input"][1]["encrypted_content"] == masks[1]
    assert not any(value in dumped([answer, resent]) for value in originals)


def test_responses_fixture_replays_to_the_same_inserted_reasoning_item() -> None:
    flows = responses_turns(keep_reasoning=False)
    fixtures = build_fixtures(flows, placeholders=True)
    replayed = [fixture_to_flow(f) for f in fixtures]
    repairs = replay(replayed)
    assert repairs == replay(flows)
    assert repairs[1] == [
        "inserted reasoning rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405 before input[2] "
        "(tool call call_CWXgs68YprAjp6t0371hiPOI)"
    ]
    done = [d["item"] for d in stream_docs(fixtures[0].response.sse) if d["type"] == "response.output_item.done"]
    assert replayed[1].request.json()["input"][1] == done[0]


def test_responses_non_streamed_round_trip_keeps_one_placeholder() -> None:
    name = "openai-responses/pydanticai_gpt5_reasoning_function_call_roundtrip_{}"
    flows = [
        exchange(
            RESPONSES, fixture_json(name.format("0_request.json")), fixture_json(name.format("0_response_200.json"))
        ),
        exchange(
            RESPONSES, fixture_json(name.format("1_request.json")), fixture_json(name.format("1_response_200.json"))
        ),
    ]
    original = fixture_json(name.format("1_request.json"))["input"][1]["encrypted_content"]
    answer, resent = build_fixtures(flows, placeholders=True)
    masked = answer.response.body["output"][0]["encrypted_content"]
    assert_masked(original, masked)
    assert resent.request.body["input"][1]["encrypted_content"] == masked


# --- placeholders: Anthropic ---------------------------------------------------------------------


def anthropic_pair(name: str) -> list[http.HTTPFlow]:
    return [
        exchange(
            MESSAGES,
            fixture_json(f"anthropic/{name}_0_request.json"),
            fixture_json(f"anthropic/{name}_0_response_200.json"),
        ),
        exchange(
            MESSAGES,
            fixture_json(f"anthropic/{name}_1_request.json"),
            fixture_json(f"anthropic/{name}_1_response_200.json"),
        ),
    ]


def test_anthropic_signature_and_redacted_data_keep_their_placeholders_across_turns() -> None:
    signed = anthropic_pair("pydanticai_claude_sonnet4_thinking_tool_use_roundtrip")
    redacted = anthropic_pair("pydanticai_claude45_redacted_thinking_roundtrip")
    originals = [flow.response.json()["content"][0] for flow in (signed[0], redacted[0])]
    answer, resent, redacted_answer, redacted_resent = build_fixtures([*signed, *redacted], placeholders=True)
    thinking = answer.response.body["content"][0]
    assert_masked(originals[0]["signature"], thinking["signature"])
    assert thinking["thinking"] == originals[0]["thinking"]
    assert resent.request.body["messages"][1]["content"][0] == thinking
    data = redacted_answer.response.body["content"][0]
    assert data["type"] == "redacted_thinking"
    assert_masked(originals[1]["data"], data["data"])
    assert redacted_resent.request.body["messages"][1]["content"][0] == data


def test_anthropic_fixture_replays_to_the_same_inserted_thinking_block() -> None:
    flows = anthropic_pair("pydanticai_claude_sonnet4_thinking_tool_use_roundtrip")
    doc = flows[1].request.json()
    del doc["messages"][1]["content"][0]
    flows[1].request.content = json.dumps(doc).encode()
    fixtures = build_fixtures(flows, placeholders=True)
    replayed = [fixture_to_flow(f) for f in fixtures]
    repairs = replay(replayed)
    assert repairs == replay(flows)
    assert repairs[1] == ["inserted thinking before messages[1].content[1] (tool call toolu_01YGzqpRE16Vricda3Aqcejo)"]
    assert replayed[1].request.json()["messages"][1]["content"][0] == fixtures[0].response.body["content"][0]


# --- placeholders: Gemini ------------------------------------------------------------------------


def test_gemini_signature_keeps_its_letters_when_the_client_re_encodes_it_url_safe() -> None:
    name = "gemini/pydanticai_gemini3pro_stream_functioncall_signature_roundtrip_{}"
    flows = [
        exchange(
            GEMINI_STREAM,
            fixture_json(name.format("0_request.json")),
            fixture_bytes(name.format("0_response_200.sse")),
            content_type=SSE,
        ),
        exchange(
            GEMINI_STREAM,
            fixture_json(name.format("1_request.json")),
            fixture_bytes(name.format("1_response_200.sse")),
            content_type=SSE,
        ),
    ]
    issued = stream_docs(flows[0].response.content.decode())[0]["candidates"][0]["content"]["parts"][0][
        "thoughtSignature"
    ]
    answer, resent = build_fixtures(flows, placeholders=True)
    masked = stream_docs(answer.response.sse)[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    assert_masked(issued, masked)
    sent = resent.request.body["contents"][1]["parts"][0]["thoughtSignature"]
    assert sent == masked.replace("+", "-").replace("/", "_")
    # The stream's \r\n\r\n framing is untouched by the placeholders.
    original_breaks = re.findall(r"\r\n|\r|\n", flows[0].response.content.decode())
    assert re.findall(r"\r\n|\r|\n", answer.response.sse) == original_breaks
    assert len(answer.response.sse) == len(flows[0].response.content)


def test_dummy_signatures_and_tool_arguments_are_left_as_they_are() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "sign it"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "sign", "args": {"signature": "Best regards, Ana"}},
                    "thoughtSignature": PLACEHOLDER_BASE64,
                }
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "sign", "response": {"signature": "ok-123456789012345"}}}],
        },
    ]
    (fixture,) = build_fixtures([exchange(GEMINI_STREAM, {"contents": contents})], placeholders=True)
    assert fixture.request.body["contents"] == contents


# --- placeholders: values streamed in pieces -----------------------------------------------------


def test_a_signature_streamed_in_pieces_gets_the_slices_of_the_whole_values_placeholder() -> None:
    signature = "EqEECkYICxgCKkAo3UA4WwDbB8ihhpykVCsPx6iM+qZ/w=="

    def event(kind: str, doc: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **doc})}\n\n"

    stream = "".join(
        [
            event("message_start", {"message": {"id": "msg_1", "model": "claude-sonnet-4-5", "content": []}}),
            event(
                "content_block_start",
                {"index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
            ),
            event("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "Look it up."}}),
            event(
                "content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": signature[:20]}}
            ),
            event(
                "content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": signature[20:]}}
            ),
            event("content_block_stop", {"index": 0}),
            event(
                "content_block_start",
                {"index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}},
            ),
            event("content_block_stop", {"index": 1}),
            event("message_stop", {}),
        ]
    )
    block = {"type": "thinking", "thinking": "Look it up.", "signature": signature}
    turn_2 = {
        "model": "claude-sonnet-4-5",
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": "list"},
            {"role": "assistant", "content": [block, {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]},
        ],
    }
    flows = [
        exchange(MESSAGES, {"model": "claude-sonnet-4-5", "messages": []}, stream.encode(), content_type=SSE),
        exchange(MESSAGES, turn_2),
    ]
    answer, resent = build_fixtures(flows, placeholders=True)
    masked = resent.request.body["messages"][1]["content"][0]["signature"]
    assert_masked(signature, masked)
    pieces_sent = [
        d["delta"]["signature"]
        for d in stream_docs(answer.response.sse)
        if d.get("delta", {}).get("type") == "signature_delta"
    ]
    assert pieces_sent == [masked[:20], masked[20:]]
    (record,) = tap_records(by_name("anthropic_messages"), answer.response.sse.encode(), sse=True, size=13)
    assert record.fields["thinking_blocks"] == [{**block, "signature": masked}]


def test_a_copilot_opaque_streamed_in_pieces_reads_back_as_the_requests_placeholder() -> None:
    opaque = "lgxMQq0m/J6cVjsaH8bbfhxHtAvK4Y+BfAp1pc+7cey9LclSxRqdco0qW23d=="
    call = {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    chunks = [
        {"id": "r1", "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_opaque": opaque[:25]}}]},
        {
            "id": "r1",
            "choices": [{"index": 0, "delta": {"reasoning_opaque": opaque[25:], "tool_calls": [{**call, "index": 0}]}}],
        },
    ]
    stream = "".join(f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks) + "data: [DONE]\r\n\r\n"
    turn_2 = [
        {"role": "user", "content": "ls"},
        {"role": "assistant", "content": None, "reasoning_opaque": opaque, "tool_calls": [call]},
    ]
    flows = [
        exchange(
            "/chat/completions",
            {"model": "gemini-3-pro-preview", "messages": turn_2[:1]},
            stream.encode(),
            content_type=SSE,
        ),
        exchange("/chat/completions", {"model": "gemini-3-pro-preview", "messages": turn_2}),
    ]
    answer, resent = build_fixtures(flows, placeholders=True)
    masked = resent.request.body["messages"][1]["reasoning_opaque"]
    assert_masked(opaque, masked)
    (record,) = tap_records(by_name("chat_completions"), answer.response.sse.encode(), sse=True, size=7)
    assert record.fields == {"reasoning_opaque": masked}


def test_the_opaque_places_are_the_union_of_what_each_wire_format_names() -> None:
    assert OPAQUE_KEYS == {
        "reasoning_opaque",
        "encrypted_content",
        "signature",
        "thoughtSignature",
        "thought_signature",
        "redactedContent",
    }
    assert OPAQUE_LIST_KEYS == {"thought_signatures"}
    assert OPAQUE_DATA_TYPES == {"redacted_thinking", "reasoning.encrypted"}


def test_stream_fragments_are_the_pieces_each_format_joins() -> None:
    chat = {
        "choices": [
            {
                "index": 1,
                "delta": {
                    "reasoning_opaque": "op",
                    "reasoning_details": [
                        {"type": "reasoning.text", "index": 0, "text": "thinking", "signature": "si"},
                        {"type": "reasoning.encrypted", "index": 1, "data": "en"},
                        {"type": "redacted_thinking", "index": [2], "data": "re"},  # any format's data type counts
                        {"type": "reasoning.summary", "index": 3, "data": "not opaque"},
                        "not an entry",
                    ],
                },
            },
            {"delta": {"reasoning_opaque": ""}},  # empty: nothing to replace
            {"delta": {"reasoning_opaque": PLACEHOLDER_BASE64}},  # a published dummy stays
        ]
    }
    assert stream_fragments(chat) == [
        (("chat_completions", "choice", 1, "reasoning_opaque"), "op"),
        (("chat_completions", "choice", 1, "details", "reasoning.text", 0, "signature"), "si"),
        (("chat_completions", "choice", 1, "details", "reasoning.encrypted", 1, "data"), "en"),
        (("chat_completions", "choice", 1, "details", "redacted_thinking", "[2]", "data"), "re"),
    ]
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}
    assert stream_fragments(delta) == [(("anthropic_messages", "block", 0, "signature"), "sig")]
    thinking = {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "signature": "x"}}
    assert stream_fragments(thinking) == []
    for whole in ([delta], "data", None, {"type": "response.output_item.done", "item": {"encrypted_content": "e"}}):
        assert stream_fragments(whole) == []


# --- event streams as captured -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/*.sse")))
def test_event_streams_are_kept_byte_for_byte_without_placeholders(tmp_path: Path, name: str) -> None:
    raw = fixture_bytes(name)
    path = PROVIDER_PATHS[name.split("/")[0]]
    body = {"model": "m", "messages": [], "input": [], "contents": []}
    (fixture,) = build_fixtures([exchange(path, body, raw, content_type=SSE)], placeholders=False)
    assert fixture.response.sse.encode() == raw
    write_fixture_dir([fixture], tmp_path, source="capture.mitm")
    (read,) = read_fixture_dir(tmp_path)
    assert fixture_to_flow(read).response.content == raw


# --- what is exported ----------------------------------------------------------------------------


def test_only_llm_exchanges_are_exported_in_order() -> None:
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    flows = [
        tflow.tflow(req=tutils.treq(method=b"GET", path=b"/v1/models"), resp=True),
        exchange(CHAT, chat, {"id": "a"}),
        exchange("/v1/embeddings", {"input": "x", "model": "e"}, {"data": []}),
        exchange(CHAT, {"model": "m", "prompt": "no messages"}, {"id": "b"}),
        exchange(RESPONSES, {"model": "m", "input": "hi"}, {"id": "c"}),
        tflow.ttcpflow(),
    ]
    fixtures = build_fixtures(flows, placeholders=False)
    assert [(f.request.url, f.response.body) for f in fixtures] == [
        ("https://api.example.com/v1/chat/completions", {"id": "a"}),
        ("https://api.example.com/v1/responses", {"id": "c"}),
    ]


def test_compressed_bodies_are_stored_decoded() -> None:
    answer = fixture_json("deepseek/pydanticai_deepseek_reasoning_content_tool_calls_roundtrip_0_response_200.json")
    request = fixture_json("deepseek/pydanticai_deepseek_reasoning_content_tool_calls_roundtrip_0_request.json")
    flow = exchange(CHAT, request, answer)
    flow.request.encode("gzip")
    flow.response.encode("br")
    stream = exchange(CHAT, request, fixture_bytes(COPILOT_STREAM), content_type=SSE)
    stream.response.encode("gzip")
    assert flow.request.raw_content[:2] == b"\x1f\x8b"
    plain, streamed = build_fixtures([flow, stream], placeholders=False)
    assert plain.request.body == request and plain.response.body == answer
    assert plain.request.headers == {"content-type": JSON}
    assert streamed.response.sse.encode() == fixture_bytes(COPILOT_STREAM)


def test_bodies_that_are_not_json_are_stored_as_text() -> None:
    truncated = b'{"model": "m", "messages": [{"role": "user", "content": "hi'
    page = b"<html><body>502 Bad Gateway</body></html>"
    flows = [
        exchange(CHAT, truncated, page, content_type="text/html", status=502),
        exchange(CHAT, {"model": "m", "messages": []}, b"42"),
    ]
    broken, scalar = build_fixtures(flows, placeholders=False)
    assert broken.request.body == truncated.decode()
    assert (broken.response.status, broken.response.body, broken.response.sse) == (502, page.decode(), None)
    assert broken.response.headers == {"content-type": "text/html"}
    assert scalar.response.body == "42"
    assert fixture_to_flow(broken).request.content == truncated
    assert fixture_to_flow(scalar).response.content == b"42"


def test_the_body_the_client_sent_is_exported_not_the_repaired_one() -> None:
    flows, _, _ = copilot_turns()
    client_sent = flows[1].request.content
    replay(flows)
    assert flows[1].request.content != client_sent  # repaired live
    flows[1].metadata["llm"]["original_request"] = client_sent
    (_, fixture, _) = build_fixtures(flows, placeholders=False)
    assert fixture.request.body == json.loads(client_sent)


def test_an_exchange_without_response_is_kept_without_one() -> None:
    flow = exchange(CHAT, {"model": "m", "messages": []})
    flow.error = tflow.terr()
    (fixture,) = build_fixtures([flow], placeholders=False)
    assert fixture.response is None
    assert fixture_to_flow(fixture).response is None


# --- fixture directories and flows again ---------------------------------------------------------


def round_trip_flows() -> list[http.HTTPFlow]:
    name = "anthropic/pydanticai_claude45_redacted_thinking_stream_0_{}"
    return [
        *copilot_turns()[0][:2],
        exchange(
            MESSAGES,
            fixture_json(name.format("request.json")),
            fixture_bytes(name.format("response_200.sse")),
            content_type=SSE,
        ),
        *anthropic_pair("pydanticai_claude_sonnet4_thinking_tool_use_roundtrip"),
    ]


@pytest.mark.parametrize("placeholders", [False, True], ids=["as-is", "placeholders"])
def test_fixtures_written_and_read_back_become_flows_with_the_same_bodies(tmp_path: Path, placeholders: bool) -> None:
    fixtures = build_fixtures(round_trip_flows(), placeholders=placeholders)
    written = write_fixture_dir(fixtures, tmp_path / "conversation", source="flows.mitm")
    assert [p.name for p in written] == ["0001.json", "0002.json", "0003.json", "0004.json", "0005.json", "meta.json"]
    assert written[0].read_text().startswith('{\n  "request": {\n    "method": "POST",')
    read = read_fixture_dir(tmp_path / "conversation")
    assert read == fixtures
    for fixture in read:
        flow = fixture_to_flow(fixture)
        assert flow.request.method == "POST" and flow.request.url == fixture.request.url
        assert flow.request.json() == fixture.request.body
        assert flow.request.headers["content-type"] == JSON
        if fixture.response is None:
            assert flow.response is None
        elif fixture.response.sse is not None:
            assert flow.response.content == fixture.response.sse.encode()
            assert flow.response.headers["content-type"] == SSE
        else:
            assert flow.response.json() == fixture.response.body
    assert [f.response.sse is not None if f.response else None for f in read] == [True, None, True, False, False]


@pytest.mark.parametrize("source", ["/home/ana/captures/flows.mitm", "C:\\Users\\ana\\flows.mitm", "flows.mitm"])
def test_meta_names_the_source_file_never_its_path(tmp_path: Path, source: str) -> None:
    fixtures = build_fixtures(round_trip_flows()[:2], placeholders=True)
    *_, meta_path = write_fixture_dir(fixtures, tmp_path, source=source)
    meta = json.loads(meta_path.read_text())
    assert set(meta) == {"source", "exported_at", "tool", "tool_version", "placeholders", "exchanges"}
    assert (meta["source"], meta["tool"], meta["placeholders"], meta["exchanges"]) == (
        "flows.mitm",
        "llm-reasoning-proxy",
        True,
        2,
    )
    assert "ana" not in meta_path.read_text() and "/" not in meta["source"] and "\\" not in meta["source"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", meta["exported_at"])


def test_meta_says_whether_placeholders_were_used(tmp_path: Path) -> None:
    flows = round_trip_flows()[:1]
    for placeholders in (False, True):
        out = tmp_path / str(placeholders)
        *_, meta = write_fixture_dir(build_fixtures(flows, placeholders=placeholders), out, source="f.mitm")
        assert json.loads(meta.read_text())["placeholders"] is placeholders
        assert [f.uses_placeholders for f in read_fixture_dir(out)] == [placeholders]


def test_a_directory_that_holds_something_is_only_overwritten_when_asked(tmp_path: Path) -> None:
    fixtures = build_fixtures(round_trip_flows(), placeholders=False)
    write_fixture_dir(fixtures, tmp_path, source="old.mitm")
    (tmp_path / "NOTES.md").write_text("why this conversation failed")
    with pytest.raises(FileExistsError, match="is not empty"):
        write_fixture_dir(fixtures[:2], tmp_path, source="new.mitm")
    assert len(read_fixture_dir(tmp_path)) == 5
    write_fixture_dir(fixtures[:2], tmp_path, source="new.mitm", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0001.json", "0002.json", "NOTES.md", "meta.json"]
    assert read_fixture_dir(tmp_path) == fixtures[:2]


def test_an_edited_fixture_with_an_unknown_field_is_refused(tmp_path: Path) -> None:
    fixture = ExchangeFixture(
        request=RequestFixture(method="POST", url="https://h/v1/messages", body=None), response=None
    )
    write_fixture_dir([fixture], tmp_path, source="x.mitm")
    doc = json.loads((tmp_path / "0001.json").read_text())
    doc["expect"] = {"repair": ["typo"]}
    (tmp_path / "0001.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="0001.json is not an exchange fixture"):
        read_fixture_dir(tmp_path)


def test_expectations_are_stored_with_the_fixture(tmp_path: Path) -> None:
    (fixture,) = build_fixtures(copilot_turns()[0][1:2], placeholders=False)
    expected = ["content [] -> null on messages[1]"]
    fixture.expect = Expectation(repairs=expected)
    write_fixture_dir([fixture], tmp_path, source="x.mitm")
    (read,) = read_fixture_dir(tmp_path)
    assert read.expect is not None and read.expect.repairs == expected and read.expect.fails_after_repair == []
