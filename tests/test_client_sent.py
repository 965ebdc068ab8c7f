"""The client's request body on a flow a proxy repaired live: one reading for the offline check and the export."""

from __future__ import annotations

import gzip
import json

import pytest
from llm_reasoning_proxy.offline.check import check_flows
from llm_reasoning_proxy.offline.fixtures import build_fixtures
from llm_reasoning_proxy.shared.flow_meta import META
from llm_reasoning_proxy.transcripts.client_sent import client_sent_body, repaired_live
from llm_reasoning_proxy.wire import content_encoding as decoding
from mitmproxy import http
from mitmproxy.test import tflow, tutils

SENT = {"model": "m", "messages": [{"role": "user", "content": "what the client sent"}]}
REPAIRED = {"model": "m", "messages": [{"role": "user", "content": "what the proxy sent on"}]}


def repaired_flow(kept: object, *, content_encoding: str | None = None) -> http.HTTPFlow:
    headers = {"content_type": "application/json"}
    if content_encoding is not None:
        headers["content_encoding"] = content_encoding
    request = tutils.treq(
        method=b"POST", host="api.example.com", path=b"/v1/chat/completions", headers=http.Headers(**headers)
    )
    request.content = json.dumps(REPAIRED).encode()  # mitmproxy encodes it as the header says
    flow = tflow.tflow(req=request)
    if kept is not None:
        flow.metadata[META] = {"original_request": kept}
    return flow


def test_no_copy_is_none_and_not_repaired_live() -> None:
    flow = repaired_flow(None)
    assert client_sent_body(flow) is None and not repaired_live(flow)
    flow.metadata[META] = {"original_request": 42}  # not a body
    assert client_sent_body(flow) is None and not repaired_live(flow)


def test_the_copy_is_taken_as_kept() -> None:
    sent = json.dumps(SENT).encode()
    flow = repaired_flow(sent, content_encoding="gzip")
    assert client_sent_body(flow) == sent and repaired_live(flow)


def test_a_copy_kept_as_text_is_its_bytes() -> None:
    sent = json.dumps(SENT, ensure_ascii=False)
    assert client_sent_body(repaired_flow(sent)) == sent.encode()


def test_a_copy_still_encoded_is_decoded_and_one_that_does_not_decode_is_taken_as_it_is() -> None:
    sent = json.dumps(SENT).encode()
    assert client_sent_body(repaired_flow(gzip.compress(sent), content_encoding="gzip")) == sent
    assert client_sent_body(repaired_flow(b"not gzip", content_encoding="gzip")) == b"not gzip"


def test_a_copy_that_decodes_past_the_bound_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("llm_reasoning_proxy.transcripts.client_sent.MAX_DECODED_BYTES", 10)
    flow = repaired_flow(gzip.compress(json.dumps(SENT).encode()), content_encoding="gzip")
    with pytest.raises(decoding.DecodedTooLarge):
        client_sent_body(flow)


@pytest.mark.parametrize("spelling", ["bytes", "text", "gzip"])
def test_the_offline_check_and_the_export_read_the_same_copy(spelling: str) -> None:
    sent = json.dumps(SENT).encode()
    kept = {"bytes": sent, "text": sent.decode(), "gzip": gzip.compress(sent)}[spelling]
    flow = repaired_flow(kept, content_encoding="gzip" if spelling == "gzip" else None)
    (check,) = check_flows([flow])
    (fixture,) = build_fixtures([flow], placeholders=False)
    assert check.live_repaired and fixture.repaired_live
    assert fixture.request.body == SENT
    assert check.unreadable is None and check.model == "m"


def test_the_offline_check_says_a_copy_it_cannot_decode_within_the_bound_is_unreadable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("llm_reasoning_proxy.transcripts.client_sent.MAX_DECODED_BYTES", 10)
    flow = repaired_flow(gzip.compress(json.dumps(SENT).encode()), content_encoding="gzip")
    (check,) = check_flows([flow])
    assert check.unreadable.startswith("request body decodes to more than") and check.beyond_tool
