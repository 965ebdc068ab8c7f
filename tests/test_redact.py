"""Unit tests for addon/shared/redact.py: credentials never reach logs."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llm_reasoning_proxy.shared.redact import (
    REDACTED,
    SECRET_HEADERS,
    holds_credential,
    is_credential_header,
    redact_json_text,
    redact_text,
    redact_url,
)

from tests.support.planted import every_shape, planted

OPENAI_KEY = planted("sk-proj-", "AbCdEfGh12345678IjKlMnOp")
ANTHROPIC_KEY = planted("sk-ant-api03-", "AbCdEf123456789_xyz-QQ")
GOOGLE_KEY = planted("AIzaSy", "A1234567890abcdefghijklmnopqrstu")
GITHUB_USER_TOKEN = planted("ghu_", "abcdefghijklmnopqrstuvwxyz0123")
GITHUB_OAUTH_TOKEN = planted("gho_", "ABCDEFGHIJKLMNOPQRSTUV1234")

# --------------------------------------------------------------------------------------
# redact_text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"Authorization: Bearer {OPENAI_KEY}", OPENAI_KEY),
        ("authorization: bearer opaque.jwt-like.value_123", "opaque.jwt-like.value_123"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ("Authorization: token 0123456789abcdef", "0123456789abcdef"),
        (f'{{"x-api-key":"{ANTHROPIC_KEY}"}}', ANTHROPIC_KEY),
        ('{"x-api-key": "not-shaped-like-a-key-42"}', "not-shaped-like-a-key-42"),
        ('{"X-Api-Key" : "abc123abc123"}', "abc123abc123"),
        (f"x-goog-api-key: {GOOGLE_KEY}", GOOGLE_KEY),
        ("x-goog-api-key: plainvalue999", "plainvalue999"),
        ("api-key: 0123456789abcdef0123", "0123456789abcdef0123"),
        ("Api-Key=azure0123456789", "azure0123456789"),
        ("x-auth-token: tok_abc_123456", "tok_abc_123456"),
        ("Proxy-Authorization: secretproxycreds", "secretproxycreds"),
        (
            "400 for url https://generativelanguage.googleapis.com/v1beta/models/gemini:streamGenerateContent"
            "?key=AIzaSecret123&alt=sse",
            "AIzaSecret123",
        ),
        ("POST /v1/chat?alt=sse&api_key=s3cr3t-value ok", "s3cr3t-value"),
        ("GET /cb?code=oauth-code-xyz&state=1", "oauth-code-xyz"),
        ("GET /x?access_token=abc.def.ghi", "abc.def.ghi"),
        (f"failed with key {OPENAI_KEY} during call", OPENAI_KEY),
        (planted("sk-", "abcdefghijklmnop"), planted("sk-", "abcdefghijklmnop")),  # exactly 16 after sk-
        (f"({ANTHROPIC_KEY})", ANTHROPIC_KEY),
        (f"copilot token {GITHUB_USER_TOKEN}!", GITHUB_USER_TOKEN),
        (f"oauth={GITHUB_OAUTH_TOKEN}", GITHUB_OAUTH_TOKEN),
        (planted("ghp_", "abcdefghijklmnopqrstuvwxyz"), planted("ghp_", "abcdefghijklmnopqrstuvwxyz")),
        (f"bad key '{GOOGLE_KEY}'", GOOGLE_KEY),
        # how an exception's message shows a headers dict: Python repr, single quotes
        ("request failed: {'x-api-key': 'my-secret-value-123'}", "my-secret-value-123"),
        ("headers={'api-key': 'azure-secret-456789'}", "azure-secret-456789"),
        # every cookie on the line is a credential, not only the first one
        ("Cookie: theme=dark; session=SECRETVALUE123", "SECRETVALUE123"),
    ],
)
def test_redact_text_masks_secret(text, secret):
    result = redact_text(text)
    assert secret not in result
    assert REDACTED in result


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Authorization: Bearer {OPENAI_KEY}", "Authorization: [REDACTED]"),
        (f'{{"x-api-key":"{ANTHROPIC_KEY}"}}', '{"x-api-key":"[REDACTED]"}'),
        (f"x-goog-api-key: {GOOGLE_KEY}", "x-goog-api-key: [REDACTED]"),
        ("api-key: 0123456789abcdef0123", "api-key: [REDACTED]"),
        ("see ?key=AIzaSecret123&alt=sse now", "see ?key=[REDACTED]&alt=sse now"),
        (f"using {OPENAI_KEY} here", "using [REDACTED] here"),
        (f"{GITHUB_USER_TOKEN} and {GITHUB_OAUTH_TOKEN}", "[REDACTED] and [REDACTED]"),
        ("HTTPError: Bearer abcdefgh12345678 rejected", "HTTPError: Bearer [REDACTED] rejected"),
    ],
)
def test_redact_text_exact(text, expected):
    assert redact_text(text) == expected


def test_redact_text_keeps_surrounding_query_params():
    result = redact_text("url=https://h/v1/m:streamGenerateContent?alt=sse&key=AIzaSecret123&foo=bar")
    assert result == "url=https://h/v1/m:streamGenerateContent?alt=sse&key=[REDACTED]&foo=bar"


@pytest.mark.parametrize(
    "text",
    [
        "the token count exceeded the limit",
        "This model's maximum context length is 128000 tokens",
        "max_tokens is too large: 5000",
        "Invalid token: expected a string",
        '{"reasoning_opaque":"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123+/abc=="}',
        'reasoning_opaque: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123+/abc=="',
        '{"signature":"EqQBCkYIBRgCIkB2h7r0fG1x+5yQ/kW9zZ==","type":"thinking"}',
        "sk-short",
        "ask-me-anything-about-everything",
        "task-abcdefghijklmnopqrstu",
        "ghu_short",
        "key points: monkey=1, turkey=2",
        "GET /v1/chat/completions?alt=sse&stream=true",
        "content-type: application/json",
        "",
    ],
)
def test_redact_text_leaves_ordinary_text_alone(text):
    assert redact_text(text) == text


def test_redact_text_is_idempotent():
    text = f"Authorization: Bearer {OPENAI_KEY} ?key=abc123&alt=sse {GITHUB_USER_TOKEN}"
    once = redact_text(text)
    assert redact_text(once) == once


# --------------------------------------------------------------------------------------
# redact_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent"
            "?alt=sse&key=AIzaSecret123",
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent"
            "?alt=sse&key=[REDACTED]",
        ),
        (
            "https://api.example.com/v1/chat?key=abc&alt=sse",
            "https://api.example.com/v1/chat?key=[REDACTED]&alt=sse",
        ),
        (
            "https://api.example.com/v1/chat?api_key=zzz&alt=sse",
            "https://api.example.com/v1/chat?api_key=[REDACTED]&alt=sse",
        ),
        (
            "https://api.example.com/v1/x?KEY=abc&Api_Key=def&stream=true",
            "https://api.example.com/v1/x?KEY=[REDACTED]&Api_Key=[REDACTED]&stream=true",
        ),
        (
            "https://user:pass@api.example.com/v1/chat/completions",
            "https://[REDACTED]@api.example.com/v1/chat/completions",
        ),
        (
            "https://user:pass@api.example.com:8443/v1/chat?key=abc&alt=sse#frag",
            "https://[REDACTED]@api.example.com:8443/v1/chat?key=[REDACTED]&alt=sse#frag",
        ),
        (
            "https://api.example.com/v1/chat?token=t&access_token=a&sig=s&alt=sse",
            "https://api.example.com/v1/chat?token=[REDACTED]&access_token=[REDACTED]&sig=[REDACTED]&alt=sse",
        ),
        ("https://api.openai.com/v1/chat/completions", "https://api.openai.com/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1/messages?beta=true", "http://127.0.0.1:8080/v1/messages?beta=true"),
    ],
)
def test_redact_url(url, expected):
    assert redact_url(url) == expected


def test_redact_url_secret_values_absent():
    url = "https://alice:hunter2@h.example/p/a/t/h?key=K3Y&api_key=AP1&alt=sse"
    result = redact_url(url)
    for secret in ("alice", "hunter2", "K3Y", "AP1"):
        assert secret not in result
    assert "/p/a/t/h" in result
    assert "alt=sse" in result


# --------------------------------------------------------------------------------------
# is_credential_header


def test_credential_headers_are_told_apart_from_others():
    credentials = ["Authorization", "COOKIE", "X-Api-Key", "x-goog-api-key", "Proxy-Authorization", "set-cookie"]
    others = ["Content-Type", "Accept", "Content-Encoding", "x-trace"]
    assert [name for name in credentials + others if is_credential_header(name)] == credentials
    assert is_credential_header("Api-Key")  # Azure OpenAI's


@pytest.mark.parametrize("name", sorted(SECRET_HEADERS))
def test_every_secret_header_is_a_credential_in_any_case(name):
    for spelling in (name, name.upper(), name.title()):
        assert is_credential_header(spelling)


def test_offline_diff_masks_values_under_secret_named_keys() -> None:
    from llm_reasoning_proxy.offline.check import request_diff

    call = {"functionCall": {"name": "deploy", "args": {"region": "eu", "api_key": "PLANTED123"}}}
    before = {"contents": [{"role": "model", "parts": [call]}]}
    after = {"contents": [{"role": "model", "parts": [call | {"thoughtSignature": "sig"}]}]}
    diff = request_diff(before, after)
    assert '+          "thoughtSignature": "sig"' in diff and '"api_key": "[REDACTED]"' in diff
    assert "PLANTED123" not in diff


# --------------------------------------------------------------------------------------
# every shape, in every encoding a text reaches the redactor in

SHAPES = every_shape("unit-test-nonce")


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_credential_shape_is_masked_in_text_and_in_json(name: str) -> None:
    value, marker = SHAPES[name]
    text = f"the tool printed ({value}) and went on"
    masked = redact_text(text)
    assert marker not in masked and REDACTED in masked and masked.endswith(") and went on")
    for encoded in (json.dumps({"content": text}), json.dumps({"line": json.dumps({"content": text})})):
        masked = redact_json_text(encoded)
        assert marker not in masked
        assert json.loads(masked)  # still JSON


@pytest.mark.parametrize(
    "text",
    [
        '"usage":{"output_tokens":208,"input_tokens":12}',
        "max_tokens: 4096",
        "the secretary: bob, the monkey: banana",
        "a token budget of 2048, then think",
        "see https://docs.example.com/api_key-rotation for how",
        "git checkout gh-pages && ask the skeptic",
        "thought_signature: skip_thought_signature_validator",
    ],
)
def test_ordinary_words_are_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_masking_json_text_that_a_match_would_break_falls_back_to_the_document() -> None:
    line = json.dumps({"a": "Authorization: Bearer abcdefghijkl", "b": 'cookie: x=1; y="2"'})
    masked = redact_json_text(line)
    assert "abcdefghijkl" not in masked and json.loads(masked)["b"].startswith("cookie: ")


@given(st.lists(st.sampled_from(sorted(SHAPES)), min_size=1, max_size=6), st.text(max_size=40))
def test_masked_json_is_json_and_holds_no_planted_credential(names: list[str], filler: str) -> None:
    doc = {"messages": [{"role": "user", "content": f"{filler} {SHAPES[name][0]} {filler}"} for name in names]}
    for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False), json.dumps({"wrapped": json.dumps(doc)})):
        masked = redact_json_text(text)
        json.loads(masked)
        assert not any(SHAPES[name][1] in masked for name in names)


def test_text_whose_lower_case_is_longer_is_masked_at_the_right_place() -> None:
    value, marker = SHAPES["github"]
    text = "İİİ bearer abcdefghijklmnop " + value + " İ end"
    masked = redact_text(text)
    assert marker not in masked and "abcdefghijklmnop" not in masked
    assert masked.startswith("İİİ bearer [REDACTED] ") and masked.endswith(" İ end")


# --------------------------------------------------------------------------------------
# what an attacker's review found


@pytest.mark.parametrize(
    "anchor",
    ["api_key=", "?key=", "-----BEGIN PRIVATE KEY-----", "cookie=", "x-api-key=", "sk-", "a.", "token a1", "bearer "],
)
def test_a_text_of_nothing_but_anchors_costs_time_linear_in_its_length(anchor: str) -> None:
    def cpu(size: int) -> float:
        text = anchor * (size // len(anchor)) + "://user@"  # "a.a.a…" before "://" and "@": many schemes to try
        started = time.process_time()
        redact_text(text)
        return time.process_time() - started

    small, large = min(cpu(8_000) for _ in range(3)), min(cpu(80_000) for _ in range(3))
    assert large < 30 * max(small, 0.002), f"{anchor!r}: {small:.4f}s for 8 KB, {large:.4f}s for 80 KB"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_credential_after_an_escape_in_json_text_is_masked(name: str) -> None:
    value, marker = SHAPES[name]
    for escape in ("\n", "\t", "\r"):
        line = json.dumps({"text": f"env:{escape}{value}"})
        assert marker not in redact_json_text(line)


@pytest.mark.parametrize(
    "text, secret",
    [
        ("Authorization: Key 1a2b3c4d5e6f:0123456789abcdef", "0123456789abcdef"),
        ("Authorization: SharedKey account:c2lnbmF0dXJlc2lnbmF0dXJl", "c2lnbmF0dXJlc2lnbmF0dXJl"),
        ("authorization: Token abcdefghijklmnopqrstu", "abcdefghijklmnopqrstu"),
        ("Set-Cookie: session=s3cr3tv4lu3; Path=/", "s3cr3tv4lu3"),
        ("redis://:hunter2hunter2@cache.internal:6379/0", "hunter2hunter2"),
        ("x-portkey-virtual-key: vk-0123456789abcdef", "vk-0123456789abcdef"),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQdGBGAbCdEf0123\n-----END PGP PRIVATE KEY BLOCK-----", "lQdGBG"),
        ("token eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.", "eyJzdWIiOiJhZG1pbiJ9"),
    ],
)
def test_shapes_the_review_found_slipping_through_are_masked(text: str, secret: str) -> None:
    assert secret not in redact_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "self.api_key = api_key",
        "password=None, then client_secret: settings.CLIENT_SECRET",
        "The secret: tell nobody. max_token=4096, cookie: none",
    ],
)
def test_code_in_a_models_reasoning_is_no_credential_to_the_cache(text: str) -> None:
    assert not holds_credential(text)  # masked in the log all the same, but kept in the cache
    assert holds_credential(text + " " + SHAPES["openai"][0])


def test_a_line_in_mitmdumps_output_is_masked_then_bounded(caplog: pytest.LogCaptureFixture) -> None:
    from llm_reasoning_proxy.shared.limits import MAX_OUTPUT_LINE_CHARS
    from llm_reasoning_proxy.shared.redact import masked_logger

    key = planted("sk-proj-", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6")
    head = "llm 400: function "
    function = "f" * (MAX_OUTPUT_LINE_CHARS - len(head) - len(", key ") - 10)  # the cut falls inside the key
    with caplog.at_level("WARNING"):
        masked_logger("llm_reasoning_proxy.test").warning("llm 400: function %s, key %s %s", function, key, "t" * 200)
    (message,) = [record.getMessage() for record in caplog.records]
    assert len(message) < MAX_OUTPUT_LINE_CHARS + 64 and "sk-proj-A" not in message and "[cut: " in message


def test_a_flow_comment_is_masked_then_bounded() -> None:
    from llm_reasoning_proxy.hooks.annotate import add_comment
    from llm_reasoning_proxy.shared.limits import MAX_OUTPUT_LINE_CHARS
    from mitmproxy.test import tflow

    flow = tflow.tflow()
    add_comment(flow, "x" * (MAX_OUTPUT_LINE_CHARS * 10))
    assert MAX_OUTPUT_LINE_CHARS < len(flow.comment) < MAX_OUTPUT_LINE_CHARS + 64


def test_offline_diff_of_a_body_orjson_refuses_is_pretty_printed_too() -> None:
    from llm_reasoning_proxy.offline.check import request_diff

    before = {"messages": [{"role": "user", "content": "\ud800"}]}
    after = {"messages": [{"role": "user", "content": "\ud800", "reasoning_opaque": "sig"}]}
    diff = request_diff(before, after)
    assert diff.startswith("--- as sent\n+++ repaired\n")
    assert '+      "reasoning_opaque": "sig"\n' in diff


def test_a_presigned_aws_url_loses_its_signature_and_credentials() -> None:
    url = (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20260101%2Fus-east-1%2Fbedrock%2Faws4_request"
        "&X-Amz-Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024&X-Amz-Security-Token=FQoGZX"
    )
    cleaned = redact_url(url)
    assert "AKIAIOSFODNN7EXAMPLE" not in cleaned and "fe5f80f77d5f" not in cleaned and "FQoGZX" not in cleaned
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in cleaned
