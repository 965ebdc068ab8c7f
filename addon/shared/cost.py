"""What one exchange cost, from the token usage its answer reported and the prices genai-prices keeps.

genai-prices (pydantic/genai-prices) is a maintained price table with its calculation: cached input, cache writes
and reasoning tokens priced as each provider prices them, and prices by the date they held. Only the table shipped
in its wheel is read: its `UpdatePrices` (the one part that fetches over the network) is never started, so asking
for a cost never leaves the machine. It is imported on the first cost asked for, not with the addon.

A cost is known or it is None: a model or a provider genai-prices does not price, or an answer without usage, is
"unknown" to whoever shows it, never zero.
"""

from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass
from decimal import Decimal
from importlib import metadata
from typing import Any

from ..wire.conversation import Usage
from .limits import MAX_NAME_CHARS

# Gemini reports its thinking (`thoughtsTokenCount`) beside its answer's tokens (`candidatesTokenCount`), not in
# them, and bills both as output: genai-prices' Google extractor adds them. Everywhere else reasoning is part of
# the output count already.
_REASONING_BESIDE_OUTPUT = frozenset({"gemini_native"})
# Past these a model name or an API URL is no real one: such an exchange is left unpriced rather than remembered.
_MAX_URL_CHARS = 2048
# Lookups remembered, by API URL and model name: a proxy sees a handful of each, and a client that sends a new
# model name on every request costs at most this many small entries (two strings and two references each).
_REMEMBERED_LOOKUPS = 256


@dataclass(frozen=True, slots=True)
class Cost:
    """An exchange's price in US dollars, and what priced it.

    `usd` is a Decimal, as genai-prices computes it from per-million-token prices: the sum of thousands of turns
    stays exact to the last digit. A metric or a span takes `float(cost.usd)`."""

    usd: Decimal
    model: str  # the model genai-prices matched ("claude-sonnet-4-5" for "claude-sonnet-4-5-20250929")
    provider: str  # the provider genai-prices matched ("anthropic", "aws", "google", "openai")
    source: str  # "genai-prices 0.2.3": the price table's release


def exchange_cost(
    usage: Usage,
    model: str | None,
    *,
    wire_format: str,
    api_url: str | None,
    when: datetime.datetime | None = None,
) -> Cost | None:
    """What an exchange cost, or None when that is not known.

    `usage` is the answer's, as the wire format's transcriber reads it (whether its input holds the cached tokens
    too, `cache_in_input`, included), and `model` the model that answered (the answer's, else the request's). `api_url` is the URL the request went to: genai-prices picks the provider by
    it, so a provider it does not know (a gateway, a local server) is unknown even for a model it prices; its
    query is never read (a Gemini key may be in it). Without a URL the provider is picked by the model name.
    `when` is the time of the request, for prices that changed (now when not given).

    None for: no usage, an input or output count missing, a model or provider genai-prices does not price, usage
    genai-prices refuses (cached tokens above the input, say), or genai-prices not installed."""
    if not usage or usage.input is None or usage.output is None or not model:
        return None
    if api_url is not None:
        api_url = api_url.split("?", 1)[0].split("#", 1)[0]
    if len(model) > MAX_NAME_CHARS or (api_url is not None and len(api_url) > _MAX_URL_CHARS):
        return None
    found = _remembered_lookup(api_url, model)
    if found is None:
        return None
    genai_prices, provider, priced_model = found
    try:
        calculation = priced_model.calc_price(
            _genai_usage(genai_prices.Usage, usage, wire_format),
            provider,
            genai_request_timestamp=when or datetime.datetime.now(datetime.timezone.utc),
        )
    except ValueError:  # usage that does not add up (cached tokens above the input)
        return None
    return Cost(
        usd=calculation.total_price,
        model=priced_model.id,
        provider=provider.id,
        source=f"genai-prices {genai_prices.__version__}",
    )


def price_source() -> str | None:
    """The price table costs come from ("genai-prices 0.2.3"), read without importing it; None if not installed."""
    try:
        return f"genai-prices {metadata.version('genai-prices')}"
    except metadata.PackageNotFoundError:
        return None


def _lookup(api_url: str | None, model: str) -> tuple[Any, Any, Any] | None:
    """genai-prices, with the provider and the model it prices `model` by; None when it prices none."""
    try:
        import genai_prices
        from genai_prices.data import providers
        from genai_prices.data_snapshot import DataSnapshot
    except ImportError:
        return None
    # A snapshot of the shipped table for this one lookup: genai-prices' shared snapshot remembers every model name
    # and URL it was asked about, without a bound; here the memo around this function is the bound.
    snapshot = DataSnapshot(providers=providers, from_auto_update=False)
    try:
        provider, priced_model = snapshot.find_provider_model(model, None, None, api_url)
    except LookupError:
        return None
    return genai_prices, provider, priced_model


_remembered_lookup = functools.lru_cache(maxsize=_REMEMBERED_LOOKUPS)(_lookup)


def _genai_usage(usage_type: type, usage: Usage, wire_format: str) -> Any:
    """Our usage as genai-prices counts it: cache reads and writes inside the input, reasoning inside the output.

    Anthropic's `input_tokens` and Bedrock Converse's `inputTokens` leave the cached tokens out (their usage says
    so: `cache_in_input`); genai-prices' own extractors for those two add them in, and so does `all_input`."""
    output_tokens = usage.output or 0
    if wire_format in _REASONING_BESIDE_OUTPUT:
        output_tokens += usage.reasoning or 0
    counts = {
        "input_tokens": usage.all_input or 0,
        "cache_read_tokens": usage.cache_read or 0,
        "cache_write_tokens": usage.cache_write or 0,
        "output_tokens": output_tokens,
        # From genai-prices 0.1 a model may price reasoning apart (the rest price it as output). Where our count is
        # above the output (Copilot's top-level `reasoning_tokens`, beside it), such a model is left unpriced.
        "output_reasoning_tokens": usage.reasoning or 0,
    }
    # Before 0.1 (the releases Python < 3.12 installs) genai-prices' Usage is a dataclass of fixed fields.
    fields = getattr(usage_type, "__dataclass_fields__", None)
    if fields is not None:
        counts = {name: value for name, value in counts.items() if name in fields}
    return usage_type(**{name: value for name, value in counts.items() if value})
