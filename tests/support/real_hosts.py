"""A fake provider reached under the providers' real host names, through a regular (HTTPS-intercepting) proxy.

The fake (tests/support/fake_provider.py) is served over HTTPS with a certificate for api.openai.com,
api.anthropic.com and api.deepseek.com from a CA of its own; `mitmdump_options` tell mitmdump to send those hosts'
connections to it (tests/support/redirect_hosts.py) and to trust its CA. A client then needs nothing but a proxy
and mitmproxy's CA, as against the real providers.
"""

from __future__ import annotations

from pathlib import Path

from .fake_provider import FakeProvider
from .proxy import ROOT
from .tls_upstream import server_context

REDIRECT_SCRIPT = ROOT / "tests" / "support" / "redirect_hosts.py"
HOSTS = ("api.openai.com", "api.anthropic.com", "api.deepseek.com", "generativelanguage.googleapis.com")


class RealHostsFake(FakeProvider):
    """The fake provider over HTTPS, its certificate naming the providers' hosts."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.context, self.ca_file = server_context(folder, HOSTS)

    def start(self) -> RealHostsFake:
        super().start()
        assert self._server is not None
        self._server.socket = self.context.wrap_socket(self._server.socket, server_side=True)
        return self

    @property
    def address(self) -> str:
        """HOST:PORT on loopback."""
        return super().url.removeprefix("http://")

    @property
    def url(self) -> str:
        return f"https://{self.address}"

    def mitmdump_options(self) -> list[str]:
        """What makes a mitmdump in regular mode send the providers' hosts here, trusting this fake's CA."""
        return [
            "-s",
            str(REDIRECT_SCRIPT),
            "--set",
            f"redirect_to={self.address}",
            "--set",
            f"ssl_verify_upstream_trusted_ca={self.ca_file}",
        ]
