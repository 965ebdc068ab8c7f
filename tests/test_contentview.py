"""The "LLM" content view, asked through mitmproxy's own registry (as its console, mitmweb and mitmdump ask it)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest
from llm_reasoning_proxy.hooks import contentview
from llm_reasoning_proxy.hooks.contentview import VIEW_NAME, LlmContentView
from llm_reasoning_proxy.shared import compat
from llm_reasoning_proxy.shared.flow_meta import META
from llm_reasoning_proxy.transcripts import flows as transcript_flows
from mitmproxy import contentviews, http
from mitmproxy.test import taddons, tflow, tutils

from tests.support.addon_context import addon_context

NEW_API = hasattr(contentviews, "prettify_message")  # mitmproxy 12
CALL = {"id": "call_1", "type": "function", "function": {"name": "list_directory", "arguments": '{"path": "."}'}}
CLIENT_SENT = {
    "model": "gemini-3-pro-preview",
    "messages": [
        {"role": "user", "content": "What is in this directory?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},  # the client dropped reasoning_opaque
        {"role": "tool", "tool_call_id": "call_1", "content": "README.md addon tests"},
    ],
}
OPAQUE = "c2lnbmF0dXJl" * 20
DEEPSEEK_TEXT = "The reasoning_content in the thinking mode must be passed back to the API."


def chat_request(body: dict) -> http.Request:
    return tutils.treq(
        method=b"POST",
        host="api.example.com",
        path=b"/v1/chat/completions",
        headers=http.Headers(content_type="application/json"),
        content=json.dumps(body).encode(),
    )


def repaired_flow() -> http.HTTPFlow:
    """A flow as the proxy records it: the repaired request, the client's body kept in the metadata."""
    sent = copy.deepcopy(CLIENT_SENT)
    sent["messages"][1]["reasoning_opaque"] = OPAQUE
    flow = tflow.tflow(req=chat_request(sent), resp=False)
    flow.metadata[META] = {"format": "chat_completions", "original_request": json.dumps(CLIENT_SENT).encode()}
    return flow


