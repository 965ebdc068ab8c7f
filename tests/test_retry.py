"""Unit tests of what the retry after a refusal decides (addon/hooks/retry.py) and how a recovery is told."""

from __future__ import annotations

import json

import pytest
from llm_reasoning_proxy.hooks.retry import refused_places, retry_body
from llm_reasoning_proxy.shared.events import Recovered, recovery_summary
from llm_reasoning_proxy.shared.flow_meta import META, recovered_of
from llm_reasoning_proxy.shared.records import RepairAction
from llm_reasoning_proxy.wire import RepairContext
from mitmproxy.test import tflow


@pytest.mark.parametrize(
    ("kind", "location", "expected"),
    [
        ("invalid", "messages[3]", [3]),
        ("foreign", "input[12]", [12]),
        ("not_found", None, None),  # a refused value the error names no place of: every item's goes
        ("missing", "messages[3]", None),  # a rule the check did not foresee: no reasoning state at all
        ("orphaned", "input[0]", [0]),
    ],
)
def test_refused_places(kind: str, location: str | None, expected: list[int] | None) -> None:
    assert refused_places(kind, location) == expected


class _Format:
    """A wire format whose recovery takes out the `state` key of the refused items."""

    def __init__(self) -> None:
        self.asked: list[list[int] | None] = []

    def recover(self, doc, context, refused):
        self.asked.append(refused)
        actions = []
        for index in refused if refused is not None else range(len(doc["items"])):
            if doc["items"][index].pop("state", None) is not None:
                actions.append(RepairAction("recovered", f"items[{index}]", index, ["state"], rule="r"))
        return actions


CONTEXT = RepairContext(path="/v1/turns", model="m")


def test_retry_body_takes_out_what_was_refused() -> None:
    body = json.dumps({"items": [{"state": "a"}, {"state": "b"}]}).encode()
    wire_format = _Format()
    made = retry_body(wire_format, body, CONTEXT, [1])
    assert made is not None
    sent, actions = made
    assert json.loads(sent) == {"items": [{"state": "a"}, {}]}
    assert [a.location for a in actions] == ["items[1]"] and wire_format.asked == [[1]]


@pytest.mark.parametrize("body", [b'{"items": [{}]}', b"not json", b'{"items": [{"state": 1}'])
def test_no_retry_without_a_change_or_a_body(body: bytes) -> None:
    assert retry_body(_Format(), body, CONTEXT, None) is None


def test_a_recovery_is_told_the_same_from_the_event_and_the_flow() -> None:
    event = Recovered(
        host="h", url="u", wire_format="f", how="retry", rule="r", removed=["messages[1]: thinking"], first_status=400
    )
    told = recovery_summary("retry", "r", ["messages[1]: thinking"], 400)
    assert event.summary() == told and told.startswith("sent again after its 400 (r): messages[1]: thinking")
    flow = tflow.tflow()
    assert recovered_of(flow) is None
    flow.metadata[META] = {"recovered": event.model_dump(include={"how", "rule", "removed", "first_status"})}
    assert recovered_of(flow) == told
    before = recovery_summary("before", "r", [], None)
    assert before.startswith("changed before sending (r): nothing removed")
