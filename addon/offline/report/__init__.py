"""`scripts/report INPUT -o OUT.html`: captured LLM traffic as one self-contained HTML page.

INPUT is a flow file (`mitmdump -w`), a HAR file, a fixture folder, or the proxy's event log. The page groups the
exchanges into conversations, shows each turn's conversation with what the proxy restored, removed or merged, what
the client dropped since the turn before, the answer with its reasoning, tool calls, token usage and cost (by
genai-prices, summed per conversation and for the capture, an unknown one said to be unknown), timings, every error
with its diagnosis, and lets a turn be copied as a cURL command without its credentials.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ...shared import jsoncodec
from ...shared.redact import redact_text
from ...transcripts import MessageMemo
from ..check import checked_exchanges
from ..inputs import load_flows
from .conversations import group
from .event_log import is_event_log, turns_from_event_log
from .page import ReportData, write_page
from .turns import Turn, turn_of


@dataclass(frozen=True, slots=True)
class Written:
    exchanges: int
    conversations: int
    messages: int  # distinct messages stored
    size: int  # bytes written
    seconds: float


def read_turns(path: Path) -> list[Turn]:
    if is_event_log(path):
        return turns_from_event_log(path)
    memo = MessageMemo()  # a history's messages are read once, not again on every turn that sends them
    turns = []
    for checked in checked_exchanges(load_flows(path), diffs=False):
        try:
            turns.append(turn_of(checked, memo))
        except Exception as e:  # noqa: BLE001 - one exchange the report cannot show must not end the others
            turns.append(_bare(checked.check.number, checked.flow.id, checked.check.url, checked.check.wire_format, e))
    return turns


def _bare(number: int, flow_id: str, url: str, wire_format: str, error: Exception) -> Turn:
    """A turn that says only why it is not shown."""
    why = redact_text(f"{type(error).__name__}: {error}")[:200]
    return Turn(number, flow_id, "POST", url, wire_format, unreadable=f"not shown in the report ({why})")


def write_report(path: Path, out: Path, *, include_opaque: bool = False, title: str | None = None) -> Written:
    started = time.perf_counter()
    turns = read_turns(path)
    conversations = group(turns)
    data = ReportData(include_opaque=include_opaque)
    for number, conversation in enumerate(conversations, 1):
        data.add_conversation(number, conversation)
        for turn in conversation:
            try:
                data.add_turn(turn)
            except Exception as e:  # noqa: BLE001 - as above: the others are written all the same
                bare = _bare(turn.number, turn.flow_id, turn.url, turn.wire_format, e)
                bare.conversation = turn.conversation
                data.add_turn(bare)
    title = redact_text(jsoncodec.valid_text(title or f"LLM traffic: {path.name}"))
    page = write_page(data.document(title, path.name), title)
    out.write_bytes(page)
    return Written(len(turns), len(conversations), len(data.messages.rows), len(page), time.perf_counter() - started)
