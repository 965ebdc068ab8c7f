"""Entry point: `mitmdump -s addon/main.py` (or mitmweb), from any working directory."""

import importlib.util
import os
import sys
import types

PACKAGE = "llm_reasoning_proxy"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# mitmproxy puts a script's folder on sys.path and never takes it off; left
# there, our module names would shadow top-level modules for the whole process.
sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) != _PACKAGE_DIR]


def _load_package() -> types.ModuleType:
    """This folder as the package `llm_reasoning_proxy`, whether or not it is installed.

    mitmproxy re-runs this file when it changes: the package is loaded afresh each time, so that
    touching this file reloads every module of the addon.
    """
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    init = os.path.join(_PACKAGE_DIR, "__init__.py")
    spec = importlib.util.spec_from_file_location(PACKAGE, init, submodule_search_locations=[_PACKAGE_DIR])
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)
    return package


try:
    addons = _load_package().make_addons()
except ImportError as e:
    from llm_reasoning_proxy.shared.startup import MissingDependency, is_missing_dependency

    if not is_missing_dependency(e):  # a mistake in the addon itself: mitmproxy shows its traceback
        raise
    addons = [MissingDependency(e)]  # mitmproxy's standalone binaries, say: it says so in one line
