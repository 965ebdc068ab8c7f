"""The mitmproxy addons (what `make_addons()` returns) and what only they use."""
