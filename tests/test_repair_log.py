"""Which repairs a `repaired` event lists: each once per conversation, then only counted."""

from __future__ import annotations

from llm_reasoning_proxy.request.repair_log import RepairMemory
from llm_reasoning_proxy.shared.limits import MAX_REMEMBERED_REPAIRS
from llm_reasoning_proxy.shared.records import RepairAction, summarize_actions

SCOPE = "api.githubcopilot.com:443 cred:0123456789abcdef"


def zed_turn(turn: int, conversation: str = "a") -> list[RepairAction]:
    """The repairs of turn `turn` of a Copilot conversation whose client drops reasoning_opaque and sends
    `content: []`: on every assistant message of the history, each answer's own tool call and response id."""
    actions = []
    for step in range(1, turn):
        index = 2 * step - 1
        location = f"messages[{index}]"
        actions.append(RepairAction("content_null", location, index))
        actions.append(
            RepairAction(
                "restored",
                location,
                index,
                ["reasoning_opaque", "reasoning_text"],
                tool_call_id=f"call_{conversation}{step}",
                response_id=f"resp_{conversation}{step}",
                via="id",
            )
        )
    return actions


def test_each_turn_lists_only_the_repairs_new_to_the_conversation() -> None:
    memory = RepairMemory()
    first = memory.sort(SCOPE, True, zed_turn(2))
    assert [(a.kind, a.location) for a in first.new] == [("content_null", "messages[1]"), ("restored", "messages[1]")]
    assert first.again == 0 and first.again_by_kind == {} and first.total == 2
    for turn in range(3, 201):
        sorted_ = memory.sort(SCOPE, True, zed_turn(turn))
        newest = f"messages[{2 * turn - 3}]"
        assert [(a.kind, a.location) for a in sorted_.new] == [("content_null", newest), ("restored", newest)]
        assert sorted_.again_by_kind == {"content_null": turn - 2, "restored": turn - 2}
        assert sorted_.again == 2 * (turn - 2) and sorted_.total == 2 * (turn - 1)
    assert len(memory) == 2 * 199


def test_the_summary_stays_short_however_long_the_session() -> None:
    memory = RepairMemory()
    for turn in range(2, 200):
        memory.sort(SCOPE, True, zed_turn(turn))
    summary = memory.sort(SCOPE, True, zed_turn(200)).summary()
    assert summary == (
        "content [] -> null on messages[397]; restored reasoning_opaque, reasoning_text on messages[397] "
        "(tool call call_a199); 396 earlier repairs again"
    )
    assert memory.sort(SCOPE, True, zed_turn(200)).summary() == "398 earlier repairs again"
    assert memory.sort(SCOPE, True, zed_turn(2)[1:]).summary() == "1 earlier repair again"


def test_a_request_sent_again_lists_nothing_and_counts_everything() -> None:
    memory = RepairMemory()
    memory.sort(SCOPE, True, zed_turn(5))
    again = memory.sort(SCOPE, True, zed_turn(5))
    assert again.new == [] and again.again == 8 and again.total == 8


def test_another_conversation_of_the_same_user_is_listed_in_full() -> None:
    """`content: []` made null carries no id of its own: the repairs at its index tell the conversations apart."""
    memory = RepairMemory()
    memory.sort(SCOPE, True, zed_turn(4, "a"))
    other = memory.sort(SCOPE, True, zed_turn(4, "b"))
    assert len(other.new) == 6 and other.again == 0


def test_a_repair_with_nothing_at_its_index_is_known_by_its_place() -> None:
    memory = RepairMemory()
    lone = [RepairAction("content_null", "messages[1]", 1)]
    assert len(memory.sort(SCOPE, True, lone).new) == 1
    assert memory.sort(SCOPE, True, lone).again_by_kind == {"content_null": 1}
    assert len(memory.sort(SCOPE, True, [RepairAction("content_null", "messages[3]", 3)]).new) == 1


def test_scope_and_repair_mode_are_part_of_what_a_repair_is() -> None:
    memory = RepairMemory()
    memory.sort(SCOPE, True, zed_turn(3))
    assert memory.sort("api.githubcopilot.com:443 cred:fedcba9876543210", True, zed_turn(3)).again == 0
    # What llm_repair=false said it would do is not what was done: once repair is on, it is listed.
    assert memory.sort(SCOPE, False, zed_turn(3)).again == 0
    assert memory.sort(SCOPE, False, zed_turn(3)).again == 4


def test_the_same_value_at_another_place_is_listed() -> None:
    memory = RepairMemory()
    restored = RepairAction("restored", "messages[1]", 1, ["reasoning_opaque"], tool_call_id="c", response_id="r")
    memory.sort(SCOPE, True, [restored])
    moved = RepairAction("restored", "messages[3]", 3, ["reasoning_opaque"], tool_call_id="c", response_id="r")
    assert len(memory.sort(SCOPE, True, [moved]).new) == 1


def test_the_memory_is_bounded_and_forgets_the_least_recently_seen() -> None:
    assert RepairMemory().size == MAX_REMEMBERED_REPAIRS == 65536  # as the README says
    memory = RepairMemory(size=4)
    old, active = zed_turn(2, "old"), zed_turn(2, "active")
    memory.sort(SCOPE, True, old)
    memory.sort(SCOPE, True, active)
    memory.sort(SCOPE, True, old)  # seen again: now the most recent
    memory.sort(SCOPE, True, zed_turn(2, "new"))
    assert len(memory) == 4
    assert memory.sort(SCOPE, True, old).again == 2
    assert memory.sort(SCOPE, True, active).again == 0  # forgotten: listed in full once more


def test_many_repairs_are_summarised_by_kind_and_fields_with_their_first_and_last_place() -> None:
    few = zed_turn(3)
    assert summarize_actions(few) == "; ".join(action.describe() for action in few)
    assert summarize_actions(zed_turn(5)) == (
        "content [] -> null on 4 places (messages[1] … messages[7]); restored reasoning_opaque, reasoning_text on 4 "
        "places (messages[1] … messages[7])"
    )
