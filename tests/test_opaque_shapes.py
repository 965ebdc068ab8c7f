"""No opaque value is judged by its shape: signatures and encrypted reasoning of a format nobody has seen yet (an
unusual prefix, one character, hundreds of kilobytes, characters outside base64, another provider's prefix) are kept
byte for byte when the client sends them back, and put back byte for byte when the proxy captured them.

Each case takes a real capture of its format, puts the odd value where the provider's value was (in the answer and
in the request that sends it back), and runs the flows through the addon's hooks."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from mitmproxy import http

from tests.test_fixtures import (
    COPILOT_STREAM,
    RESPONSES_STREAM,
    anthropic_pair,
    copilot_turns,
    exchange,
    fixture_bytes,
    fixture_json,
    replay,
    responses_turns,
    stream_docs,
)

SHAPES = {
    "unusual-prefix": "sig:v9!~new/format.with-dots_and:colons",
    "one-character": "x",
    "very-long": "Q" * 200_000 + "==",
    "not-base64": "~!@#$%^&*()[]{}|;',.<>? not base64 at all",
    "other-providers-prefix": "gAAAAABnot-a-fernet-token-EqQBCkYIBxgC",
}
GEMINI = "gemini/pydanticai_gemini3pro_stream_functioncall_signature_roundtrip"
GEMINI_PATH = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"


def substituted(flows: list[http.HTTPFlow], old: str, new: str) -> list[http.HTTPFlow]:
    """The flows with the provider's value `old` replaced by `new` wherever it stands whole."""
    for flow in flows:
        flow.request.content = flow.request.content.replace(old.encode(), new.encode())
        if flow.response is not None:
            flow.response.content = flow.response.content.replace(old.encode(), new.encode())
    return flows


# Each case: the flows (turn 1 with its answer, then the request that sends the value back, or that dropped it), the
# value the answer carries, and where the value stands in the request that sends it back.
def anthropic(keep: bool) -> tuple[list[http.HTTPFlow], str, Callable[[dict], str | None]]:
    flows = anthropic_pair("pydanticai_claude_sonnet4_thinking_tool_use_roundtrip")
    value = flows[0].response.json()["content"][0]["signature"]
    if not keep:
        doc = flows[1].request.json()
        del doc["messages"][1]["content"][0]
        flows[1].request.content = json.dumps(doc).encode()
    return flows, value, lambda doc: doc["messages"][1]["content"][0].get("signature")


def responses(keep: bool) -> tuple[list[http.HTTPFlow], str, Callable[[dict], str | None]]:
    flows = responses_turns(keep_reasoning=keep)
    docs = stream_docs(fixture_bytes(RESPONSES_STREAM).decode())
    done = [d["item"] for d in docs if d["type"] == "response.output_item.done"]
    value = next(item["encrypted_content"] for item in done if item.get("type") == "reasoning")
    at = len(flows[1].request.json()["input"]) - (3 if keep else 2)
    return flows, value, lambda doc: doc["input"][at].get("encrypted_content")


def gemini(keep: bool) -> tuple[list[http.HTTPFlow], str, Callable[[dict], str | None]]:
    """The answer's own signature (this client sends it back re-encoded url-safe: here it sends the answer's)."""
    raw = fixture_bytes(f"{GEMINI}_0_response_200.sse")
    parts = [p for d in stream_docs(raw.decode()) for c in d.get("candidates", []) for p in c["content"]["parts"]]
    value = next(part["thoughtSignature"] for part in parts if "functionCall" in part)
    second = fixture_json(f"{GEMINI}_1_request.json")
    second["contents"][1]["parts"][0]["thoughtSignature"] = value
    if not keep:
        del second["contents"][1]["parts"][0]["thoughtSignature"]
    # With a key: a call Gemini gave no id is found by its content only within one caller's scope.
    key = {"x_goog_api_key": "shapes-test-key"}
    flows = [
        exchange(GEMINI_PATH, fixture_json(f"{GEMINI}_0_request.json"), raw, content_type="text/event-stream",
                 headers=key),
        exchange(GEMINI_PATH, second, headers=key),
    ]  # fmt: skip
    return flows, value, lambda doc: doc["contents"][1]["parts"][0].get("thoughtSignature")


def copilot(keep: bool) -> tuple[list[http.HTTPFlow], str, Callable[[dict], str | None]]:
    """Copilot streams its reasoning_opaque whole in one delta; turn 2 sends it back, or drops it."""
    flows, value, _ = copilot_turns()
    assert fixture_bytes(COPILOT_STREAM).count(value.encode()) == 1
    return [flows[0], flows[2] if keep else flows[1]], value, lambda doc: doc["messages"][1].get("reasoning_opaque")


FORMATS = {"anthropic": anthropic, "responses": responses, "gemini": gemini, "chat-copilot": copilot}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("case", FORMATS)
def test_a_captured_value_of_any_shape_is_put_back_byte_for_byte(case: str, shape: str) -> None:
    flows, value, where = FORMATS[case](keep=False)
    flows = substituted(flows, value, SHAPES[shape])
    repairs = replay(flows)
    assert repairs[1], f"nothing was put back for {case}"
    assert where(flows[1].request.json()) == SHAPES[shape]
    assert json.dumps(SHAPES[shape])[1:-1].encode() in flows[1].request.content


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("case", FORMATS)
def test_a_value_of_any_shape_the_client_sends_back_is_kept_byte_for_byte(case: str, shape: str) -> None:
    flows, value, where = FORMATS[case](keep=True)
    flows = substituted(flows, value, SHAPES[shape])
    sent = flows[1].request.content
    repairs = replay(flows)
    assert repairs[1] == [] and flows[1].request.content == sent
    assert where(flows[1].request.json()) == SHAPES[shape]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("case", FORMATS)
def test_a_value_of_any_shape_the_proxy_never_saw_is_kept_byte_for_byte(case: str, shape: str) -> None:
    flows, value, where = FORMATS[case](keep=True)
    flows[1].request.content = flows[1].request.content.replace(value.encode(), SHAPES[shape].encode())
    sent = flows[1].request.content
    replay(flows)
    assert flows[1].request.content == sent
