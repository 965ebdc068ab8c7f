"""End to end: a shared Redis that restarts empty or evicts keys costs misses, never another account's reasoning."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess, reverse_proxy
from tests.support.redis_server import RedisServer
from tests.support.turns import client, first_turn, history_as_sent, second_turn

pytestmark = pytest.mark.e2e

GEMINI = "gemini-3-pro-preview"  # Copilot serving Gemini: a reasoning_opaque it did not issue is refused
ANSWER = "The directory holds two files."


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of this test's own, which the test may restart and squeeze."""
    workdir = tmp_path / "redis"
    workdir.mkdir()
    with RedisServer(workdir) as server:
        yield server


def proxy(fake: FakeProvider, confdir: Path, url: str, log: Path) -> MitmdumpProcess:
    return reverse_proxy(fake.url, confdir, llm_cache=url, llm_log=log)


def conversation(first: MitmdumpProcess, first_log: Path, second: MitmdumpProcess, api_key: str) -> bool:
    """Turn 1 through `first`, then, once `first` has stored its capture or said why not, turn 2 through `second`
    from a client that drops the reasoning: whether turn 2 was answered (a cache miss is the provider's 400)."""
    written = LogTail(first_log)
    turn = first_turn(client(first.url, api_key, parallel=PARALLEL_CALLS), GEMINI, stream=False)
    written.wait(lambda events: any(e["kind"] in ("captured", "failure") for e in events), what="the capture")
    messages = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=None)
    try:
        return second_turn(client(second.url, api_key), GEMINI, messages, stream=False) == ANSWER
    except openai.BadRequestError:
        return False


def until_it_reaches_redis(proxy_process: MitmdumpProcess, log: Path) -> None:
    """Sends lookups (turn 2 of a conversation nobody had: nothing is written) through a proxy until it reaches Redis
    again: a proxy that found Redis gone lets it be for a short pause before it tries again."""
    call = {"id": f"call_{uuid.uuid4().hex[:20]}", "type": "function"}
    call["function"] = {"name": "list_directory", "arguments": '{"path": "probe"}'}
    messages = history_as_sent({"tool_calls": [call]}, drop=(), content=None)
    deadline = time.monotonic() + 60
    while True:
        tail = LogTail(log)
        try:
            second_turn(client(proxy_process.url, f"sk-probe-{uuid.uuid4().hex}"), GEMINI, messages, stream=False)
        except openai.BadRequestError:
            pass  # the provider's 400 for the missing value: the lookup was made
        if not any("cache unavailable" in event.get("reason", "") for event in tail.events("skipped")):
            return
        assert time.monotonic() < deadline, "the proxy never reached the restarted Redis"


def foreign_reasoning(fake: FakeProvider, api_key: str) -> list[str]:
    """The reasoning values that requests made with `api_key` carried to the provider but that no answer to a request
    made with it ever issued: another account's."""
    requests = fake.find("authorization", f"Bearer {api_key}")
    issued = [bytes(request.sent) for request in requests]
    carried = [
        message["reasoning_opaque"]
        for request in requests
        if isinstance(request.doc, dict)
        for message in request.doc.get("messages", [])
        if message.get("role") == "assistant" and "reasoning_opaque" in message
    ]
    return [value for value in carried if not any(value.encode() in answer for answer in issued)]


@pytest.mark.slow
def test_a_redis_restarted_empty_never_sends_one_accounts_reasoning_with_another(
    fake: FakeProvider, confdir: Path, tmp_path: Path, own_redis: RedisServer
) -> None:
    accounts = [f"sk-test-{uuid.uuid4().hex}" for _ in range(2)]
    url = own_redis.url()
    log = tmp_path / "a.jsonl"
    with proxy(fake, confdir, url, log) as a, proxy(fake, confdir, url, tmp_path / "b.jsonl") as b:
        # Account 1's turn 2 goes through B, which keeps the record it read from Redis.
        assert conversation(a, log, b, accounts[0])
        own_redis.stop()
        own_redis.start()  # without its data
        for process, process_log in ((a, log), (b, tmp_path / "b.jsonl")):
            until_it_reaches_redis(process, process_log)
        # Account 2's capture is the first record written to the empty Redis.
        repaired = conversation(a, log, b, accounts[1])
    for api_key in accounts:
        assert not foreign_reasoning(fake, api_key)
    assert repaired  # nothing of account 2 was lost: its turn 2 is repaired from the restarted Redis


# Each eviction policy a team might set, under a squeeze that evicts keys every few turns. Each turn 1 makes 32
# parallel tool calls, so its record holds 32 calls and 64 keys lead to it: a few KB, past which much is evicted at
# once, next to Redis's own memory, which moves by tens of KB with its clients' buffers. (The volatile policies and
# noeviction never evicted the counter that record ids once came from, which had no expiry: they cost misses only.)
POLICIES = ["allkeys-random", "allkeys-lru", "volatile-lru", "noeviction"]
PARALLEL_CALLS = "32"
SQUEEZE = 96 * 1024  # bytes of room past what Redis uses once both proxies are connected and have written
CONVERSATIONS = 60


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
def test_redis_evicting_keys_never_sends_one_accounts_reasoning_with_another(
    fake: FakeProvider, confdir: Path, tmp_path: Path, own_redis: RedisServer, policy: str
) -> None:
    accounts = [f"sk-test-{uuid.uuid4().hex}" for _ in range(2)]
    url = own_redis.url()
    log = tmp_path / "a.jsonl"
    answered = []
    with proxy(fake, confdir, url, log) as a, proxy(fake, confdir, url, tmp_path / "b.jsonl") as b:
        answered += [conversation(a, log, b, account) for account in accounts]
        with own_redis.client() as admin:
            admin.config_set("maxmemory", int(admin.info("memory")["used_memory"]) + SQUEEZE)
            admin.config_set("maxmemory-policy", policy)
        # In an order of no period: a record id a counter hands out again then names another account's record as
        # often as its own, wherever the counter starts again.
        order = random.Random(0).choices(accounts, k=CONVERSATIONS)
        answered += [conversation(a, log, b, account) for account in order]
        assert a.returncode is None and b.returncode is None
    with own_redis.client() as admin:
        evicted = admin.info("stats")["evicted_keys"]
    print(f"{policy}: {sum(answered)} of {len(answered)} second turns repaired, {evicted} keys evicted")
    for api_key in accounts:
        assert not foreign_reasoning(fake, api_key)
    if policy == "noeviction":  # a write past the limit is refused: the capture fails and says so, traffic goes on
        assert any("maxmemory" in e["error"] for e in LogTail(log, whole=True).events("failure"))
    else:
        assert evicted  # the squeeze did evict
