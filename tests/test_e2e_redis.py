"""End to end: proxies sharing one Redis cache, and a Redis that goes away and comes back."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from llm_reasoning_proxy.cache import redis_store

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess, reverse_proxy, start_failure
from tests.support.redis_server import RedisServer
from tests.support.turns import TOOLS, client, first_turn, history_as_sent, second_turn

pytestmark = pytest.mark.e2e

GEMINI = "gemini-3-pro-preview"
ANSWER = "The directory holds two files."


def redis_proxy(fake: FakeProvider, confdir: Path, url: str, log: Path) -> MitmdumpProcess:
    return reverse_proxy(fake.url, confdir, llm_cache=url, llm_log=log)


def turn_two(fake: FakeProvider, base_url: str, api_key: str) -> list[dict]:
    """Turn 1 through `base_url`; the history a client that drops the opaque sends next."""
    turn = first_turn(client(base_url, api_key), GEMINI, stream=True)
    assert turn["reasoning_opaque"] == fake.issued[turn["tool_calls"][0]["id"]]["reasoning_opaque"]
    return history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=[])


def events(log: Path, kind: str) -> list[dict]:
    return [e for e in map(json.loads, log.read_text().splitlines()) if e["kind"] == kind]


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of this test's own, which the test may stop and start."""
    server = RedisServer(tmp_path / "redis")
    server.workdir.mkdir()
    yield server
    server.stop()


@pytest.mark.slow
def test_turn_two_through_another_proxy_is_repaired_from_the_shared_redis(
    fake: FakeProvider, confdir: Path, tmp_path: Path, redis_server: RedisServer, api_key: str
) -> None:
    url = redis_server.url()
    with (
        redis_proxy(fake, confdir, url, tmp_path / "first.jsonl") as first,
        redis_proxy(fake, confdir, url, tmp_path / "second.jsonl") as second,
    ):
        messages = turn_two(fake, first.url, api_key)
        # The first proxy commits turn 1 just after its client has the last byte; the second proxy knows nothing
        # of that moment, so turn 2 goes to it once the first has logged the capture (logged once committed).
        call_id = messages[1]["tool_calls"][0]["id"]
        captured = LogTail(tmp_path / "first.jsonl", whole=True).wait_for(
            "captured", where=lambda e: call_id in [c["id"] for c in e["tool_calls"]]
        )
        assert captured and captured[0]["stored"] is True
        assert second_turn(client(second.url, api_key), GEMINI, messages, stream=True) == ANSWER
        sent = fake.last().doc["messages"][1]
        assert sent["reasoning_opaque"] == fake.issued[sent["tool_calls"][0]["id"]]["reasoning_opaque"]
        # Another credential gets nothing from the shared cache.
        with pytest.raises(openai.BadRequestError, match="thought_signature"):
            second_turn(client(second.url, api_key + "-other"), GEMINI, messages, stream=False)
        assert "redis://127.0.0.1" in first.output  # the active line names the backend
    assert events(tmp_path / "first.jsonl", "captured") and not events(tmp_path / "first.jsonl", "repaired")
    assert events(tmp_path / "second.jsonl", "repaired")


@pytest.mark.slow
def test_redis_outage_forwards_unchanged_and_recovers(
    fake: FakeProvider, confdir: Path, tmp_path: Path, own_redis: RedisServer, api_key: str
) -> None:
    log = tmp_path / "events.jsonl"
    own_redis.start()
    with redis_proxy(fake, confdir, own_redis.url(), log) as proxy:
        messages = turn_two(fake, proxy.url, api_key)
        own_redis.stop()
        body = json.dumps({"model": GEMINI, "messages": messages, "tools": TOOLS}).encode()
        headers = {"authorization": f"Bearer {api_key}", "content-type": "application/json"}
        # The provider's own 400 comes back; the proxy neither fails nor hangs on Redis (the client's 30 s
        # timeout is the only hang guard: how fast a round trip is depends on the machine, not on the proxy).
        for _ in range(3):
            answer = httpx.post(f"{proxy.url}/v1/chat/completions", content=body, headers=headers, timeout=30)
            assert answer.status_code == 400 and "invalid request body" in answer.text  # content: [] as sent
            assert fake.last().body == body  # forwarded byte for byte
        assert httpx.post(f"{proxy.url}/v1/telemetry", content=b"{}", timeout=30).status_code < 500
        skipped = [e["reason"] for e in events(log, "skipped")]  # written in the request hook: all there
        assert skipped and all("reasoning cache unavailable" in reason for reason in skipped)
        # A stopped Redis refuses the connection, which fails at once: no request waited out a timeout on it.
        assert not any("timeout" in reason.lower() or "timed out" in reason.lower() for reason in skipped), skipped
        assert not events(log, "failure")
        proxy.wait_for_line("is unavailable (")  # the outage warning; each flow says it at info

        own_redis.start()  # empty: it kept nothing
        time.sleep(redis_store.LONGEST_PAUSE + 0.5)  # whatever pause the outage reached has ended
        messages = turn_two(fake, proxy.url, api_key)
        assert second_turn(client(proxy.url, api_key), GEMINI, messages, stream=False) == ANSWER
        proxy.wait_for_line("is back")
    # Stopped: the output is complete. One outage, said once.
    assert proxy.output.count("is unavailable (") == 1 and proxy.output.count("is back") == 1, proxy.output
    assert events(log, "repaired")


