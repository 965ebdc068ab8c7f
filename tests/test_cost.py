"""An exchange's cost from its usage: each wire format's counts mapped as genai-prices counts them."""

from __future__ import annotations

import copy
import datetime
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import genai_prices
import pytest
from genai_prices import data_snapshot
from llm_reasoning_proxy.shared import cost as cost_module
from llm_reasoning_proxy.shared.cost import exchange_cost
from llm_reasoning_proxy.transcripts import read_answer
from llm_reasoning_proxy.wire.conversation import Usage

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
WHEN = datetime.datetime(2025, 11, 1, tzinfo=datetime.timezone.utc)


def with_usage(doc: dict, key: str, **counts) -> dict:
    """A captured answer with some of its usage counts changed: the captures' prompt caches were mostly cold."""
    changed = copy.deepcopy(doc)
    for path, value in counts.items():
        place = changed[key]
        *parents, last = path.split("__")
        for parent in parents:
            place = place.setdefault(parent, {})
        place[last] = value
    return changed


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


ANTHROPIC = load("anthropic/pydanticai_claude45_redacted_thinking_roundtrip_1_response_200.json")
BEDROCK = load("bedrock/pydanticai_claude37_converse_reasoning_tool_use_roundtrip_1_response_200.json")
RESPONSES = load("openai-responses/pydanticai_gpt5_reasoning_function_call_roundtrip_1_response_200.json")
GEMINI = load("gemini/pydanticai_gemini3pro_dummy_signature_context_engineering_response_200.json")
DEEPSEEK = load("deepseek/pydanticai_deepseek_reasoning_content_tool_calls_roundtrip_2_response_200.json")
BEDROCK_URL = (
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-3-7-sonnet-20250219-v1:0/converse"
)

