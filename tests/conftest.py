from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support import phoenix as phoenix_support  # noqa: E402
from tests.support.fake_provider import FakeProvider  # noqa: E402
from tests.support.proxy import MitmdumpProcess, reverse_proxy  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--install-recipes",
        action="store_true",
        help="also run the tests marked `install`: the README's install recipes in new environments (needs the "
        "package registry and a few minutes; .ci/run runs them)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--install-recipes"):
        return
    skip = pytest.mark.skip(reason="install recipes run with --install-recipes (as .ci/run does)")
    for item in items:
        if "install" in item.keywords:
            item.add_marker(skip)


def pytest_report_header() -> str:
    from llm_reasoning_proxy import __version__
    from llm_reasoning_proxy.shared import compat

    return f"llm-reasoning-proxy {__version__} on {compat.runtime()}"


@pytest.fixture(scope="session")
def fake() -> Iterator[FakeProvider]:
    provider = FakeProvider().start()
    yield provider
    provider.stop()


@pytest.fixture(scope="session")
def confdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mitmproxy configuration directory (and CA) for every proxy of the session."""
    return tmp_path_factory.mktemp("mitmproxy-conf")


@pytest.fixture(scope="session")
def proxy_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("proxy-state")


@pytest.fixture(scope="session")
def proxy(fake: FakeProvider, confdir: Path, proxy_state: Path) -> Iterator[MitmdumpProcess]:
    """A reverse proxy in front of the fake provider, with a SQLite cache and an event log."""
    process = reverse_proxy(fake.url, confdir, llm_cache=proxy_state / "cache.db", llm_log=proxy_state / "events.jsonl")
    with process:
        yield process


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[phoenix_support.PhoenixServer]:
    """One Arize Phoenix server for the session (skips when scripts/test could not install it); each test sends its
    spans to a project of its own (the resource attribute openinference.project.name) and reads that one back."""
    if not phoenix_support.installed():
        pytest.skip(phoenix_support.why_missing())
    with phoenix_support.PhoenixServer(tmp_path_factory.mktemp("phoenix")) as server:
        yield server


@pytest.fixture
def api_key() -> str:
    """A credential of its own per test, so tests never share a cache scope."""
    return f"sk-test-{uuid.uuid4().hex}"