def sse(*chunks: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def delta(**fields: object) -> dict:
    return {"id": "c1", "object": "chat.completion.chunk", "model": "deepseek-reasoner", "choices": [
        {"index": 0, "delta": fields, "finish_reason": None}
    ]}  # fmt: skip


STREAM = sse(
    delta(role="assistant", reasoning_content="The user greets; "),
    delta(reasoning_content="answer politely."),
    delta(content="Hello"),
    delta(content=" world"),
    {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
)


def streamed_flow(*, metadata: bool = True) -> http.HTTPFlow:
    request = chat_request(
        {"model": "deepseek-reasoner", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    response = tutils.tresp(headers=http.Headers(content_type="text/event-stream"), content=STREAM)
    flow = tflow.tflow(req=request, resp=response)
    if metadata:
        flow.metadata[META] = {"format": "chat_completions"}
    return flow


def error_flow() -> http.HTTPFlow:
    body = json.dumps({"error": {"message": DEEPSEEK_TEXT, "type": "invalid_request_error"}}).encode()
    response = tutils.tresp(status_code=400, headers=http.Headers(content_type="application/json"), content=body)
    flow = tflow.tflow(req=chat_request(CLIENT_SENT), resp=response)
    flow.metadata[META] = {"format": "chat_completions"}
    return flow


def other_flow(path: bytes = b"/api/things", method: bytes = b"POST") -> http.HTTPFlow:
    body = json.dumps({"model": "x", "messages": [{"role": "user", "content": "not an LLM route"}]}).encode()
    request = tutils.treq(method=method, path=path, headers=http.Headers(content_type="application/json"), content=body)
    response = tutils.tresp(headers=http.Headers(content_type="application/json"), content=b'{"ok": true}')
    return tflow.tflow(req=request, resp=response)


@pytest.fixture
def view() -> Iterator[taddons.context]:
    """The addon loaded as mitmproxy loads it, and unloaded after (so the view is gone again)."""
    addon = LlmContentView()
    with addon_context(addon) as tctx:
        try:
            yield tctx
        finally:
            tctx.master.addons.remove(addon)


def shown(message: http.Message, flow: http.HTTPFlow, view_name: str = "auto") -> tuple[str, str]:
    """(the name of the view mitmproxy picked, the text it shows), through mitmproxy's registry."""
    if NEW_API:
        result = contentviews.prettify_message(message, flow, view_name=view_name)
        return result.view_name or "", result.text
    picked = contentviews.get(view_name)
    if view_name == "auto":  # what the Auto view does: the highest render_priority
        data, ctype = message.content, message.headers.get("content-type", "").split(";")[0]
        picked = max((v.render_priority(data, content_type=ctype, flow=flow, http_message=message), v)
                     for v in contentviews.views)[1]  # fmt: skip
    description, lines, error = contentviews.get_message_content_view(view_name, message, flow)
    assert error is None, error
    return picked.name, "\n".join([description, *("".join(text for _, text in line) for line in lines)])


def registered() -> list[str]:
    names = list(contentviews.registry) if NEW_API else [v.name for v in contentviews.views]
    return [name for name in names if name.lower() == VIEW_NAME.lower()]


def test_a_repaired_request_shows_the_conversation_by_role_with_what_was_restored(view: taddons.context) -> None:
    flow = repaired_flow()
    name, text = shown(flow.request, flow)
    assert name == VIEW_NAME
    assert "user  messages[0]" in text and "assistant  messages[1]" in text and "tool  messages[2]" in text
    assert "[restored] reasoning_opaque of call_1" in text and "the proxy restored 1" in text
    assert "What is in this directory?" in text and "tool call list_directory" in text
    assert OPAQUE not in text  # an opaque value is shown as its length and hash


def test_a_streamed_answer_is_shown_assembled(view: taddons.context) -> None:
    for flow in (streamed_flow(), streamed_flow(metadata=False)):  # recorded by the proxy, or by a plain mitmdump
        name, text = shown(flow.response, flow)
        assert name == VIEW_NAME
        assert "Hello world" in text and "The user greets; answer politely." in text
        assert "data:" not in text and "chat.completion.chunk" not in text


def test_an_error_shows_its_diagnosis(view: taddons.context) -> None:
    flow = error_flow()
    name, text = shown(flow.response, flow)
    assert name == VIEW_NAME
    assert "rule: reasoning_content_missing" in text and "HTTP 400" in text and DEEPSEEK_TEXT in text


@pytest.mark.parametrize(
    "flow", [other_flow(), other_flow(b"/v1/chat/completions", b"GET"), other_flow(b"/index.html", b"GET")]
)
def test_other_traffic_keeps_mitmproxys_views(view: taddons.context, flow: http.HTTPFlow) -> None:
    for message in (flow.request, flow.response):
        name, _ = shown(message, flow)
        assert name != VIEW_NAME


def test_other_traffic_is_judged_by_method_and_path_alone(view: taddons.context, monkeypatch) -> None:
    def no_body(*args: object) -> object:
        raise AssertionError("a body was looked at")

    monkeypatch.setattr(transcript_flows.formats, "claim", no_body)
    monkeypatch.setattr(transcript_flows, "message_body", no_body)
    seen = (repaired_flow(), streamed_flow())  # the proxy saw them pass: known by their metadata
    for flow in (other_flow(), other_flow(b"/index.html", b"GET"), *seen):
        for message in (flow.request, flow.response):
            if message is not None:  # asked directly: through mitmproxy, a failure would be swallowed
                assert contentview.shows(message.content or b"", flow, message) == (flow in seen)


def test_the_view_chosen_by_name_says_why_it_shows_no_conversation(view: taddons.context) -> None:
    flow = other_flow()
    name, text = shown(flow.response, flow, VIEW_NAME)
    assert name == VIEW_NAME and "not LLM traffic" in text and '{"ok": true}' in text


def test_a_failing_view_leaves_mitmproxys_display_working(view: taddons.context, monkeypatch) -> None:
    def broken(*args: object) -> object:
        raise RuntimeError("transcriber bug")

    flow = streamed_flow()
    monkeypatch.setattr(contentview, "render", broken)
    name, text = shown(flow.response, flow)
    assert "LLM view failed: RuntimeError: transcriber bug" in text and "data: " in text  # and the body, as text
    monkeypatch.setattr(contentview, "shows", broken)
    view.master.addons.get("llmcontentview").load(None)  # registered anew, with the broken check
    name, text = shown(flow.response, flow)
    assert name != VIEW_NAME and "data: " in text  # mitmproxy's own view, for this flow and every other


def test_the_view_is_registered_once_and_taken_out_on_each_reload() -> None:
    with addon_context() as tctx:
        for _ in range(2):  # a reload: the old addon's done, then the new one's load
            addon = LlmContentView()
            tctx.master.addons.register(addon)
            assert len(registered()) == 1
            flow = streamed_flow()
            assert shown(flow.response, flow)[0] == VIEW_NAME
            tctx.master.addons.remove(addon)
            assert registered() == []
            assert shown(flow.response, flow)[0] != VIEW_NAME


def test_a_view_left_by_an_earlier_load_is_replaced_not_duplicated() -> None:
    first = compat.add_contentview(VIEW_NAME, contentview.show, contentview.shows)  # its done never ran
    try:
        second = compat.add_contentview(VIEW_NAME, contentview.show, contentview.shows)
        assert len(registered()) == 1
        compat.remove_contentview(first)  # late: it is no longer the one registered
        assert len(registered()) == 1
        compat.remove_contentview(second)
        assert registered() == []
    finally:
        compat.remove_contentview(first)
