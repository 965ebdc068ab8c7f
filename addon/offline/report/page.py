"""The report as one self-contained HTML file: the page's style and script inline, the data as one JSON document
inside it, nothing fetched from anywhere.

The data is written so that it grows with what is new in a session, not with the length of its histories: every
distinct message is stored once and a turn lists the messages it holds, so a 400-message history sent again on each
of 1,000 turns costs 400 messages and 1,000 lists of numbers. The page renders a turn only when it is opened.
"""

from __future__ import annotations

import datetime
import html
import json
from dataclasses import dataclass, field
from decimal import Decimal
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import orjson

from ... import wire as formats
from ...shared import jsoncodec
from ...shared.cost import Cost, price_source
from ...shared.redact import redact_json, redact_text
from ...shared.version import __version__
from ...wire.conversation import Answer, Message, Part, Usage
from ..fixtures import opaque_values
from .turns import Turn

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
    "connect-src 'none'; form-action 'none'; base-uri 'none'"
)


def opaque_stand_in(value: str) -> str:
    part = Part.opaque("", value)
    return f"[opaque: {part.length:,} characters, sha256 {part.digest}]"


@dataclass
class _Table:
    """Distinct JSON values, each stored once, by the bytes they serialise to."""

    rows: list[bytes] = field(default_factory=list)
    index: dict[bytes, int] = field(default_factory=dict)

    def add(self, value: Any) -> int:
        data = _dumps(value)
        found = self.index.get(data)
        if found is None:
            found = self.index[data] = len(self.rows)
            self.rows.append(data)
        return found


