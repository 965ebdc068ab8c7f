"""Test-only mitmproxy script: connections for the providers' real host names go to a fake on loopback.

    mitmdump ... -s tests/support/redirect_hosts.py --set redirect_to=127.0.0.1:PORT

A client asks the proxy for api.openai.com, api.anthropic.com or api.deepseek.com as it would in use; mitmdump then
connects to the fake instead. The host name stays the connection's TLS server name and the requests' Host, so the
fake presents a certificate for those names (tests/support/real_hosts.py) from a CA mitmdump is told to trust
(`--set ssl_verify_upstream_trusted_ca=...`). Loaded by mitmdump on its own: it imports nothing from the tests.
"""

from __future__ import annotations

from mitmproxy import ctx
from mitmproxy.proxy import server_hooks

HOSTS = ("api.openai.com", "api.anthropic.com", "api.deepseek.com", "generativelanguage.googleapis.com")


class RedirectHosts:
    def load(self, loader) -> None:
        loader.add_option("redirect_to", str, "", "HOST:PORT that connections for the providers' hosts go to")

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if not ctx.options.redirect_to or data.server.address is None:
            return
        host, port = data.server.address[:2]
        if host in HOSTS:
            target_host, target_port = ctx.options.redirect_to.rsplit(":", 1)
            data.server.sni = data.server.sni or host
            data.server.address = (target_host, int(target_port))


addons = [RedirectHosts()]
