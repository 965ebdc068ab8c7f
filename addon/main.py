"""Entry point: `mitmdump -s addon/main.py` (or mitmweb), from any working directory."""

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_PACKAGE_DIR)

# mitmproxy puts a script's folder on sys.path and never takes it off; left
# there, our module names would shadow top-level modules for the whole process.
sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) != _PACKAGE_DIR]
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# mitmproxy re-runs this file when it changes; drop the cached package so that
# touching this file reloads every module of the addon.
for _name in [m for m in sys.modules if m == "addon" or m.startswith("addon.")]:
    del sys.modules[_name]

from addon import make_addons  # noqa: E402
from addon.proxy_config import repeated_llm_options  # noqa: E402


def _check_options() -> None:
    from mitmproxy import ctx, exceptions

    try:
        deferred = ctx.options.deferred
    except AttributeError:  # imported outside a running mitmproxy
        return
    repeated = repeated_llm_options(deferred)
    if repeated:
        # An exception here is logged as a script error, which stops mitmdump at startup.
        raise exceptions.OptionsError(f"llm options set more than once: {'; '.join(repeated)}; set each once")


_check_options()
addons = make_addons()
