"""Chat hosts that keep reasoning as text: Kimi, Z.ai's GLM, Qwen on DashScope and MiniMax. What each dialect says
of a request, what is read from their answers (real captures in tests/fixtures/zai/ and dashscope/, MiniMax's
`<think>` block), and what goes back."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from llm_reasoning_proxy import dialects
from llm_reasoning_proxy.dialects import dashscope, minimax, moonshot, zai
from llm_reasoning_proxy.request.notes import silent_provider
from llm_reasoning_proxy.shared.limits import MAX_VALUE_BYTES, Budget
from llm_reasoning_proxy.shared.records import ReasoningRecord, RepairAction, ToolCallRef
from llm_reasoning_proxy.wire import CacheView, RepairContext
from llm_reasoning_proxy.wire.chat_completions.fields import THINK_FIELD, ThinkBlock, put_back_think
from llm_reasoning_proxy.wire.chat_completions.format import ChatCompletions
from llm_reasoning_proxy.wire.sse import SSEEvent

from tests.support.capture import tap_records

FIXTURES = Path(__file__).parent / "fixtures"
FORMAT = ChatCompletions()
ZAI_PATH = "/api/paas/v4/chat/completions"
DASHSCOPE_PATH = "/compatible-mode/v1/chat/completions"


def records(raw: bytes, *, sse: bool, size: int | None | str = None) -> list[ReasoningRecord]:
    return tap_records(FORMAT, raw, sse=sse, size=size)


def view(doc: dict, found: list[ReasoningRecord], model: str) -> CacheView:
    stored = {key: record for record in found for key in record.keys()}
    return CacheView({k: stored[k] for k in FORMAT.lookup_keys(doc, model) if k in stored}, model)


def call(call_id: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}


def turn(call_id: str, model: str, **fields: object) -> ReasoningRecord:
    """A captured tool-call turn."""
    return ReasoningRecord(
        wire_format="chat_completions",
        fields=fields,
        tool_calls=[ToolCallRef(id=call_id, name="ls", arguments="{}")],
        request_model=model,
    )


def conversation(*loops: tuple[str, dict]) -> list[dict]:
    """User questions, each answered by one tool-call message (as the client sent it) and its result."""
    messages: list[dict] = []
    for call_id, assistant in loops:
        messages += [
            {"role": "user", "content": f"question {call_id}"},
            {"role": "assistant", "content": None, "tool_calls": [call(call_id)], **assistant},
            {"role": "tool", "tool_call_id": call_id, "content": "a.txt"},
        ]
    return messages


def repair(doc: dict, found: list[ReasoningRecord], path: str, model: str, host: str = "") -> list[RepairAction]:
    context = RepairContext(path=path, model=model, host=host)
    return FORMAT.repair(doc, view(doc, found, model), context)


# --- who serves what ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "path", "model", "name"),
    [
        ("api.moonshot.ai", "/v1/chat/completions", "kimi-k2.6", "moonshot"),
        ("api.moonshot.cn", "/v1/chat/completions", "moonshot-v1-8k", "moonshot"),
        ("127.0.0.1", "/v1/chat/completions", "kimi-k2-thinking", "moonshot"),
        ("api.z.ai", "/api/paas/v4/chat/completions", "glm-4.7", "zai"),
        ("open.bigmodel.cn", "/api/paas/v4/chat/completions", "glm-5", "zai"),
        ("127.0.0.1", "/api/coding/paas/v4/chat/completions", "glm-5.1", "zai"),
        ("dashscope-intl.aliyuncs.com", "/compatible-mode/v1/chat/completions", "qwen3.6-plus", "dashscope"),
        ("ws-1.cn-beijing.maas.aliyuncs.com", "/compatible-mode/v1/chat/completions", "qwen4-max", "dashscope"),
        # Kimi on DashScope: DashScope's rules (preserve_thinking), which its route says
        ("127.0.0.1", "/compatible-mode/v1/chat/completions", "kimi-k2.6", "dashscope"),
        ("api.minimax.io", "/v1/chat/completions", "MiniMax-M2.7", "minimax"),
        ("api.minimaxi.com", "/v1/chat/completions", "MiniMax-M3", "minimax"),
        ("127.0.0.1", "/v1/chat/completions", "minimax-m2.5", "minimax"),
        # Through OpenRouter it is OpenRouter's request
        ("openrouter.ai", "/api/v1/chat/completions", "moonshotai/kimi-k2-thinking", "openrouter"),
    ],
)
def test_each_host_is_served_by_its_dialect(host: str, path: str, model: str, name: str) -> None:
    for _ in range(2):  # found, then remembered
        dialect = dialects.serving(host, path, model)
        assert dialect is not None and dialect.name == name


def test_a_request_past_what_is_remembered_is_served_alike() -> None:
    path = "/compatible-mode/v1/chat/completions?" + "x" * 2000
    assert dialects.serving("127.0.0.1", path, "kimi-k2.6").name == "dashscope"
    assert dialects.serving("127.0.0.1", "/v1/chat/completions?" + "x" * 2000, "qwen3-32b") is None


def test_a_qwen_model_elsewhere_is_not_dashscope() -> None:
    assert dialects.serving("vllm.internal", "/v1/chat/completions", "qwen3-32b") is None
    assert dialects.serving("api.cerebras.ai", "/v1/chat/completions", "qwen-3-coder-480b").name == "cerebras"


def test_only_the_text_dialects_say_their_drops_are_silent() -> None:
    silent = {dialect.name for dialect in dialects.DIALECTS if dialect.silent_drops}
    assert {"zai", "dashscope", "minimax"} <= silent and "moonshot" not in silent and "deepseek" not in silent


# --- Kimi ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "thinking", "required"),
    [
        ("kimi-k2-thinking", None, True),
        ("kimi-k2-thinking-turbo", None, True),
        ("kimi-k2.5", None, True),  # thinking by default
        ("kimi-k2.6", {"type": "enabled", "keep": "all"}, True),
        ("kimi-k2.6", {"type": "disabled"}, False),
        ("kimi-k2.5", {"type": "disabled"}, False),
        ("kimi-k2-thinking", {"type": "disabled"}, True),  # thinking cannot be turned off
        ("kimi-k2.7-code", {"type": "disabled"}, True),
        ("kimi-k3", None, True),
        ("moonshotai/kimi-k2-thinking", None, True),  # the model whoever serves it
        ("moonshot-v1-8k", None, False),
        ("kimi-k2-0905-preview", None, False),
    ],
)
def test_kimi_thinking_models_require_reasoning_content_unless_turned_off(
    model: str, thinking: dict | None, required: bool
) -> None:
    doc = {"model": model, "messages": conversation(("call_1", {}))} | ({"thinking": thinking} if thinking else {})
    context = RepairContext(path="/v1/chat/completions", model=model, host="api.moonshot.ai")
    found = [v.location for v in FORMAT.check(doc, context) if v.rule == "reasoning_content_missing"]
    assert found == (["messages[1]"] if required else [])
    assert dialects.requires_reasoning_content(model, doc) is required


def test_kimi_is_no_longer_deepseeks() -> None:
    assert not dialects.named("deepseek").requires_reasoning_content("kimi-k2-thinking")
    assert moonshot.DIALECT.requires_reasoning_content("kimi-k2-thinking")
    assert {rule.provider for rule in moonshot.RULES} == {"moonshot"}
    assert "moonshot" not in {rule.provider for rule in dialects.named("deepseek").rules}


def test_kimi_repair_is_not_silent() -> None:
    doc = {"model": "kimi-k2.6", "messages": conversation(("call_1", {}))}
    actions = repair(
        doc, [turn("call_1", "kimi-k2.6", reasoning_content="List it.")], "/v1/chat/completions", "kimi-k2.6"
    )
    assert [a.describe() for a in actions] == ["restored reasoning_content on messages[1] (tool call call_1)"]
    context = RepairContext(path="/v1/chat/completions", model="kimi-k2.6", host="api.moonshot.ai")
    assert silent_provider(context, actions) is None


# --- GLM ----------------------------------------------------------------------------------------


def test_glm_stream_capture_reads_reasoning_content_as_captured() -> None:
    """pydantic-ai's recording of glm-4.7 streaming with preserved thinking: reasoning_content fragments (the first
    starting with a newline), then content; no tool call, so logged but not keyed."""
    raw = (FIXTURES / "zai/pydanticai_glm47_stream_reasoning_content_0_response_200.sse").read_bytes()
    pieces = [
        json.loads(line[6:])["choices"][0]["delta"].get("reasoning_content") or ""
        for line in raw.decode().splitlines()
        if line.startswith("data: {") and json.loads(line[6:])["choices"]
    ]
    for size in (None, 1, 7, "events"):
        (record,) = records(raw, sse=True, size=size)
        assert record.fields == {"reasoning_content": "".join(pieces)}
        assert record.fields["reasoning_content"].startswith("\n1.") and record.keys() == []


def test_glm_json_capture_of_the_round_trip_fixture() -> None:
    raw = (FIXTURES / "deepseek/pydanticai_zai_glm47_reasoning_content_roundtrip_0_response_200.json").read_bytes()
    message = json.loads(raw)["choices"][0]["message"]
    (record,) = records(raw, sse=False)
    assert record.fields == {"reasoning_content": message["reasoning_content"]}
    assert THINK_FIELD not in record.fields  # content is answer text


@pytest.mark.parametrize(
    ("path", "thinking", "read_back"),
    [
        (ZAI_PATH, {"type": "enabled"}, "current_loop"),  # the standard endpoint clears earlier turns
        (ZAI_PATH, {"type": "enabled", "clear_thinking": False}, "all"),
        (ZAI_PATH, None, "current_loop"),
        ("/api/coding/paas/v4/chat/completions", None, "all"),  # the Coding Plan preserves by default
        ("/api/coding/paas/v4/chat/completions", {"clear_thinking": True}, "current_loop"),
    ],
)
def test_glm_reads_back_the_current_loop_or_with_preserved_thinking_every_turn(
    path: str, thinking: dict | None, read_back: str
) -> None:
    doc = {"model": "glm-4.7", "messages": conversation(("call_old", {}), ("call_new", {}))}
    doc |= {"thinking": thinking} if thinking else {}
    assert zai.DIALECT.reads_back(path, doc) == read_back
    found = [
        turn("call_old", "glm-4.7", reasoning_content="\nEarlier."),
        turn("call_new", "glm-4.7", reasoning_content="\nNow."),
    ]
    before = copy.deepcopy(doc)
    actions = repair(doc, found, path, "glm-4.7")
    restored = [a.location for a in actions if a.kind == "restored"]
    assert restored == (["messages[1]", "messages[4]"] if read_back == "all" else ["messages[4]"])
    assert doc["messages"][4]["reasoning_content"] == "\nNow."
    if read_back == "current_loop":  # the earlier turn is left as the client sent it
        assert doc["messages"][:4] == before["messages"][:4]
    context = RepairContext(path=path, model="glm-4.7", host="api.z.ai")
    assert silent_provider(context, actions) == "zai"


def test_glm_request_that_needs_nothing_gets_nothing() -> None:
    doc = {"model": "glm-4.7", "messages": conversation(("call_1", {"reasoning_content": "\nKept."}))}
    doc["thinking"] = {"type": "enabled", "clear_thinking": False}
    before = copy.deepcopy(doc)
    assert repair(doc, [turn("call_1", "glm-4.7", reasoning_content="\nKept.")], ZAI_PATH, "glm-4.7") == []
    assert doc == before


def test_glm_check_finds_nothing_to_refuse() -> None:
    """GLM answers a request that dropped reasoning_content: its check names no rule."""
    doc = {"model": "glm-4.7", "thinking": {"clear_thinking": False}, "messages": conversation(("call_1", {}))}
    assert FORMAT.check(doc, RepairContext(path=ZAI_PATH, model="glm-4.7", host="api.z.ai")) == []


# --- Qwen on DashScope --------------------------------------------------------------------------


def test_qwen_reasoning_stream_and_document_read_alike() -> None:
    """vercel/ai's recordings of qwen3-max with thinking: reasoning_content fragments with content null, then
    content with reasoning_content null, then a usage chunk with no choices."""
    raw = (FIXTURES / "dashscope/vercel_qwen3max_reasoning_content_stream.sse").read_bytes()
    for size in (None, 5, "events"):
        (record,) = records(raw, sse=True, size=size)
        assert record.fields["reasoning_content"].startswith("We are asked:")
        assert record.response_id == "chatcmpl-3792851e-8f1b-9182-a1dc-b84603c81344"
    document = (FIXTURES / "dashscope/vercel_qwen3max_reasoning_content_response.json").read_bytes()
    (whole,) = records(document, sse=False)
    assert whole.fields["reasoning_content"] == json.loads(document)["choices"][0]["message"]["reasoning_content"]


def test_qwen_tool_call_continuations_with_empty_ids_join_by_index() -> None:
    """vercel/ai's recording of a qwen3-max tool call: continuation chunks carry `"id": ""`. With reasoning added to
    its first chunk, the one call is read whole, under its first id."""
    raw = (FIXTURES / "dashscope/vercel_qwen3max_tool_call_stream.sse").read_bytes()
    assert records(raw, sse=True) == []  # thinking was off: nothing to keep
    thinking = raw.replace(b'"delta":{"content":null,', b'"delta":{"content":null,"reasoning_content":"Weather.",', 1)
    (record,) = records(thinking, sse=True, size=3)
    (captured,) = record.tool_calls
    assert captured.id == "call_eee11723464a4b9eb8cee71d" and captured.name == "weather"
    assert captured == ToolCallRef(id=captured.id, name="weather", arguments='{"location": "San Francisco"}')


@pytest.mark.parametrize(("preserve", "read_back"), [(True, "all"), (False, "current_loop"), (None, "current_loop")])
def test_qwen_preserve_thinking_decides_which_turns_go_back(preserve: bool | None, read_back: str) -> None:
    doc = {"model": "qwen3.6-plus", "messages": conversation(("call_old", {}), ("call_new", {}))}
    doc |= {"preserve_thinking": preserve} if preserve is not None else {}
    assert dashscope.DIALECT.reads_back(DASHSCOPE_PATH, doc) == read_back
    found = [
        turn("call_old", "qwen3.6-plus", reasoning_content="Earlier."),
        turn("call_new", "qwen3.6-plus", reasoning_content="Now."),
    ]
    actions = repair(doc, found, DASHSCOPE_PATH, "qwen3.6-plus")
    expected = ["messages[1]", "messages[4]"] if read_back == "all" else ["messages[4]"]
    assert [a.location for a in actions] == expected


ENCRYPTED = "ZW5jcnlwdGVkIHRoaW5raW5nIGZyb20gdGhlIGRvY3M="
SUMMARY = "The user wants a listing; call ls."


def qwen4_answer() -> dict:
    """qwen4-max with `thinking_display: "summarized"`, shaped as Model Studio's "Thinking summary and encryption"
    page describes it: a summary in reasoning_content and the ciphertext in encrypted_content, on the message."""
    message = {
        "role": "assistant",
        "content": "",
        "reasoning_content": SUMMARY,
        dashscope.ENCRYPTED_THINKING_FIELD: ENCRYPTED,
        "tool_calls": [call("call_q4")],
    }
    return {"id": "chatcmpl-q4", "model": "qwen4-max", "choices": [{"index": 0, "message": message}]}


def test_qwen4_encrypted_thinking_is_captured_streamed_or_whole_and_put_back_unchanged() -> None:
    answer = qwen4_answer()
    (whole,) = records(json.dumps(answer).encode(), sse=False)
    message = answer["choices"][0]["message"]
    chunks = [
        {"id": "chatcmpl-q4", "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": SUMMARY}}]},
        {"id": "chatcmpl-q4", "choices": [{"index": 0, "delta": {"encrypted_content": ENCRYPTED[:20]}}]},
        {"id": "chatcmpl-q4", "choices": [{"index": 0, "delta": {"encrypted_content": ENCRYPTED[20:]}}]},
        {
            "id": "chatcmpl-q4",
            "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, **message["tool_calls"][0]}]}}],
        },
    ]
    raw = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    (streamed,) = records(raw, sse=True, size=3)
    for record in (whole, streamed):
        assert record.fields == {"reasoning_content": SUMMARY, "encrypted_content": ENCRYPTED}
    doc = {"model": "qwen4-max", "preserve_thinking": True, "thinking_display": "summarized"}
    doc["messages"] = conversation(("call_q4", {}))
    stored = whole.model_copy(update={"request_model": "qwen4-max"})
    actions = repair(doc, [stored], DASHSCOPE_PATH, "qwen4-max")
    assert actions[0].fields == ["reasoning_content", "encrypted_content"]
    assert doc["messages"][1]["encrypted_content"] == ENCRYPTED


def test_qwen4_ciphertext_is_opaque_and_signed() -> None:
    """Logged by length and hash, exported as a placeholder, and removed when another model issued it."""
    assert "encrypted_content" not in FORMAT.text_fields and "encrypted_content" in FORMAT.opaque_keys
    assert "encrypted_content" in FORMAT.signed_fields and b'"encrypted_content"' in FORMAT.signed_markers
    message = {"role": "assistant", "content": "", "encrypted_content": ENCRYPTED, "tool_calls": [call("c1")]}
    foreign = {ENCRYPTED: "was issued for model qwen4-max"}
    actions, kept = FORMAT.remove_foreign(
        {"messages": [{"role": "user", "content": "q"}, message, {"role": "user", "content": "next"}]},
        lambda values: {v: foreign[v] for v in values if v in foreign},
    )
    assert [(a.location, a.fields) for a in actions] == [("messages[1]", ["encrypted_content"])] and kept == []


# --- MiniMax ------------------------------------------------------------------------------------

THINK = "<think>\nThe user wants the files. I will call ls.\n</think>\n\n"


@pytest.mark.parametrize(
    ("pieces", "block"),
    [
        ([THINK + "Listing."], THINK),
        ([THINK], THINK),
        (list(THINK + "Listing."), THINK),  # one character at a time: the tags split everywhere
        (["\n", "<thi", "nk>x</th", "ink>", "\n", "\n", "Done"], "\n<think>x</think>\n\n"),
        (["<think>x</think>Answer"], "<think>x</think>"),
        (["<think>unclosed"], None),
        (["Answer first <think>x</think>"], None),
        (["<thinking>x</thinking>"], None),
        (["", "<", "b>"], None),
    ],
)
def test_think_block_is_read_from_the_start_of_content(pieces: list[str], block: str | None) -> None:
    think = ThinkBlock(Budget())
    for piece in pieces:
        think.add(piece)
    assert think.value() == block


def test_content_of_whitespace_only_is_held_within_the_answers_budget() -> None:
    """Until content other than whitespace comes, a block may still begin; the whitespace it would begin with is
    held as it comes, each piece charged to the answer's budget once, and past the bound of one value nothing is."""
    budget = Budget()
    think = ThinkBlock(budget)
    piece = " \n" * 2048
    for _ in range(MAX_VALUE_BYTES // len(piece)):
        think.add(piece)
    assert think.open and budget.over is None and budget.used == MAX_VALUE_BYTES
    think.add(piece)
    assert budget.over == "its <think> is over the 4 MiB limit per stored value" and think.parts.pieces == []


def test_whitespace_before_content_that_is_no_block_is_let_go() -> None:
    think = ThinkBlock(Budget())
    for piece in ("  ", "\n", " <th", "e answer"):
        think.add(piece)
    assert not think.open and think.value() is None and think.parts.pieces == []


@pytest.mark.parametrize(
    ("content", "restored"),
    [
        (None, THINK),
        ("", THINK),
        ("Listing.", THINK + "Listing."),
        ("\n\nListing.", THINK + "Listing."),  # what a client that cut out only the block leaves
        (THINK + "Listing.", None),  # kept: nothing to do
        (
            [{"type": "text", "text": "Listing."}],
            [{"type": "text", "text": THINK}, {"type": "text", "text": "Listing."}],
        ),
    ],
)
def test_think_block_goes_back_at_the_start_of_content(content: object, restored: object) -> None:
    message = {"role": "assistant", "content": copy.deepcopy(content)}
    assert put_back_think(message, THINK) is (restored is not None)
    assert message["content"] == (restored if restored is not None else content)


def minimax_stream(*deltas: dict) -> bytes:
    chunks = [
        {
            "id": "05f7c3a1",
            "object": "chat.completion.chunk",
            "model": "MiniMax-M2.7",
            "choices": [{"index": 0, "delta": d}],
        }
        for d in deltas
    ]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def minimax_delta(content: str) -> dict:
    # MiniMax's deltas name the assistant and carry an empty audio_content
    # (https://github.com/MiniMax-AI/MiniMax-M2/issues/105)
    return {"content": content, "role": "assistant", "name": "MiniMax AI", "audio_content": ""}


TOOL_DELTA = {"tool_calls": [{"index": 0, **call("call_mm1")}], "role": "assistant"}


@pytest.mark.parametrize("size", [None, 1, 7, "events"])
def test_minimax_think_block_is_captured_from_a_stream(size: int | str | None) -> None:
    words = [THINK[i : i + 5] for i in range(0, len(THINK), 5)]
    raw = minimax_stream(*(minimax_delta(w) for w in words), TOOL_DELTA)
    (record,) = records(raw, sse=True, size=size)
    assert record.fields == {THINK_FIELD: THINK} and record.tool_call_ids == ["call_mm1"]


def test_minimax_think_block_after_a_role_chunk_and_before_answer_text() -> None:
    raw = minimax_stream(
        {"role": "assistant", "content": ""}, minimax_delta("<think>\nPlan."), minimax_delta("</think>"),
        minimax_delta("\n\nHere"), minimax_delta(" it is. <think>not reasoning</think>"), TOOL_DELTA,
    )  # fmt: skip
    (record,) = records(raw, sse=True, size="events")
    assert record.fields == {THINK_FIELD: "<think>\nPlan.</think>\n\n"}


def test_answer_text_that_only_mentions_think_is_not_captured() -> None:
    raw = minimax_stream(minimax_delta("Use a "), minimax_delta("<think> tag."), TOOL_DELTA)
    assert records(raw, sse=True, size="events") == []
    whole = {"id": "x", "choices": [{"index": 0, "message": {"content": "See <think>", "tool_calls": [call("c")]}}]}
    assert records(json.dumps(whole).encode(), sse=False) == []


def test_answers_without_think_keep_skipping_answer_text() -> None:
    """Once the content began without a block, content chunks are passed over unparsed, as before."""
    reader = FORMAT.reader()
    first = {"id": "r", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello"}}]}
    reader.feed_event(SSEEvent(json.dumps(first).encode()))
    text = json.dumps({"id": "r", "choices": [{"index": 0, "delta": {"content": " world"}}]}).encode()
    assert reader.markers is not None and reader.skippable(b"data: " + text + b"\n\n")


def test_minimax_think_block_goes_back_only_to_minimax() -> None:
    record = turn("call_mm1", "MiniMax-M2.7", **{THINK_FIELD: THINK})
    doc = {"model": "MiniMax-M2.7", "messages": conversation(("call_mm1", {"content": ""}))}
    actions = repair(doc, [record], "/v1/chat/completions", "MiniMax-M2.7", host="api.minimax.io")
    assert [a.describe() for a in actions] == ["restored <think> on messages[1] (tool call call_mm1)"]
    assert doc["messages"][1]["content"] == THINK and THINK_FIELD not in doc["messages"][1]
    context = RepairContext(path="/v1/chat/completions", model="MiniMax-M2.7", host="api.minimax.io")
    assert silent_provider(context, actions) == "minimax"
    assert repair(doc, [record], "/v1/chat/completions", "MiniMax-M2.7", host="api.minimax.io") == []  # idempotent
    elsewhere = {"model": "qwen3-32b", "messages": conversation(("call_mm1", {"content": ""}))}
    other = turn("call_mm1", "qwen3-32b", **{THINK_FIELD: THINK})
    assert repair(elsewhere, [other], "/v1/chat/completions", "qwen3-32b", host="vllm.internal") == []
    assert elsewhere["messages"][1]["content"] == "" and THINK_FIELD not in elsewhere["messages"][1]


def test_minimax_reasoning_details_with_reasoning_split() -> None:
    """With reasoning_split the reasoning comes as reasoning_details entries whose text arrives in increments."""
    entry = {"type": "reasoning.text", "id": "reasoning-text-1", "format": "MiniMax-response-v1", "index": 0}
    raw = minimax_stream(
        {"role": "assistant", "content": "", "reasoning_details": [{**entry, "text": "I will "}]},
        {"reasoning_details": [{**entry, "text": "call ls."}]},
        TOOL_DELTA,
    )
    (record,) = records(raw, sse=True, size=7)
    assert record.fields == {"reasoning_details": [{**entry, "text": "I will call ls."}]}
    doc = {"model": "MiniMax-M2.7", "reasoning_split": True, "messages": conversation(("call_mm1", {}))}
    stored = record.model_copy(update={"request_model": "MiniMax-M2.7"})
    (action,) = repair(doc, [stored], "/v1/chat/completions", "MiniMax-M2.7", host="api.minimax.io")
    assert (
        action.fields == ["reasoning_details"]
        and doc["messages"][1]["reasoning_details"] == record.fields["reasoning_details"]
    )


def test_minimax_dialect_takes_its_think_block_back() -> None:
    assert minimax.DIALECT.think_in_content and minimax.DIALECT.reads_back("/v1/chat/completions", {}) == "all"


def test_while_a_think_block_may_begin_or_goes_on_no_event_is_passed_over() -> None:
    reader = FORMAT.reader()

    def feed(delta: dict) -> None:
        reader.feed_event(SSEEvent(json.dumps({"id": "r", "choices": [{"index": 0, "delta": delta}]}).encode()))

    text = b'data: {"id":"r","choices":[{"index":0,"delta":{"content":"more"}}]}\n\n'
    feed({"role": "assistant", "content": ""})
    assert reader.markers is None and not reader.skippable(text)  # the content has not begun
    feed(minimax_delta("<think>\nPlan"))
    assert reader.markers is None and not reader.skippable(text)  # inside the block
    feed(minimax_delta("</think>\n\nAnswer"))
    assert reader.markers is not None and reader.skippable(text)


def test_a_think_block_that_begins_past_the_first_batch_of_a_stream_is_read_whole() -> None:
    """The stream tap reads events in batches and passes over unmarked ones once the reader has markers: a block
    whose content begins late (after hundreds of empty chunks) must still be read to its end."""
    empty = [{"role": "assistant", "content": ""}] * 300
    raw = minimax_stream(*empty, *(minimax_delta(THINK[i : i + 3]) for i in range(0, len(THINK), 3)), TOOL_DELTA)
    (record,) = records(raw, sse=True, size="events")
    assert record.fields == {THINK_FIELD: THINK}