class ReportData:
    """Builds the report's JSON document turn by turn."""

    def __init__(self, *, include_opaque: bool) -> None:
        self.include_opaque = include_opaque
        self.messages = _Table()
        self.items = _Table()
        self.strings = _Table()  # repair descriptions and violations: a long history repeats them on every turn
        self._raw_items: dict[bytes, int] = {}  # an item's JSON as sent -> its row, redacted
        self._message_rows: dict[int, tuple[Message, int]] = {}  # a message read once -> its row
        self.turns: list[bytes] = []
        self.conversations: list[dict[str, Any]] = []
        self.costs: list[Cost | None] = []  # every turn's, for the capture's total
        self.prices = price_source()  # read once: it looks through the installed packages
        self._texts: dict[str, str] = {}  # redacted texts, by text: a history repeats them on every turn

    def _text(self, text: str | None) -> str | None:
        """Every text a client or provider wrote goes into the page through here: redacted, once per text."""
        if not text:
            return text
        done = self._texts.get(text)
        if done is None:
            done = self._texts[text] = redact_text(jsoncodec.valid_text(text))
            if len(self._texts) > 200_000:
                self._texts.clear()
        return done

    def part(self, part: Part) -> dict[str, Any]:
        entry: dict[str, Any] = {"k": part.kind}
        if part.kind == "opaque":
            entry["l"] = part.length
            entry["h"] = part.digest
            if self.include_opaque and part.value is not None:
                entry["v"] = part.value
        elif part.text:
            entry["t"] = self._text(part.text)
        for key, value in (("f", part.field), ("c", part.call_id), ("a", part.name)):
            if value:
                entry[key] = self._text(value)
        if part.mark:
            entry["m"] = part.mark
        return entry

    def message(self, message: Message) -> int:
        # The same message object comes with every turn that sends the history again (transcripts.MessageMemo).
        known = self._message_rows.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        row = self._message_row(message)
        self._message_rows[id(message)] = (message, row)  # holding the message keeps its id from being reused
        return row

    def _message_row(self, message: Message) -> int:
        text = self._text
        entry: dict[str, Any] = {
            "r": text(message.role),
            "w": text(message.where),
            "p": [self.part(p) for p in message.parts],
        }
        if message.mark:
            entry["m"] = message.mark
        if message.note:
            entry["n"] = text(message.note)
        return self.messages.add(entry)

    def answer(self, answer: Answer) -> dict[str, Any]:
        return {
            "msgs": [self.message(m) for m in answer.messages],
            "usage": _usage(answer.usage),
            "finish": self._text(answer.finish),
            "model": self._text(answer.model),
            "streamed": answer.streamed,
            "events": answer.events,
            "problem": self._text(answer.problem),
        }

    def request_items(self, turn: Turn) -> dict[str, Any] | None:
        """The request body for copy-as-cURL: its top-level list stored item by item (a history's items are the
        same on every turn), opaque values stood in for unless asked, every string redacted."""
        body = turn.body
        if not isinstance(body, dict):
            return None
        key = formats.by_name(turn.wire_format).items_key if turn.wire_format != "?" else ""
        items = body.get(key) if key else None
        if not isinstance(items, list):
            return {"env": self._safe(body), "k": None, "i": []}
        envelope = self._safe({k: v for k, v in body.items() if k != key})
        return {"env": envelope, "k": key, "i": [self._item(item) for item in items]}

    def _safe(self, doc: Any) -> Any:
        """A document as the report may hold it: opaque values stood in for (unless asked for), then redacted."""
        if not self.include_opaque:
            doc = _stand_in(doc, set(opaque_values(doc)))
        return redact_json(doc)

    def _item(self, item: Any) -> int:
        try:
            raw = orjson.dumps(item)
        except TypeError:
            return self.items.add(self._safe(item))
        found = self._raw_items.get(raw)
        if found is None:
            found = self._raw_items[raw] = self.items.add(self._safe(item))
        return found

    def _strings(self, texts: list[str]) -> list[int]:
        return [self.strings.add(self._text(text)) for text in texts]

    def add_turn(self, turn: Turn) -> None:
        shown = turn.changes.messages if turn.changes is not None else (turn.sent.messages if turn.sent else [])
        since = turn.since
        entry: dict[str, Any] = {
            "n": turn.number,
            "c": turn.conversation,
            "fid": self._text(turn.flow_id),
            "meth": turn.method,
            "u": self._text(turn.url),
            "fmt": self._text(turn.wire_format),
            "model": self._text(turn.model),
            "st": turn.status,
            "live": turn.live_repaired,
            "rep": turn.repaired,
            "fail": turn.failed,
            "sent": [self.message(m) for m in shown],
            "cs": len(turn.client_sent.messages) if turn.client_sent else 0,
            "chg": _counts(turn.changes) if turn.changes is not None and turn.changes else None,
            "since": None,
            "ans": self.answer(turn.answer) if turn.answer is not None else None,
            "cost": self._cost(turn),
            "diag": _diagnosis(turn, self._text),
            "culprit": self._text(turn.culprit),
            "findings": self._strings(turn.findings),
            "actions": self._strings(turn.actions),
            "violations": self._strings(turn.violations),
            "remaining": self._strings(turn.remaining),
            "unreadable": self._text(turn.unreadable),
            "tm": {
                "start": self._text(turn.timings.started),
                "ttfb": turn.timings.first_byte_ms,
                "total": turn.timings.total_ms,
                "addon": turn.timings.addon_ms,
            },
            "curl": {"h": [[n, self._text(v)] for n, v in turn.headers], "b": self.request_items(turn)},
            "comment": self._text(turn.comment),
            "recov": self._text(turn.recovered),
            "notes": [self._text(note) for note in turn.notes],
            "settings": redact_json(turn.sent.settings) if turn.sent else {},
            "tools": [self._text(name) for name in turn.sent.tools] if turn.sent else [],
        }
        if since is not None:
            changed = [m for m in since.messages if m.mark or any(p.mark for p in m.parts)]
            entry["since"] = {
                "new": sum(1 for m in since.messages if m.mark == "new"),
                "dropped": since.removed,
                "msgs": [self.message(m) for m in changed],
            }
        self.turns.append(_dumps(entry))

    def _cost(self, turn: Turn) -> dict[str, str | None]:
        cost = turn.cost
        if cost is not None:
            by = f"{cost.model} ({cost.provider}), {cost.source}"
            return {"text": usd_text(cost.usd), "usd": str(cost.usd), "by": self._text(by), "why": None}
        if turn.answer is None:
            why = "no answer read"
        elif not turn.answer.usage:
            why = "no usage reported"
        else:
            source = self.prices or "genai-prices, which is not installed"
            host = urlsplit(turn.url).hostname or "?"
            why = f"{turn.answer.model or turn.model or 'no model'} at {host} is not priced by {source}"
        return {"text": "cost unknown", "usd": None, "by": None, "why": self._text(why)}

    def add_conversation(self, number: int, turns: list[Turn]) -> None:
        first = turns[0]
        title = ""
        if first.client_sent is not None:
            user = next((m for m in first.client_sent.messages if m.role == "user"), None)
            title = " ".join(p.text for p in user.parts if p.kind == "text") if user else ""
        self.conversations.append(
            {
                "n": number,
                "turns": [t.number for t in turns],
                "models": sorted({self._text(t.model) for t in turns if t.model}),
                "title": (self._text(title) or "")[:160],  # cut once redacted: a cut key is not recognised
                "cost": total_text([t.cost for t in turns]),
            }
        )
        self.costs += [t.cost for t in turns]

    def document(self, title: str, source: str) -> bytes:
        head = _dumps(
            {
                "title": title,
                "source": self._text(source),
                "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "version": __version__,
                "opaque": self.include_opaque,
                "convs": self.conversations,
                "cost": total_text(self.costs),
                "prices": self.prices,
            }
        )
        return b"".join(
            (
                head[:-1],
                b',"M":[',
                b",".join(self.messages.rows),
                b'],"R":[',
                b",".join(self.items.rows),
                b'],"S":[',
                b",".join(self.strings.rows),
                b'],"T":[',
                b",".join(self.turns),
                b"]}",
            )
        )


