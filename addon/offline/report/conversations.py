"""Turns grouped into conversations, and what changed from each turn of a conversation to the next.

Two turns belong to one conversation when the later one's history holds something the earlier one's answer said
(`message_links`: a tool call it made, by id, or its text).
"""

from __future__ import annotations

from ...transcripts.diff import compare
from ...wire.conversation import Message, message_links
from .turns import Turn


def group(turns: list[Turn]) -> list[list[Turn]]:
    """The conversations among `turns` (in order), each a list of its turns in order; sets `turn.conversation`."""
    parent = list(range(len(turns)))
    links: dict[int, list[tuple[str, str]]] = {}  # by message: a history's messages are shared between its turns

    def links_of(message: Message) -> list[tuple[str, str]]:
        found = links.get(id(message))
        if found is None:
            found = links[id(message)] = message_links(message)
        return found

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    issued: dict[tuple[str, str], int] = {}
    for position, turn in enumerate(turns):
        if turn.client_sent is not None:
            for message in turn.client_sent.messages:
                for link in links_of(message):
                    earlier = issued.get(link)
                    if earlier is not None:
                        a, b = root(earlier), root(position)
                        parent[max(a, b)] = min(a, b)
        if turn.answer is not None:
            for message in turn.answer.messages:
                for link in message_links(message):
                    issued.setdefault(link, position)
    groups: dict[int, list[Turn]] = {}
    for position, turn in enumerate(turns):
        groups.setdefault(root(position), []).append(turn)
    conversations = list(groups.values())
    for number, conversation in enumerate(conversations, 1):
        previous = None
        for turn in conversation:
            turn.conversation = number
            if previous is not None:
                turn.since = since_previous(previous, turn)
            previous = turn
    return conversations


def since_previous(previous: Turn, turn: Turn):
    """`turn`'s history against what the previous turn sent and was answered: new messages, and what the client
    dropped (reasoning the provider issued, above all)."""
    if previous.client_sent is None or turn.client_sent is None:
        return None
    expected = previous.client_sent.messages + (previous.answer.messages if previous.answer is not None else [])
    return compare(expected, turn.client_sent.messages, added="new", removed="dropped")
