"""Adding a wire format is one folder and one registration line: shown end to end for a made-up format.

Turns (made up) is a JSON body with a `turns` list; each call a model turn makes carries a `signature` of its own,
which the provider wants back on that call. The test adds to a copy of the addon exactly these, and nothing else:

1. the folder `addon/wire/turns/`: `format.py` (TURNS_FORMAT below: the WireFormat, claim, reader, repair, checks),
   `transcript.py` (TURNS_TRANSCRIPT: the conversation and answer as people read them) and `__init__.py` exposing
   `FORMAT` and `TRANSCRIBER`;
2. one line, `"turns",`, in the registration list of `addon/wire/__init__.py`;

and, on the test's side, 3. its fake (`TurnsFake`), added to the fake provider. Through a real mitmdump the proxy then
captures the signature from an answer, puts it back on a client's next request that dropped it, and the flow file it
wrote reads back offline: the check replays the capture and the repair, the report shows the conversation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider, Options, Recorded, Reply
from tests.support.proxy import ROOT, MitmdumpProcess

pytestmark = pytest.mark.e2e

TURNS_FORMAT = '''"""Turns, a made-up wire format: how a wire format is added.

A request is `{"model": …, "turns": [{"by": "user", "text": …}, {"by": "model", "calls": [{"id", "name", "args",
"signature"}]}, {"by": "tool", "call": id, "text": …}]}`, POSTed to a path ending in /v1/talk; an answer is
`{"id": …, "model": …, "turn": {"by": "model", …}}`, whole or as SSE events of that shape. Each call the model makes
carries a signature of its own, which the provider wants back on that call.
"""

from __future__ import annotations

from typing import Any

from ...shared.limits import Budget
from ...shared.records import ReasoningRecord, RepairAction, ToolCallRef, Violation
from ..base import (
    CacheView,
    ForeignLookup,
    RecordReader,
    RepairContext,
    Routed,
    SentValue,
    body_model,
    call_lookup_keys,
    event_documents,
    item_at,
)
from ..sse import SSEEvent

NAME = "turns"
SIGNATURE = "signature"
SIGNATURE_MISSING = "turns_signature_missing"


def model_calls(turn: Any) -> list[dict[str, Any]]:
    """The calls of a model turn; none for any other turn or shape."""
    if not isinstance(turn, dict) or turn.get("by") != "model" or not isinstance(turn.get("calls"), list):
        return []
    return [call for call in turn["calls"] if isinstance(call, dict)]


def call_parts(call: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    call_id, name = call.get("id"), call.get("name")
    return (call_id if isinstance(call_id, str) else None, name if isinstance(name, str) else None, call.get("args"))


def _turns(doc: Any) -> list[Any]:
    turns = doc.get("turns") if isinstance(doc, dict) else None
    return turns if isinstance(turns, list) else []


class TurnsReader:
    markers: tuple[bytes, ...] | None = None  # every event may name the answer

    def __init__(self) -> None:
        self.budget = Budget()
        self.unreadable = 0
        self.calls: list[ToolCallRef] = []
        self.response_id: str | None = None
        self.model: str | None = None

    def feed_event(self, event: SSEEvent) -> None:
        found = False
        for doc in event_documents(event.data):
            found = True
            self.feed_document(doc)
        if not found:
            self.unreadable += 1

    def skippable(self, data: bytes) -> bool:
        return False

    def feed_document(self, doc: Any) -> None:
        if not isinstance(doc, dict):
            return
        self.response_id = doc["id"] if isinstance(doc.get("id"), str) else self.response_id
        self.model = doc["model"] if isinstance(doc.get("model"), str) else self.model
        for call in model_calls(doc.get("turn")):
            call_id, name, args = call_parts(call)
            signature = call.get(SIGNATURE)
            if call_id is None or not isinstance(signature, str):
                continue
            if not (self.budget.take(SIGNATURE, len(signature)) and self.budget.take_call()):
                return
            self.calls.append(ToolCallRef(id=call_id, name=name or "", arguments=args, fields={SIGNATURE: signature}))

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        if not self.calls or self.budget.over is not None:
            return []
        record = ReasoningRecord(
            wire_format=NAME,
            tool_calls=list(self.calls),
            response_id=self.response_id,
            response_model=self.model,
            complete=complete,
        )
        return [record]


class Turns(Routed):
    body_marker = b'"turns"'
    name = NAME
    items_key = "turns"
    text_fields: frozenset[str] = frozenset()
    maskable_fields: frozenset[str] = frozenset()
    signed_fields = frozenset({SIGNATURE})
    signed_markers = (b'"signature"',)
    opaque_keys = frozenset({SIGNATURE})
    opaque_list_keys: frozenset[str] = frozenset()
    opaque_data_types: frozenset[str] = frozenset()
    signature_placeholder = False

    def route(self, path: str) -> bool:
        return path.split("?", 1)[0].endswith("/v1/talk")

    def request_model(self, path: str, body: bytes, doc: Any | None) -> str | None:
        return body_model(body, doc)

    def may_need_repair(self, body: bytes) -> bool:
        return b'"calls"' in body

    def reader(self) -> TurnsReader:
        return TurnsReader()

    def lookup_keys(self, doc: Any, model: str | None) -> list[str]:
        calls = [call for turn in _turns(doc) for call in model_calls(turn)]
        return [key for call in calls for key in call_lookup_keys(model, *call_parts(call))]

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        actions = []
        for index, turn in enumerate(_turns(doc)):
            for call in model_calls(turn):
                if isinstance(call.get(SIGNATURE), str):
                    continue
                hit = cache.call(*call_parts(call))
                signature = hit.call.fields.get(SIGNATURE) if hit is not None else None
                if hit is None or not isinstance(signature, str):
                    continue
                call[SIGNATURE] = signature
                actions.append(
                    RepairAction(
                        kind="restored",
                        location=f"turns[{index}]",
                        index=index,
                        fields=[SIGNATURE],
                        tool_call_id=call_parts(call)[0],
                        response_id=hit.record.response_id,
                        via=hit.via,
                    )
                )
        return actions

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        return [
            Violation(
                rule=SIGNATURE_MISSING,
                location=f"turns[{index}]",
                message="model call without its signature",
                tool_call_id=call_parts(call)[0],
            )
            for index, turn in enumerate(_turns(doc))
            for call in model_calls(turn)
            if not isinstance(call.get(SIGNATURE), str)
        ]

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        return [call_parts(call) for call in model_calls(item_at(doc, self.items_key, index))]

    def remove_foreign(self, doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
        sites = [
            (index, call)
            for index, turn in enumerate(_turns(doc))
            for call in model_calls(turn)
            if isinstance(call.get(SIGNATURE), str)
        ]
        why = foreign([call[SIGNATURE] for _, call in sites]) if sites else {}
        actions = []
        for index, call in sites:
            reason = why.get(call[SIGNATURE])
            if reason is None:
                continue
            del call[SIGNATURE]
            actions.append(
                RepairAction(
                    kind="foreign_removed",
                    location=f"turns[{index}]",
                    index=index,
                    fields=[SIGNATURE],
                    tool_call_id=call_parts(call)[0],
                    reason=reason,
                )
            )
        return actions, []

    def recover(self, doc: Any, context: RepairContext, refused: list[int] | None) -> list[RepairAction]:
        # Turns takes no call without the signature it issued: before sending no form is known, and a refused
        # signature is only taken out.
        turns = _turns(doc)
        indexes = range(len(turns)) if refused is None else refused
        actions = []
        for index in indexes:
            for call in model_calls(turns[index]) if 0 <= index < len(turns) else []:
                if SIGNATURE in call:
                    del call[SIGNATURE]
                    actions.append(
                        RepairAction(
                            kind="recovered",
                            location=f"turns[{index}]",
                            index=index,
                            fields=[SIGNATURE],
                            tool_call_id=call_parts(call)[0],
                            degraded=True,
                            reason="refused signature taken out",
                            rule=SIGNATURE_MISSING,
                        )
                    )
        return actions

    def opaque_fragments(self, doc: Any, data_types: frozenset[str]) -> list[tuple[tuple[Any, ...], Any]]:
        return []  # a signature comes whole, never in pieces

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        return index if index is not None and 0 <= index < len(items) else None

    def sent_values(self, doc: Any, model: str | None, records: RecordReader) -> list[SentValue]:
        keys = self.lookup_keys(doc, model)
        cache = CacheView(records(keys) if keys else {}, model)
        found = []
        for index, turn in enumerate(_turns(doc)):
            for call in model_calls(turn):
                if not isinstance(call.get(SIGNATURE), str):
                    continue
                call_id, name, args = call_parts(call)
                hit = cache.call(call_id, name, args)
                captured = hit.call.fields.get(SIGNATURE) if hit is not None else None
                found.append(
                    SentValue(
                        index=index,
                        location=f"turns[{index}]",
                        label=f"call {name}",
                        value=call[SIGNATURE],
                        captured=captured if isinstance(captured, str) else None,
                        item_ids=(call_id,) if call_id else (),
                        call_id=call_id,
                        function=name,
                    )
                )
        return found
'''
TURNS_TRANSCRIPT = '''"""Turns, a made-up wire format, as people read it."""

from __future__ import annotations

from typing import Any

from ..assembly import AnswerAssembler, ListTranscriber, as_str, other, text_of
from ..conversation import Conversation, Message, Part
from .format import NAME, SIGNATURE, call_parts, model_calls

ROLES = {"model": "assistant"}


def turn_parts(turn: dict[str, Any]) -> list[Part]:
    parts = []
    text = as_str(turn.get("text"))
    if turn.get("by") == "tool":
        parts.append(Part("tool_result", text=text or "", call_id=as_str(turn.get("call"))))
    elif text:
        parts.append(Part("text", text=text))
    for call in model_calls(turn):
        call_id, name, args = call_parts(call)
        parts.append(Part("tool_call", text=text_of(args), call_id=call_id, name=name))
        if isinstance(call.get(SIGNATURE), str):
            parts.append(Part.opaque(SIGNATURE, call[SIGNATURE], call_id))
    return parts


class TurnsAssembler(AnswerAssembler):
    def event(self, payload: dict[str, Any], name: str | None) -> None:
        self.document(payload)

    def document(self, doc: dict[str, Any]) -> None:
        self.answer.model = as_str(doc.get("model")) or self.answer.model
        turn = doc.get("turn")
        if isinstance(turn, dict):
            self.answer.messages.append(Message("assistant", turn_parts(turn), "turn"))


class TurnsTranscriber(ListTranscriber):
    wire_format = NAME
    items_key = "turns"

    def preamble(self, doc: dict[str, Any], path: str) -> Conversation:
        return Conversation(NAME, model=as_str(doc.get("model")))

    def message(self, item: Any, where: str) -> Message:
        if not isinstance(item, dict):
            return Message("?", [other(where, item)], where)
        by = as_str(item.get("by")) or "?"
        return Message(ROLES.get(by, by), turn_parts(item), where)

    def assembler(self) -> TurnsAssembler:
        return TurnsAssembler()


TRANSCRIBER = TurnsTranscriber()
'''
TURNS_INIT = '''"""Turns, a made-up wire format: `format.py` claims, reads, repairs and checks it; `transcript.py` shows it."""

from __future__ import annotations

from .format import Turns
from .transcript import TRANSCRIBER

FORMAT = Turns()

__all__ = ["FORMAT", "TRANSCRIBER"]
'''
MODEL = "turns-think-1"
PATH = "/turns/v1/talk"
PROMPT = "What is here?"


class TurnsFake:
    """A provider speaking Turns: a call with its signature, then the answer; a call sent back without the signature
    it was issued with is refused."""

    name = "turns"

    def __init__(self) -> None:
        self.issued: dict[str, str] = {}

    def matches(self, path: str) -> bool:
        return path.startswith("/turns/")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        for index, turn in enumerate(doc["turns"]):
            for call in turn.get("calls", []) if turn.get("by") == "model" else []:
                if call.get("signature") != self.issued.get(call["id"]):
                    text = f"Turns: turns[{index}] call {call['id']} lacks the signature it was issued with"
                    return Reply(400, {"error": {"message": text}})
        if doc["turns"][-1].get("by") == "tool":
            return Reply(200, {"id": uuid.uuid4().hex, "model": MODEL, "turn": {"by": "model", "text": "Two files."}})
        call_id, signature = f"t_{uuid.uuid4().hex[:12]}", f"sig-{uuid.uuid4().hex}"
        self.issued[call_id] = signature
        call = {"id": call_id, "name": "ls", "args": {}, "signature": signature}
        return Reply(200, {"id": uuid.uuid4().hex, "model": MODEL, "turn": {"by": "model", "calls": [call]}})


@pytest.fixture
def turns_addon(tmp_path: Path) -> Path:
    """A copy of the addon with Turns added: its folder and one registration line."""
    addon = tmp_path / "addon"
    shutil.copytree(ROOT / "addon", addon, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    folder = addon / "wire" / "turns"
    folder.mkdir()
    (folder / "format.py").write_text(TURNS_FORMAT)
    (folder / "transcript.py").write_text(TURNS_TRANSCRIPT)
    (folder / "__init__.py").write_text(TURNS_INIT)
    registry = addon / "wire" / "__init__.py"
    before = registry.read_text()
    registry.write_text(before.replace('    "bedrock_converse",\n)', '    "bedrock_converse",\n    "turns",\n)', 1))
    added = [line for line in registry.read_text().splitlines() if line not in before.splitlines()]
    assert added == ['    "turns",']  # the one registration line
    return addon / "main.py"


@pytest.fixture
def turns() -> Any:
    provider = FakeProvider().start()
    provider.dialects.insert(0, TurnsFake())
    yield provider
    provider.stop()


def post(base_url: str, body_turns: list[dict], key: str) -> httpx.Response:
    body = {"model": MODEL, "turns": body_turns}
    return httpx.post(f"{base_url}{PATH}", json=body, headers={"authorization": f"Bearer {key}"}, timeout=30)


def offline(addon: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The offline tools of the copy of the addon (run from its own folder: `-m` puts the working directory first on
    the path, where a checkout's own package link would shadow the copy)."""
    package = tmp_path / "package"
    if not package.exists():
        package.mkdir()
        (package / "llm_reasoning_proxy").symlink_to(addon.parent)
    return subprocess.run(
        [sys.executable, "-m", "llm_reasoning_proxy.offline.cli", *args],
        env={**os.environ, "PYTHONPATH": str(package)},
        cwd=package,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_wire_format_added_as_a_folder_and_a_line_is_captured_repaired_and_transcribed(
    turns: FakeProvider, turns_addon: Path, confdir: Path, tmp_path: Path
) -> None:
    log, capture = tmp_path / "events.jsonl", tmp_path / "turns.mitm"
    options = [
        "--mode",
        f"reverse:{turns.url}",
        "--set",
        f"llm_cache={tmp_path / 'cache.db'}",
        "--set",
        f"llm_log={log}",
    ]
    with MitmdumpProcess(*options, "-w", str(capture), confdir=confdir, script=turns_addon) as proxy:
        key, tail = f"sk-turns-{uuid.uuid4().hex}", LogTail(log)
        question = {"by": "user", "text": PROMPT}
        answer = post(proxy.url, [question], key).json()["turn"]
        (call,) = answer["calls"]
        (captured,) = tail.wait_for("captured")
        assert captured["wire_format"] == "turns"
        # The client keeps the call and drops its signature: the provider refuses that...
        dropped = {"by": "model", "calls": [{k: v for k, v in call.items() if k != "signature"}]}
        history = [question, dropped, {"by": "tool", "call": call["id"], "text": "a.txt b.txt"}]
        refused = post(turns.url, history, key)
        assert refused.status_code == 400 and "lacks the signature" in refused.text
        # ...and the proxy puts it back.
        through = post(proxy.url, history, key)
        assert through.status_code == 200 and through.json()["turn"]["text"] == "Two files."
        (repaired,) = tail.wait_for("repaired")
        assert turns.last(PATH).doc["turns"][1]["calls"][0]["signature"] == call["signature"]
    assert repaired["wire_format"] == "turns"
    assert any("turns[1]" in str(action) for action in repaired["actions"])

    # Offline, from the flow file: the check replays the capture and the repair through the format...
    check = offline(turns_addon, tmp_path, "check", "--no-diff", str(capture))
    assert "[turns, model turns-think-1]" in check.stdout, check.stderr
    assert "reasoning captured: signature" in check.stdout
    assert "restored signature on turns[1]" in check.stdout
    # ...and the report reads the conversation through its transcriber: the first user turn is the title.
    page = tmp_path / "report.html"
    report = offline(turns_addon, tmp_path, "report", str(capture), "-o", str(page))
    assert report.returncode == 0, report.stderr
    assert re.search(r'"models":\["turns-think-1"\],"title":"What is here\?"', page.read_text()), page.read_text()[
        :2000
    ]
