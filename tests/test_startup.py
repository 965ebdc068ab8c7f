"""addon/shared/startup.py: how the addon stops when it cannot start, and how it does not once mitmproxy runs."""

from __future__ import annotations

import pytest
from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.shared import startup
from mitmproxy import exceptions

from tests.support.addon_context import addon_context


class ScriptLoader:
    """What mitmproxy's script loader tells of itself: whether mitmproxy has finished starting up."""

    name = "scriptloader"

    def __init__(self, running: bool) -> None:
        self.is_running = running


def test_at_startup_a_bad_option_is_one_line_and_exit_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    config = make_addons()[0]
    with addon_context(config, ScriptLoader(running=False)) as tctx:
        with pytest.raises(SystemExit) as stop:
            tctx.configure(config, llm_cache="memory", llm_log="", llm_cache_max_age="banana")
    assert stop.value.code == 1
    message = "llm_cache_max_age: expected a positive duration such as 3600, 30m, 12h or 7d, got 'banana'"
    assert capsys.readouterr().err.splitlines()[-1].endswith(f": {message}")


def test_once_running_a_bad_option_is_an_options_error_which_mitmproxy_undoes() -> None:
    config = make_addons()[0]
    with addon_context(config, ScriptLoader(running=True)) as tctx:
        tctx.configure(config, llm_cache="memory", llm_log="")
        with pytest.raises(exceptions.OptionsError, match="llm_cache_max_age: expected a positive duration"):
            tctx.configure(config, llm_cache_max_age="banana")
        assert config.settings is not None and config.settings.cache == "memory"


def test_once_running_an_addon_that_cannot_load_raises_what_mitmproxy_logs() -> None:
    """Not an OptionsError: mitmproxy passes that one on while a script loads, which ends its reload watcher."""
    with addon_context(ScriptLoader(running=True)):
        with pytest.raises(startup.AddonNotLoaded, match="cannot import msgspec"):
            startup.MissingDependency(ModuleNotFoundError("No module named 'msgspec'", name="msgspec")).load(None)
        assert not issubclass(startup.AddonNotLoaded, exceptions.OptionsError)


@pytest.mark.parametrize(
    "error, missing",
    [
        (ModuleNotFoundError("No module named 'msgspec'", name="msgspec"), True),
        (ModuleNotFoundError("No module named 'ahocorasick.x'", name="ahocorasick.x"), True),
        # a mistake in the addon's own imports is shown as the traceback it is, not as an install problem
        (ModuleNotFoundError("...", name="llm_reasoning_proxy.nonexistent"), False),
        (ImportError("cannot import name 'x' from 'msgspec'", name="msgspec"), False),
    ],
)
def test_only_a_package_that_is_not_installed_is_a_missing_dependency(error: ImportError, missing: bool) -> None:
    assert startup.is_missing_dependency(error) is missing