@pytest.mark.slow
def test_proxy_starts_while_redis_is_down_and_uses_it_once_up(
    fake: FakeProvider, confdir: Path, tmp_path: Path, own_redis: RedisServer, api_key: str
) -> None:
    with redis_proxy(fake, confdir, own_redis.url(), tmp_path / "events.jsonl") as proxy:
        assert "is unavailable" in proxy.output  # said at startup, and the proxy runs all the same
        turn = first_turn(client(proxy.url, api_key), GEMINI, stream=False)  # answered, not cached
        assert turn["tool_calls"]
        own_redis.start()
        time.sleep(redis_store.LONGEST_PAUSE + 0.5)
        messages = turn_two(fake, proxy.url, api_key)
        assert second_turn(client(proxy.url, api_key), GEMINI, messages, stream=True) == ANSWER


@pytest.mark.slow
def test_a_wrong_redis_password_stops_mitmdump_with_a_clear_error(
    fake: FakeProvider, confdir: Path, tmp_path: Path
) -> None:
    (tmp_path / "redis").mkdir()
    with RedisServer(tmp_path / "redis", password="s3cret-pw") as server:
        proxy = redis_proxy(fake, confdir, server.url(password="wrong-pw"), tmp_path / "events.jsonl")
        with pytest.raises(RuntimeError, match="mitmdump exited with 1"):
            proxy.start()
    assert "llm_cache: Redis at redis://:***@127.0.0.1:" in proxy.output
    assert "refused the credentials" in proxy.output and "wrong-pw" not in proxy.output


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis that speaks only TLS, with a certificate from a CA of the test's own."""
    (tmp_path / "tls-redis").mkdir()
    server = RedisServer(tmp_path / "tls-redis", tls=True)
    yield server.start()
    server.stop()


def refused_at_startup(fake: FakeProvider, confdir: Path, url: str, log: Path) -> str:
    """The one line a mitmdump that refuses to start with this cache says about it."""
    code, output = start_failure(redis_proxy(fake, confdir, url, log))
    assert code == 1, output
    said = [line for line in output.splitlines() if "llm_cache:" in line]
    assert len(said) == 1 and "is unavailable" not in output and "Traceback" not in output, output
    return said[0]


@pytest.mark.slow
def test_a_redis_certificate_the_proxy_does_not_trust_stops_mitmdump_and_its_ca_in_the_url_mends_it(
    fake: FakeProvider, confdir: Path, tmp_path: Path, tls_redis: RedisServer, api_key: str
) -> None:
    """Configuration, as a wrong password is: no wait mends it, so it is said at startup, not taken for an outage."""
    said = refused_at_startup(fake, confdir, tls_redis.url(), tmp_path / "refused.jsonl")
    assert f"llm_cache: Redis at {tls_redis.url()}: its TLS certificate is not trusted" in said
    assert "?ssl_ca_certs=" in said  # and how to name a private CA
    url = f"{tls_redis.url()}?ssl_ca_certs={tls_redis.ca_file}"
    with redis_proxy(fake, confdir, url, tmp_path / "events.jsonl") as proxy:
        messages = turn_two(fake, proxy.url, api_key)
        assert second_turn(client(proxy.url, api_key), GEMINI, messages, stream=True) == ANSWER
    assert "is unavailable" not in proxy.output
    with tls_redis.client() as admin:
        assert admin.keys("llm-reasoning-proxy:*")  # the capture went to the TLS Redis


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["redis", "rediss"])
def test_a_redis_url_whose_scheme_the_server_does_not_speak_stops_mitmdump(
    fake: FakeProvider, confdir: Path, tmp_path: Path, tls_redis: RedisServer, own_redis: RedisServer, scheme: str
) -> None:
    """redis:// at a TLS port, rediss:// at a plain one: each stops mitmdump with one line. Only a server that is not
    there at all is an outage, which the proxy starts through."""
    if scheme == "redis":
        server, url, said = tls_redis, f"redis://127.0.0.1:{tls_redis.port}/0", "the server expects TLS; use rediss://"
    else:
        own_redis.start()
        server, url, said = own_redis, f"rediss://127.0.0.1:{own_redis.port}/0", "does not speak TLS; use redis://"
    assert said in refused_at_startup(fake, confdir, url, tmp_path / "refused.jsonl")
    server.stop()
    with redis_proxy(fake, confdir, url, tmp_path / "events.jsonl") as proxy:
        assert "is unavailable" in proxy.output