def _dumps(value: Any) -> bytes:
    """JSON for the page. orjson refuses a lone surrogate (in a redacted document, say): the standard library
    writes it escaped, which the browser reads."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def _usage(usage: Usage) -> dict[str, int] | None:
    if not usage:
        return None
    return {name: getattr(usage, name) for name in Usage.__slots__ if getattr(usage, name) is not None}


def usd_text(usd: Decimal) -> str:
    """Dollars to the cent from $1, to three significant digits below: $12.30, $0.0122, $0.000389."""
    if usd >= 1:
        return f"${usd:,.2f}"
    if usd == 0:
        return "$0"
    return f"${usd:.{max(2 - usd.adjusted(), 0)}f}"


def total_text(costs: list[Cost | None]) -> str:
    """What turns cost together, saying so when only some of them are known: an unknown cost is never zero."""
    known = [cost.usd for cost in costs if cost is not None]
    if not known:
        return "unknown"
    total = usd_text(sum(known, Decimal(0)))
    unknown = len(costs) - len(known)
    return f"at least {total} (cost of {unknown} of {len(costs)} turns unknown)" if unknown else total


def _counts(changes: Any) -> dict[str, int]:
    return {"added": changes.added, "removed": changes.removed, "merged": changes.merged}


def _diagnosis(turn: Turn, text) -> dict[str, Any] | None:
    d = turn.diagnosis
    if d is None:
        return None
    return {
        "rule": text(d.rule),
        "summary": text(d.summary),
        "provider": text(d.provider),
        "field": text(d.field),
        "message": text(d.message),
        "cause": text(d.cause),
        "advice": text(turn.advice),
    }


def _stand_in(doc: Any, values: set[str]) -> Any:
    if not values:
        return doc
    if isinstance(doc, dict):
        return {k: _stand_in(v, values) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_stand_in(v, values) for v in doc]
    if isinstance(doc, str) and doc in values:
        return opaque_stand_in(doc)
    return doc


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text("utf-8")


def write_page(data: bytes, title: str) -> bytes:
    """The HTML file: the data inside a JSON script element, where `</` would end it early and is escaped."""
    data = data.replace(b"</", b"<\\/").replace(b"<!--", b"<\\u0021--")
    page = _asset("page.html")
    before, after = page.split("{{DATA}}")
    fill = {
        "{{TITLE}}": html.escape(title),
        "{{CSP}}": CONTENT_SECURITY_POLICY,
        "{{CSS}}": _asset("page.css"),
        "{{JS}}": _asset("page.js").replace("</", "<\\/"),
    }
    for key, value in fill.items():
        before, after = before.replace(key, value), after.replace(key, value)
    return before.encode() + data + after.encode()
