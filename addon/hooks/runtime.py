"""The addons' shared runtime, itself the addon that owns the llm_* options: the settings, and what they open (the
cache, the event log), and the repair plans and log lines that wait for their answers."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Optional

from mitmproxy import ctx, exceptions, http
from mitmproxy.addonmanager import Loader

from ..answer.tap import TapResult
from ..cache import CacheLimits, ReasoningStore, StoreError, open_store
from ..request.history import HistoryMemory
from ..request.plans import RepairPlan
from ..shared import compat
from ..shared.events import EventLog, Started
from ..shared.failopen import FailOpen, after_sending
from ..shared.redact import masked_logger
from ..shared.settings import OPTION_NAMES, OPTIONS, PROJECT, Settings, parse_settings
from ..shared.startup import refuse
from ..shared.version import __version__

logger = masked_logger(__name__)
_PLANS_KEPT = 1024


def unknown_llm_options(names: Iterable[str]) -> list[str]:
    """Option names that look like ours but are not: typos mitmproxy would ignore."""
    return sorted(n for n in names if n.startswith("llm_") and n not in OPTION_NAMES)


class Runtime:
    def __init__(self) -> None:
        # Plain attributes, not raising properties: mitmproxy getattr()s every
        # attribute of an addon while collecting its commands.
        self.settings: Settings | None = None
        self.store: ReasoningStore | None = None
        self.events = EventLog(None)
        # The plan of each recent repair (applied or, with llm_repair=false, not), until its answer came:
        # self-healing needs the entries it used, and explaining an error what the repair did or would have done;
        # neither belongs in flow metadata (they are not serialisable, and most are never needed).
        self._plans: OrderedDict[str, RepairPlan] = OrderedDict()
        # Lines about requests, written once their answers are in (say_when_answered), by flow id: (stage, writer).
        self._unsaid: OrderedDict[str, tuple[str, Callable[[], None]]] = OrderedDict()
        self._keep_bodies: bool | None = None
        # The last requests of each conversation, so that the next turn is read from where they ended.
        self.history = HistoryMemory()
        # Told of each answer the capture read (hooks/traces.py, hooks/metrics.py): with any, answers are assembled.
        self.answer_listeners: list[Callable[[http.HTTPFlow, TapResult], None]] = []
        self.whole_answers = False  # whether they want what an answer said, not only its model, usage and stop reason
        self.span_counts: object | None = None  # the traces' counts of spans sent and dropped (hooks/traces.py)

    @property
    def ready(self) -> bool:
        return self.settings is not None and self.store is not None

    def load(self, loader: Loader) -> None:
        # mitmproxy refuses a repeated single-value option while registering it and then drops the whole
        # addon without a word, so say it first.
        repeated = repeated_llm_options(getattr(ctx.options, "deferred", {}))
        if repeated:
            refuse(f"llm options set more than once: {'; '.join(repeated)}; set each once", loading=True)
        for spec in OPTIONS:
            loader.add_option(spec.name, Optional[str], spec.default, " ".join(spec.help.split()))

    def configure(self, updated: set[str]) -> None:
        try:
            self._configure(updated)
        except exceptions.OptionsError as e:
            refuse(str(e))

    def _configure(self, updated: set[str]) -> None:
        self._keep_bodies = None  # -w, hardump or llm_keep_bodies may have changed
        unknown = unknown_llm_options(getattr(ctx.options, "deferred", {}))
        if unknown:
            raise exceptions.OptionsError(
                f"unknown option(s) {', '.join(unknown)}; the llm addon knows {', '.join(sorted(OPTION_NAMES))}"
            )
        if self.settings is not None and not updated & OPTION_NAMES:
            return
        try:
            settings = parse_settings({name: getattr(ctx.options, name) for name in OPTION_NAMES})
        except ValueError as e:
            raise exceptions.OptionsError(str(e)) from e
        previous, self.settings = self.settings, settings
        self.history.clear()  # what was remembered was made under the settings before
        limits = CacheLimits(settings.cache_max_age, settings.cache_max_entries)
        if previous is None or (previous.cache, previous.cache_max_age, previous.cache_max_entries) != (
            settings.cache,
            settings.cache_max_age,
            settings.cache_max_entries,
        ):
            try:
                store = open_store(settings.cache, limits)
            except StoreError as e:
                self.settings = previous
                raise exceptions.OptionsError(f"llm_cache: {e}") from e
            if self.store is not None:
                self.store.close()
            self.store = store
        log_setup = (settings.log, settings.log_max_bytes, settings.log_backups)
        if previous is None or (previous.log, previous.log_max_bytes, previous.log_backups) != log_setup:
            try:
                events = EventLog(*log_setup)
            except OSError as e:
                self.settings = previous
                raise exceptions.OptionsError(f"llm_log: cannot open {settings.log}: {e}") from e
            events.listeners = self.events.listeners  # the metrics go on counting what the new log is given
            self.events.close()
            self.events = events

    def running(self) -> None:
        settings = self.settings
        assert settings is not None, "configure() runs before running()"
        logger.info("%s %s on %s, active: %s", PROJECT, __version__, compat.runtime(), settings.summary())
        self.events.write(Started(version=__version__, runtime=compat.runtime(), settings=settings.loggable()))

    def done(self) -> None:
        while self._unsaid:  # answers that never came: their requests' lines are written all the same
            flow_id, (stage, say) = self._unsaid.popitem(last=False)
            with FailOpen(flow_id, stage, self.events):
                say()
        self.history.clear()
        if self.store is not None:
            self.store.close()
            self.store = None
        self.events.close()
        self.settings = None

    def say_when_answered(self, flow_id: str, stage: str, say: Callable[[], None]) -> None:
        """Writes a request's lines once its answer is in (`answered`): against a provider that answers within a
        millisecond, as in a benchmark, writing them meanwhile would delay the answer. Past _PLANS_KEPT waiting, the
        oldest is written at once."""
        self._unsaid[flow_id] = (stage, say)
        while len(self._unsaid) > _PLANS_KEPT:
            oldest, (oldest_stage, oldest_say) = self._unsaid.popitem(last=False)
            after_sending(oldest, oldest_stage, self.events, oldest_say)

    def answered(self, flow_id: str, *, refused: bool) -> None:
        """Writes the lines waiting for a flow's answer: at once when the provider refused the request (before the
        line that explains why), else after the answer went on to the client."""
        waiting = self._unsaid.pop(flow_id, None)
        if waiting is None:
            return
        stage, say = waiting
        if refused:
            with FailOpen(flow_id, stage, self.events):
                say()
        else:
            after_sending(flow_id, stage, self.events, say)

    def remember_plan(self, flow_id: str, plan: RepairPlan) -> None:
        self._plans[flow_id] = plan
        while len(self._plans) > _PLANS_KEPT:
            self._plans.popitem(last=False)

    def recall_plan(self, flow_id: str) -> RepairPlan | None:
        """The repair plan of a flow, once: it is forgotten when recalled."""
        return self._plans.pop(flow_id, None)

    def keep_bodies(self) -> bool:
        """Whether flows are kept (a flow file, HAR or a UI), so what the proxy saw should be on them."""
        if self._keep_bodies is None:  # decided once per configuration, not per response
            assert self.settings is not None
            mode = self.settings.keep_bodies
            if mode != "auto":
                self._keep_bodies = mode == "true"
            else:
                options = ctx.options
                writing = bool(getattr(options, "save_stream_file", None)) or bool(getattr(options, "hardump", ""))
                self._keep_bodies = writing or ctx.master.addons.get("view") is not None
        return self._keep_bodies

    def reattach_streamed_bodies(self) -> bool:
        """Whether a streamed answer's body must be put back on its flow by the addon (mitmproxy 12 can keep it)."""
        return self.keep_bodies() and not compat.streamed_bodies_stored(ctx.options)


def repeated_llm_options(deferred: dict[str, object]) -> list[str]:
    """Our options given more than once with --set."""
    repeated = []
    for name, value in deferred.items():
        values = getattr(value, "val", None)
        if name in OPTION_NAMES and isinstance(values, list) and len(values) > 1:
            repeated.append(f"{name} ({', '.join(map(repr, values))})")
    return repeated
