"""Comparing two versions of a conversation (addon/transcripts/diff.py): the work it does stays bounded whatever the
messages, and a long history is still aligned message by message."""

from __future__ import annotations

from bisect import bisect_left
from difflib import SequenceMatcher

import pytest
from llm_reasoning_proxy.shared.limits import MAX_ALIGNMENT_STEPS
from llm_reasoning_proxy.transcripts.diff import compare
from llm_reasoning_proxy.wire.conversation import Message, Part


def user_messages(texts: list[str]) -> list[Message]:
    return [Message("user", [Part("text", text=text)], f"messages[{at}]") for at, text in enumerate(texts)]


@pytest.fixture
def matching_steps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions difflib's matcher looks at, counted as it goes: for each message of a range of the earlier
    version, every position of an equal message in the later one, up to the range's end (its inner loop). Past
    the bound the comparison is stopped there, so that a comparison that would take minutes fails at once."""
    steps = [0]
    find_longest_match = SequenceMatcher.find_longest_match

    def counted(self, alo=0, ahi=None, blo=0, bhi=None):
        ahi, bhi = len(self.a) if ahi is None else ahi, len(self.b) if bhi is None else bhi
        steps[0] += sum(1 + bisect_left(self.b2j.get(self.a[at], []), bhi) for at in range(alo, ahi))
        assert steps[0] <= MAX_ALIGNMENT_STEPS, f"the comparison took more than {MAX_ALIGNMENT_STEPS} steps"
        return find_longest_match(self, alo, ahi, blo, bhi)

    monkeypatch.setattr(SequenceMatcher, "find_longest_match", counted)
    return steps


def test_a_thousand_alike_messages_take_a_bounded_number_of_steps_and_pair_in_order(
    matching_steps: list[int],
) -> None:
    """One-word user messages: all "A" in one version, "A" and "C" in turn in the other (issue 27's capture, whose
    report took minutes: the matcher's work grows with the cube of their count)."""
    count = 999
    before = user_messages(["A"] * count)
    after = user_messages(["A" if at % 2 == 0 else "C" for at in range(count)])
    changes = compare(before, after)
    assert matching_steps[0] <= MAX_ALIGNMENT_STEPS
    # Each message shows once, the "C"s as what changed of the "A" in their place.
    assert len(changes.messages) == count
    assert changes.added == changes.removed == count // 2
    assert [[p.text for p in m.parts] for m in changes.messages[:3]] == [["A"], ["C", "A"], ["A"]]
    assert [[p.mark for p in m.parts] for m in changes.messages[1:2]] == [["restored", "removed"]]


def test_a_long_history_missing_one_message_is_aligned_not_paired_in_order(matching_steps: list[int]) -> None:
    """A turn of 1,500 distinct messages whose first one changed (a system prompt with today's date), one of which
    the client dropped, and a new one at the end: those three changes, not every message after the dropped one
    changed into the next."""
    texts = [f"message {at}" for at in range(1500)]
    before = user_messages(["Today is Monday.", *texts])
    after = user_messages(["Today is Tuesday.", *texts[:700], *texts[701:], "a new question"])
    changes = compare(before, after)
    assert (changes.added, changes.removed) == (2, 2)
    removed = [m for m in changes.messages if m.mark == "removed"]
    assert [m.parts[0].text for m in removed] == [texts[700]]
    assert matching_steps[0] < 10 * len(texts)  # distinct messages: a few steps each
