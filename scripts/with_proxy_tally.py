"""A mitmproxy script that scripts/with-proxy loads after the addon: it counts what went through the proxy.

It writes the counts as JSON to the file named by $WITH_PROXY_TALLY after every change, so with-proxy can say at
the end how many requests it saw (or that it saw none: the client ignored the proxy), how many the addon repaired
or recovered, and which hosts refused mitmproxy's certificate. Nothing here changes a flow.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from mitmproxy import http, tls

# The addon's entry on a flow (addon/shared/flow_meta.py): a dict for LLM traffic, with "repaired": True when it put
# reasoning state back and a "recovered" entry when it let a turn go on without it.
META = "llm"
RETRY_OF = "llm_retry_of"  # the addon's own second sending of a request (addon/hooks/retry.py): not the client's


class Tally:
    def __init__(self) -> None:
        path = os.environ.get("WITH_PROXY_TALLY")
        self.path = Path(path) if path else None
        self.counts: Counter[str] = Counter()
        self.refused_by: set[str] = set()  # hosts whose TLS handshake the client broke off: it distrusts the CA

    def http_connect(self, flow: http.HTTPFlow) -> None:
        self.counts["connects"] += 1
        self._write()

    def request(self, flow: http.HTTPFlow) -> None:
        """Counts a request once the addon, loaded before this script, has read and maybe repaired it."""
        if RETRY_OF in flow.metadata:
            return
        meta = flow.metadata.get(META)
        self.counts["requests"] += 1
        self.counts["llm"] += isinstance(meta, dict)
        # A turn the addon could only let go on without its reasoning is logged as repaired too: counted as recovered.
        recovered = isinstance(meta, dict) and isinstance(meta.get("recovered"), dict)
        self.counts["repaired"] += isinstance(meta, dict) and meta.get("repaired") is True and not recovered
        self._write()

    def response(self, flow: http.HTTPFlow) -> None:
        self._ended(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._ended(flow)

    def tls_failed_client(self, data: tls.TlsData) -> None:
        self.refused_by.add(data.conn.sni or "(no server name)")
        self._write()

    def _ended(self, flow: http.HTTPFlow) -> None:
        """Counts a recovered turn once its answer is in: the addon may recover it only after a refusal."""
        meta = flow.metadata.get(META)
        if RETRY_OF not in flow.metadata and isinstance(meta, dict) and isinstance(meta.get("recovered"), dict):
            self.counts["recovered"] += 1
            self._write()

    def _write(self) -> None:
        """Replaces the file whole, so a reader never sees half of it."""
        if self.path is None:
            return
        try:
            partial = self.path.with_suffix(".partial")
            partial.write_text(json.dumps({**self.counts, "refused_by": sorted(self.refused_by)}))
            os.replace(partial, self.path)
        except OSError:  # counting must never stand in the traffic's way
            pass


addons = [Tally()]