# (wire format, answer, API URL, genai-prices' flavour of that API, model when the answer names none)
CASES = {
    "anthropic": ("anthropic_messages", ANTHROPIC, "https://api.anthropic.com/v1/messages", "default", None),
    "anthropic cached": (
        "anthropic_messages",
        with_usage(
            ANTHROPIC,
            "usage",
            cache_read_input_tokens=2000,
            cache_creation_input_tokens=300,
            cache_creation__ephemeral_5m_input_tokens=300,
        ),
        "https://api.anthropic.com/v1/messages",
        "default",
        None,
    ),
    "bedrock": ("bedrock_converse", BEDROCK, BEDROCK_URL, "default", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"),
    "bedrock cached": (
        "bedrock_converse",
        with_usage(BEDROCK, "usage", cacheReadInputTokens=1500, cacheWriteInputTokens=200),
        BEDROCK_URL,
        "default",
        "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
    ),
    "responses": ("openai_responses", RESPONSES, "https://api.openai.com/v1/responses", "responses", None),
    "responses cached": (
        "openai_responses",
        with_usage(RESPONSES, "usage", input_tokens_details__cached_tokens=300),
        "https://api.openai.com/v1/responses",
        "responses",
        None,
    ),
    "chat, DeepSeek's cache": ("chat_completions", DEEPSEEK, "https://api.deepseek.com/chat/completions", "chat", None),
    "gemini": (
        "gemini_native",
        GEMINI,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:generateContent",
        "default",
        None,
    ),
    "gemini cached": (
        "gemini_native",
        with_usage(GEMINI, "usageMetadata", cachedContentTokenCount=64),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:generateContent",
        "default",
        None,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_wire_formats_usage_is_priced_as_genai_prices_reads_that_providers_answer(case: str) -> None:
    """genai-prices reads a provider's answer with its own extractor for that API: our usage, read by each wire
    format's transcriber, must come to the same price, cache reads and writes and reasoning included."""
    wire_format, doc, url, flavour, model = CASES[case]
    answer = read_answer(wire_format, json.dumps(doc).encode(), sse=False)
    model = answer.model or model
    found = exchange_cost(answer.usage, model, wire_format=wire_format, api_url=url, when=WHEN)
    extracted = genai_prices.extract_usage(doc, provider_api_url=url, api_flavor=flavour)
    if answer.usage.cache_read and not extracted.usage.cache_read_tokens:
        pytest.skip("this genai-prices' extractor reads no cache counts here (the Bedrock one of 0.0.60 and 0.0.61)")
    expected = genai_prices.calc_price(extracted.usage, model, provider_api_url=url, genai_request_timestamp=WHEN)
    assert found is not None and found.usd == expected.total_price > 0
    assert (found.provider, found.model) == (expected.provider.id, expected.model.id)
    assert found.source == f"genai-prices {genai_prices.__version__}"


def test_anthropic_cache_reads_and_writes_are_priced_beside_the_input() -> None:
    """Claude Sonnet 4.5 at Anthropic's published rates per million tokens: $3 input, $0.30 cache read, $3.75
    cache write (5 minutes), $15 output. `input_tokens` is the uncached rest, so each token is priced once."""
    usage = Usage(input=1000, cache_read=2000, cache_write=300, output=500, cache_in_input=False)
    found = exchange_cost(
        usage, "claude-sonnet-4-5-20250929", wire_format="anthropic_messages", api_url="https://api.anthropic.com"
    )
    assert found is not None
    assert found.usd == Decimal("0.003") + Decimal("0.0006") + Decimal("0.001125") + Decimal("0.0075")
    assert (found.provider, found.model) == ("anthropic", "claude-sonnet-4-5")


def test_bedrock_cache_reads_and_writes_are_priced_beside_the_input() -> None:
    """Claude 3.7 Sonnet on Bedrock: $3 input, $0.30 cache read, $3.75 cache write, $15 output per million
    tokens; Converse's `inputTokens` leaves the cached tokens out, as Anthropic's `input_tokens` does."""
    usage = Usage(input=539, cache_read=1500, cache_write=200, output=106, cache_in_input=False)
    found = exchange_cost(usage, "us.anthropic.claude-3-7-sonnet-20250219-v1:0", wire_format="bedrock_converse",
                          api_url=BEDROCK_URL, when=WHEN)  # fmt: skip
    assert found is not None and found.provider == "aws"
    assert found.usd == Decimal("0.001617") + Decimal("0.00045") + Decimal("0.00075") + Decimal("0.00159")


def test_a_providers_own_figure_for_an_answer_with_cached_input_and_reasoning() -> None:
    """xAI puts its own cost in the answer (`cost_in_usd_ticks`, 3,893,500 of them: $0.00038935 in tenths of a
    billionth of a dollar) for 197 input tokens, 128 of them cached, and 111 output, 110 of them reasoning."""
    capture = FIXTURES / "xai" / "vercel_grok43_reasoning_summary_store_true_response.json"
    answer = read_answer("openai_responses", capture.read_bytes(), sse=False)
    assert answer.usage.cache_read == 128 and answer.usage.reasoning == 110
    found = exchange_cost(answer.usage, answer.model, wire_format="openai_responses", api_url="https://api.x.ai/v1")
    ticks = json.loads(capture.read_text())["usage"]["cost_in_usd_ticks"]
    assert found is not None and found.usd == Decimal(ticks) / 10**10


def test_gemini_thinking_is_priced_as_output_beside_the_answers_tokens() -> None:
    """Gemini's `thoughtsTokenCount` is beside `candidatesTokenCount`; chat completions count reasoning inside."""
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:generateContent"
    thinking = Usage(input=107, output=23, reasoning=123)
    found = exchange_cost(thinking, "gemini-3-pro-preview", wire_format="gemini_native", api_url=url)
    inside = Usage(input=107, output=23 + 123, reasoning=123)
    assert found == exchange_cost(inside, "gemini-3-pro-preview", wire_format="chat_completions", api_url=url)
    assert found is not None and found.usd == Decimal("0.001966")  # $2 input, $12 output per million tokens


@pytest.mark.parametrize(
    "usage, model, url",
    [
        (Usage(), "gpt-5", "https://api.openai.com/v1/chat/completions"),  # no usage reported
        (Usage(input=10), "gpt-5", "https://api.openai.com/v1/chat/completions"),  # cut short: no output count
        (Usage(input=10, output=5), None, "https://api.openai.com/v1/chat/completions"),
        (Usage(input=10, output=5), "no-such-model-anywhere", "https://api.openai.com/v1/chat/completions"),
        (Usage(input=10, output=5), "gpt-5", "http://127.0.0.1:8080/v1/chat/completions"),  # a local server
        (Usage(input=10, output=5), "gpt-5", "https://llm-gateway.example.com/v1/chat/completions"),
        (Usage(input=10, cache_read=20, output=5), "gpt-5", "https://api.openai.com/v1/chat/completions"),
    ],
)
def test_what_cannot_be_priced_is_unknown_never_zero(usage: Usage, model: str | None, url: str) -> None:
    assert exchange_cost(usage, model, wire_format="chat_completions", api_url=url) is None


def test_a_gateway_is_priced_only_as_genai_prices_prices_it() -> None:
    """GitHub Copilot serves Claude at its own rates: never Anthropic's, by the model's name."""
    usage = Usage(input=1000, output=100)
    url = "https://api.githubcopilot.com/chat/completions"
    for model in ("claude-sonnet-4", "claude-sonnet-4.6", "gpt-4.1"):
        found = exchange_cost(usage, model, wire_format="chat_completions", api_url=url)
        assert found is None or found.provider == "github-copilot"
    by_name = exchange_cost(usage, "claude-sonnet-4", wire_format="chat_completions", api_url=None)
    assert by_name is not None and by_name.provider == "anthropic"


def test_a_key_in_the_query_is_neither_matched_nor_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str | None] = []
    lookup = cost_module._remembered_lookup
    monkeypatch.setattr(cost_module, "_remembered_lookup", lambda url, model: asked.append(url) or lookup(url, model))
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent"
    usage = Usage(input=1, output=1)
    found = exchange_cost(usage, "gemini-2.5-pro", wire_format="gemini_native", api_url=url + "?key=AIzaSECRET")
    assert found is not None and asked == [url]


def test_lookups_are_remembered_within_a_bound_and_genai_prices_own_memo_does_not_grow() -> None:
    shared = data_snapshot.get_snapshot()
    before = len(shared._lookup_cache)
    for n in range(1000):  # a client that names a new model on every request
        exchange_cost(Usage(input=1, output=1), f"gpt-5-{n}", wire_format="chat_completions", api_url=None)
    assert cost_module._remembered_lookup.cache_info().currsize <= 256
    assert len(shared._lookup_cache) == before


def test_genai_prices_is_imported_on_the_first_cost_and_nothing_goes_over_the_network() -> None:
    script = """
import socket, sys, threading
def refuse(*args, **kwargs):
    raise AssertionError("a connection was attempted")
socket.socket.connect = socket.socket.connect_ex = refuse
socket.create_connection = socket.getaddrinfo = refuse
from llm_reasoning_proxy.shared.cost import exchange_cost
from llm_reasoning_proxy.wire.conversation import Usage
assert "genai_prices" not in sys.modules
found = exchange_cost(Usage(input=1000, output=10), "gpt-5", wire_format="chat_completions",
                      api_url="https://api.openai.com/v1/chat/completions")
assert found is not None and "genai_prices" in sys.modules
assert threading.active_count() == 1, threading.enumerate()  # no price updater started
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.stdout.strip() == "ok", done.stderr
