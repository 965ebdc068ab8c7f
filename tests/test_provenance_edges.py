"""Edge cases of the removal of foreign reasoning values, each found by a review: what must never be removed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.answer.keep import remember_issuer
from llm_reasoning_proxy.answer.provenance import Origin, foreign_lookup, record_origins, value_digest
from llm_reasoning_proxy.cache import CacheLimits, MemoryStore
from llm_reasoning_proxy.cache.sqlite_store import SQLiteStore
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.wire.chat_completions.format import ChatCompletions
from mitmproxy import http
from mitmproxy.test import tflow, tutils

from tests.support.addon_context import addon_context
from tests.support.planted import planted
from tests.support.scope import request_scope

SCOPE = "api.example.com:443|account-a"
MINE = Origin(SCOPE, "model-y")
FROM_X = Origin(SCOPE, "model-x")


@pytest.fixture
def addons(tmp_path: Path) -> Iterator[tuple[Any, Any, Any]]:
    config, repair, capture, _explain = make_addons()[:4]
    with addon_context(config, repair, capture) as tctx:
        tctx.configure(config, llm_cache="memory", llm_log=str(tmp_path / "events.jsonl"))
        yield config, repair, capture


# --- a credential that rotates names no account: a new token is not another account ----------------------------

VERTEX_MODEL = "gemini-3-pro-preview"
VERTEX_PATH = f"/v1/projects/demo/locations/global/publishers/google/models/{VERTEX_MODEL}:generateContent"


def vertex_flow(token: str, doc: dict[str, Any]) -> http.HTTPFlow:
    headers = http.Headers(content_type="application/json", authorization=f"Bearer {token}")
    request = tutils.treq(method=b"POST", path=VERTEX_PATH.encode(), content=json.dumps(doc).encode(), headers=headers)
    return tflow.tflow(req=request)


def test_a_refreshed_oauth_token_does_not_make_the_clients_own_signatures_foreign(addons) -> None:
    """Vertex AI clients refresh their Google OAuth access token every hour. The proxy cannot read an account off
    it (it says so: "names no account the proxy can read"), so the signature Vertex issued before the refresh is
    not known to be foreign: it must go on as the client sent it (Vertex takes it; a placeholder is degraded)."""
    config, repair, _ = addons
    before, after = (planted("ya29.", f"a0AfB_token{n}abcdefghijklmnop") for n in range(2))
    contents = [
        {"role": "user", "parts": [{"text": "list the files"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "SIG-VERTEX"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"result": "a.txt"}}}]},
    ]
    issued_under = vertex_flow(before, {"contents": contents[:1]})
    repair.request(issued_under)  # the request that the signature was the answer to: its scope, its model
    record = ReasoningRecord(
        wire_format="gemini_native", tool_calls=[ToolCallRef(name="ls", fields={"thoughtSignature": "SIG-VERTEX"})]
    )
    from llm_reasoning_proxy import wire as formats

    origin = Origin.of(issued_under.metadata["llm"])
    remember_issuer(config.store, origin, record, formats.by_name("gemini_native"))

    flow = vertex_flow(after, {"contents": contents})
    sent = flow.request.raw_content
    repair.request(flow)
    assert flow.request.raw_content == sent, flow.comment


def test_only_accounts_read_off_both_credentials_are_known_to_differ() -> None:
    """Two API keys may be one account, and a token that rotates names none: only two credentials that name their
    accounts (Copilot tokens) can tell the proxy a value went to another account."""
    store = MemoryStore(CacheLimits(max_age=3600, max_entries=1000))
    record_origins(store, Origin("api.example.com:443|account-a", "model-y", named=True), ["V"])
    assert foreign_lookup(store, Origin("api.example.com:443|account-b", "model-y", named=True))(["V"]) == {
        "V": "issued to another account"
    }
    assert foreign_lookup(store, Origin("api.example.com:443|key-b", "model-y"))(["V"]) == {}
    record_origins(store, Origin("api.example.com:443|key-a", "model-y"), ["W"])
    assert foreign_lookup(store, Origin("api.example.com:443|key-b", "model-y"))(["W"]) == {}
    assert foreign_lookup(store, Origin("api.example.com:443|account-b", "model-y", named=True))(["W"]) == {}
    # the model and the host still count
    assert foreign_lookup(store, Origin("api.example.com:443|key-b", "model-x"))(["V"]) == {
        "V": "issued for model model-y, not model-x"
    }


# --- chat: the tool call a removal concerns ---------------------------------------------------------------------


def test_chat_names_the_call_whose_signature_was_removed() -> None:
    store = MemoryStore(CacheLimits(max_age=3600, max_entries=1000))
    record_origins(store, FROM_X, ["TS-B"])
    calls = [
        {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {
            "id": "call_b",
            "type": "function",
            "function": {"name": "g", "arguments": "{}"},
            "extra_content": {"google": {"thought_signature": "TS-B"}},
        },
    ]
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_a", "content": "1"},
        {"role": "tool", "tool_call_id": "call_b", "content": "2"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "q2"},
    ]
    actions, _ = ChatCompletions().remove_foreign({"messages": messages}, foreign_lookup(store, MINE))
    assert [(a.fields, a.tool_call_id) for a in actions] == [(["tool_calls[1].extra_content"], "call_b")]


# --- stores -----------------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_origins_age_out_even_once_looked_up(kind: str, tmp_path: Path) -> None:
    """SQLite remembered what it had read and handed it out past the age limit (the memory store and Redis don't)."""
    clock = Clock()
    limits = CacheLimits(max_age=100, max_entries=1000)
    store = MemoryStore(limits, clock=clock) if kind == "memory" else SQLiteStore(tmp_path / "c.db", limits, clock)
    store.put_origins(FROM_X.encode(), ["d"])
    assert store.get_origins(["d"]) == {"d": {FROM_X.encode()}}
    clock.now += 50
    store.put_origins(MINE.encode(), ["d"])
    assert store.get_origins(["d"]) == {"d": {FROM_X.encode(), MINE.encode()}}
    clock.now += 60
    assert store.get_origins(["d"]) == {"d": {MINE.encode()}}
    clock.now += 60
    assert store.get_origins(["d"]) == {}
    store.close()


def test_one_answer_cannot_flush_every_origin_the_proxy_knows() -> None:
    """An answer is one record, however many signed values it carries (up to 16 MiB of them), but each value was
    one origin entry: one answer (from any host a client of the proxy sends a request to) evicted the provenance
    of every other account, so their model switches broke again."""
    store = MemoryStore(CacheLimits(max_age=3600, max_entries=1000))
    record_origins(store, MINE, ["victim"])
    flood = ReasoningRecord(
        wire_format="anthropic_messages",
        fields={"thinking_blocks": [{"type": "thinking", "thinking": "", "signature": f"s{n}"} for n in range(5000)]},
    )
    from llm_reasoning_proxy import wire as formats

    remember_issuer(store, Origin("evil.example:443|x", "m"), flood, formats.by_name("anthropic_messages"))
    assert store.get_origins([value_digest("victim")]) == {value_digest("victim"): {MINE.encode()}}


def test_request_scope_helper_is_the_capture_scope(addons) -> None:
    """(guard for the test above: the scope a repair computes is the one capture files values under)"""
    _, repair, _ = addons
    flow = vertex_flow("sk-a-key", {"contents": [{"role": "user", "parts": [{"text": "q"}]}]})
    repair.request(flow)
    assert flow.metadata["llm"]["scope"] == str(request_scope(flow.request))


# --- values nobody issues ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dummy", ["skip_thought_signature_validator", "c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="])
def test_googles_dummy_signature_is_never_foreign(addons, dummy: str) -> None:
    """Google documents dummy thought signatures that clients put on calls another model made (pipecat, LiteLLM,
    CLIProxyAPI, this proxy). Any answer that carries one (a translating gateway's, or one a client of a shared
    proxy gets from a host of its own) filed it under that answer's origin, and from then on every other
    caller's dummy was 'issued elsewhere' and removed: with llm_signature_placeholder=off the current call is left
    with no signature, which Gemini 3 refuses."""
    config, repair, _ = addons
    from llm_reasoning_proxy import wire as formats

    record = ReasoningRecord(
        wire_format="gemini_native", tool_calls=[ToolCallRef(name="ls", fields={"thoughtSignature": dummy})]
    )
    remember_issuer(
        config.store, {"scope": "evil.example:443|x", "request_model": "m"}, record, formats.by_name("gemini_native")
    )
    contents = [
        {"role": "user", "parts": [{"text": "list the files"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": dummy}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"result": "a.txt"}}}]},
    ]
    config.settings = config.settings.model_copy(update={"signature_placeholder": "off"})
    flow = vertex_flow("sk-a-key", {"contents": contents})
    sent = flow.request.raw_content
    repair.request(flow)
    assert flow.request.raw_content == sent, flow.comment
