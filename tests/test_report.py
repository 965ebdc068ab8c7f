"""The HTML report's pieces without a browser: what goes into the page, how turns are grouped and compared."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

from llm_reasoning_proxy.offline.report import write_report
from llm_reasoning_proxy.offline.report.page import total_text, usd_text
from llm_reasoning_proxy.offline.report.turns import curl_headers
from llm_reasoning_proxy.shared.cost import Cost, exchange_cost, price_source
from llm_reasoning_proxy.transcripts.diff import compare
from llm_reasoning_proxy.wire.conversation import Message, Part, Usage
from mitmproxy import http, io
from mitmproxy.test import tflow

ROOT = Path(__file__).resolve().parent.parent
URL = "https://api.deepseek.com/chat/completions"
SECRET = "sk-proj-" + "Q" * 48


def chat_flow(messages: list[dict], answer: dict | None = None, status: int = 200, raw: bytes | None = None):
    body = raw if raw is not None else json.dumps({"model": "deepseek-reasoner", "messages": messages}).encode()
    request = http.Request.make(
        "POST", URL, body, {"content-type": "application/json", "authorization": f"Bearer {SECRET}"}
    )
    content = json.dumps(answer or {"choices": []}).encode()
    response = http.Response.make(status, content, {"content-type": "application/json"})
    return tflow.tflow(req=request, resp=response)


def tool_answer(call_id: str, thought: str) -> dict:
    call = {"id": call_id, "type": "function", "function": {"name": "read", "arguments": "{}"}}
    message = {"role": "assistant", "content": None, "reasoning_content": thought, "tool_calls": [call]}
    return {"model": "deepseek-reasoner", "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


def history(call_id: str) -> list[dict]:
    call = {"id": call_id, "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "done"},
    ]


def page_data(page: Path) -> dict:
    text = page.read_text()
    found = re.search(r'<script id="data" type="application/json">(.*?)</script>', text, re.S)
    assert found is not None
    return json.loads(found.group(1))


def write_flows(path: Path, flows: list) -> Path:
    with path.open("wb") as handle:
        writer = io.FlowWriter(handle)
        for flow in flows:
            writer.add(flow)
    return path


def test_two_interleaved_conversations_are_told_apart_by_their_tool_calls(tmp_path: Path) -> None:
    a1 = chat_flow([{"role": "user", "content": "task A"}], tool_answer("call_a", "thinking about A"))
    b1 = chat_flow([{"role": "user", "content": "task B"}], tool_answer("call_b", "thinking about B"))
    a2 = chat_flow([{"role": "user", "content": "task A"}, *history("call_a")])
    b2 = chat_flow([{"role": "user", "content": "task B"}, *history("call_b")])
    capture = write_flows(tmp_path / "c.mitm", [a1, b1, a2, b2])
    written = write_report(capture, tmp_path / "r.html")
    assert (written.exchanges, written.conversations) == (4, 2)
    data = page_data(tmp_path / "r.html")
    assert [c["turns"] for c in data["convs"]] == [[1, 3], [2, 4]]
    second = next(t for t in data["T"] if t["n"] == 3)
    # the client dropped the reasoning turn 1's answer carried, and the proxy would put it back
    assert second["since"] == {"new": 1, "dropped": 1, "msgs": second["since"]["msgs"]}
    assert second["rep"] and not second["live"]
    marked = [p for m in second["sent"] for p in data["M"][m]["p"] if p.get("m")]
    assert marked == [{"k": "reasoning", "t": "thinking about A", "f": "reasoning_content", "m": "restored"}]


def test_secrets_are_masked_and_no_text_ends_the_data_early(tmp_path: Path) -> None:
    text = f"my key is {SECRET} </script><script>alert(1)</script> <!-- x"
    capture = write_flows(tmp_path / "c.mitm", [chat_flow([{"role": "user", "content": text}])])
    write_report(capture, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert SECRET not in page
    assert page.count("</script>") == 2  # the data's and the page script's: none from the text
    data = page_data(tmp_path / "r.html")  # the data is still one JSON document, the text in it whole
    (user,) = [data["M"][i] for i in data["T"][0]["sent"]]
    assert "</script><script>alert(1)</script> <!-- x" in user["p"][0]["t"] and "[REDACTED]" in user["p"][0]["t"]


def test_a_body_that_is_not_json_is_shown_as_such(tmp_path: Path) -> None:
    capture = write_flows(tmp_path / "c.mitm", [chat_flow([], raw=b'{"model": "x", "messages": [')])
    written = write_report(capture, tmp_path / "r.html")
    (turn,) = page_data(tmp_path / "r.html")["T"]
    assert written.exchanges == 1 and turn["unreadable"].startswith("request body is") and turn["sent"] == []


def test_a_fixture_folder_and_an_event_log_make_reports(tmp_path: Path) -> None:
    written = write_report(ROOT / "flows" / "opencode-deepseek-multistep", tmp_path / "f.html")
    assert (written.exchanges, written.conversations) == (3, 1)
    log = tmp_path / "events.jsonl"
    events = [
        {"kind": "started", "version": "0", "settings": {}},
        {"kind": "captured", "flow_id": "f1", "host": "h", "url": URL, "wire_format": "chat_completions",
         "response_id": None, "request_model": "m", "response_model": "m", "streamed": True, "complete": True,
         "stored": True, "fields": {}, "tool_calls": [{"id": "call_1", "name": "read", "fields": {
             "reasoning_content": {"length": 5, "sha256": "abc", "text": "hmm.."}}}]},
        {"kind": "diagnosed", "flow_id": "f2", "host": "h", "url": URL, "wire_format": "chat_completions",
         "status": 400, "rule": "reasoning_content_missing", "summary": "s", "problem": "missing",
         "location": "messages[1]", "advice": "turn repair on", "message": "The reasoning_content ..."},
    ]  # fmt: skip
    log.write_text("".join(json.dumps(e) + "\n" for e in events) + "not json\n")
    written = write_report(log, tmp_path / "e.html")
    data = page_data(tmp_path / "e.html")
    assert written.exchanges == 2
    first, second = sorted(data["T"], key=lambda t: t["n"])
    assert [p["k"] for i in first["ans"]["msgs"] for p in data["M"][i]["p"]] == ["tool_call", "reasoning"]
    assert second["diag"]["rule"] == "reasoning_content_missing" and second["culprit"] == "messages[1]"
    assert second["diag"]["advice"] == "turn repair on" and second["findings"] == []  # advice beside the diagnosis


def test_curl_keeps_allowlisted_headers_and_leaves_credentials_to_the_shell() -> None:
    flow = chat_flow([])
    flow.request.headers["x-api-key"] = SECRET
    flow.request.headers["cookie"] = "session=abc"
    flow.request.headers["openai-organization"] = "org-1"
    headers = dict(curl_headers(flow.request))
    assert headers == {"content-type": "application/json", "authorization": "Bearer $API_KEY", "x-api-key": "$API_KEY"}


def test_split_assistant_messages_merged_by_the_proxy_are_marked_merged() -> None:
    text = Message("assistant", [Part("text", text="Let me look.")], "messages[1]")
    call = Message("assistant", [Part("tool_call", call_id="c1", name="read", text="{}")], "messages[2]")
    merged = Message("assistant", [*text.parts, *call.parts], "messages[1]")
    changes = compare([text, call], [merged])
    assert [(m.mark, m.note) for m in changes.messages] == [("merged", "merged from messages[1], messages[2]")]
    assert (changes.added, changes.removed, changes.merged) == (0, 0, 1)


def test_an_exchange_the_report_cannot_show_leaves_the_others(tmp_path: Path, monkeypatch) -> None:
    import llm_reasoning_proxy.offline.report as report

    def failing_on_the_first(checked, memo):
        if checked.check.number == 1:
            raise RecursionError("maximum recursion depth exceeded")
        return turn_of(checked, memo)

    turn_of = report.turn_of
    monkeypatch.setattr(report, "turn_of", failing_on_the_first)
    flows = [chat_flow([{"role": "user", "content": f"question {n}"}]) for n in (1, 2)]
    written = write_report(write_flows(tmp_path / "c.mitm", flows), tmp_path / "r.html")
    first, second = sorted(page_data(tmp_path / "r.html")["T"], key=lambda t: t["n"])
    assert written.exchanges == 2
    assert first["unreadable"] == "not shown in the report (RecursionError: maximum recursion depth exceeded)"
    assert [data["M"][i]["p"][0]["t"] for data in [page_data(tmp_path / "r.html")] for i in second["sent"]] == [
        "question 2"
    ]


def test_an_event_log_line_longer_than_the_proxy_writes_is_passed_over(tmp_path: Path) -> None:
    from llm_reasoning_proxy.offline.report.event_log import MAX_LINE_BYTES, turns_from_event_log

    event = {"kind": "skipped", "flow_id": "f1", "url": URL, "reason": "r"}
    long_event = dict(event, flow_id="f2", reason="x" * (2 * MAX_LINE_BYTES))
    log = tmp_path / "events.jsonl"
    log.write_text(json.dumps(long_event) + "\n" + json.dumps(event) + "\n")
    assert [turn.flow_id for turn in turns_from_event_log(log)] == ["f1"]


def test_a_secret_anywhere_a_client_writes_is_masked(tmp_path: Path) -> None:
    """Not only message texts: a role, a tool's name, a call id, the model and the tools a request declares."""
    call = {"id": f"call:{SECRET}", "type": "function", "function": {"name": f"tool:{SECRET}", "arguments": "{}"}}
    messages = [
        {"role": f"user {SECRET}", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    body = {
        "model": f"model {SECRET}",
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": SECRET}}],
    }
    capture = write_flows(tmp_path / "c.mitm", [chat_flow([], raw=json.dumps(body).encode())])
    write_report(capture, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert SECRET not in page and page.count("[REDACTED]") >= 5


def test_lone_surrogates_and_a_key_cut_by_the_title_reach_the_page_safely(tmp_path: Path) -> None:
    """Python's JSON reader lets a lone surrogate through (no writer takes one); the conversation's title is cut
    only once redacted, so the cut never leaves the start of a key the redactor would no longer recognise."""
    key = "AKIAIOSFODNN7EXAMPLQ"
    first = "a" * 140 + " " + key + " thanks \\ud83d"
    raw = b'{"model": "m\\ud83d", "messages": [{"role": "user", "content": "%s"}, {"role": "assistant", "content": "x\\udfff"}]}'
    capture = write_flows(tmp_path / "c.mitm", [chat_flow([], raw=raw % first.encode())])
    written = write_report(capture, tmp_path / "r.html")
    data = page_data(tmp_path / "r.html")
    assert written.exchanges == 1 and data["T"][0]["unreadable"] is None
    assert "AKIAIOSFODNN7EXAMPL" not in (tmp_path / "r.html").read_text()
    assert data["convs"][0]["title"] == "a" * 140 + " [REDACTED] thanks \ufffd"  # 160 characters, cut once redacted
    assert data["T"][0]["model"] == "m\ufffd"  # the lone surrogate as the replacement character


def test_each_turn_each_conversation_and_the_capture_say_what_they_cost(tmp_path: Path) -> None:
    """A cost the report cannot know (no usage in the answer, a gateway genai-prices does not price) is said to
    be unknown, and a total over it is a lower bound, never a sum that counts it as nothing."""
    usage = {"prompt_tokens": 976, "completion_tokens": 61, "prompt_tokens_details": {"cached_tokens": 896},
             "completion_tokens_details": {"reasoning_tokens": 25}}  # fmt: skip
    priced = dict(tool_answer("call_a", "thinking about A"), usage=usage)
    a1 = chat_flow([{"role": "user", "content": "task A"}], priced)
    a2 = chat_flow([{"role": "user", "content": "task A"}, *history("call_a")], {"choices": []})  # no usage
    gateway = chat_flow([{"role": "user", "content": "task B"}], dict(tool_answer("call_b", "B"), usage=usage))
    gateway.request.url = "https://llm-gateway.example.com/v1/chat/completions"
    write_report(write_flows(tmp_path / "c.mitm", [a1, a2, gateway]), tmp_path / "r.html")
    data = page_data(tmp_path / "r.html")
    first, second, third = sorted(data["T"], key=lambda t: t["n"])

    expected = exchange_cost(
        Usage(input=976, output=61, reasoning=25, cache_read=896),
        "deepseek-reasoner",
        wire_format="chat_completions",
        api_url=URL,
    )
    assert expected is not None and expected.provider == "deepseek"
    assert first["cost"] == {
        "text": usd_text(expected.usd),
        "usd": str(expected.usd),
        "by": f"{expected.model} (deepseek), {price_source()}",
        "why": None,
    }
    assert second["cost"] == {"text": "cost unknown", "usd": None, "by": None, "why": "no usage reported"}
    assert third["cost"]["usd"] is None
    assert third["cost"]["why"] == f"deepseek-reasoner at llm-gateway.example.com is not priced by {price_source()}"
    conversations = {tuple(c["turns"]): c["cost"] for c in data["convs"]}
    assert conversations == {
        (1, 2): f"at least {usd_text(expected.usd)} (cost of 1 of 2 turns unknown)",
        (3,): "unknown",
    }
    assert data["cost"] == f"at least {usd_text(expected.usd)} (cost of 2 of 3 turns unknown)"
    assert data["prices"] == price_source() and price_source().startswith("genai-prices ")


def test_a_conversation_whose_every_cost_is_known_says_their_sum() -> None:
    costs = [Cost(Decimal("0.012225"), "m", "p", "s"), Cost(Decimal("0.00124375"), "m", "p", "s")]
    assert total_text(costs) == "$0.0135"
    assert total_text([]) == total_text([None]) == "unknown"


def test_amounts_are_shown_to_the_cent_or_to_three_significant_digits() -> None:
    shown = [usd_text(Decimal(v)) for v in ("1234.5", "1", "0.012225", "0.00038935", "0.0000001", "0")]
    assert shown == ["$1,234.50", "$1.00", "$0.0122", "$0.000389", "$0.000000100", "$0"]
