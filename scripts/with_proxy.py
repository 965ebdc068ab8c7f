"""scripts/with-proxy [MITMDUMP OPTIONS...] -- CLIENT [ARGS...]: runs CLIENT with its traffic through the proxy.

Starts `mitmdump -s addon/main.py` on a free loopback port, with the state `scripts/run` uses (the addon's default
cache and event log), and runs CLIENT with every variable its runtime reads for a proxy and for trust: the proxy
variables, a CA bundle (the system's roots plus mitmproxy's CA) under each name a runtime reads one, and for Node a
preload that puts fetch and the http/https modules through the proxy on versions that ignore proxy variables. When
the client exits, the proxy stops, a one-line summary goes to stderr, and with-proxy exits with the client's status.

MITMDUMP OPTIONS go to mitmdump (`-w session.mitm`, `--set llm_log=...`, another `-s`), except these of its own:
  --show-proxy-log        mitmdump's output on stderr as well as in the log file
  --install-node-agent    installs the Node preload's pinned undici now (alone; with-proxy does it on first use)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADDON = ROOT / "addon" / "main.py"
TALLY = ROOT / "scripts" / "with_proxy_tally.py"
PRELOAD = ROOT / "scripts" / "with_proxy_preload.js"
MITMDUMP = Path(sys.executable).with_name("mitmdump")
# The npm undici whose EnvHttpProxyAgent the preload makes fetch's global dispatcher: the 6.x line, as Node 20 and
# 22 bundle (their fetch takes a dispatcher of that line). Installed into the checkout, never globally.
UNDICI = "6.29.1"
NODE_PACKAGES = ROOT / ".with-proxy-node"
# Where Linux distributions and macOS keep the system's trusted roots as one PEM file.
SYSTEM_ROOTS = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem")
# Each variable a runtime reads a CA bundle from; every one gets the bundle with-proxy writes. A file one already
# names (a corporate CA, say) goes into that bundle: hosts the client reaches directly (NO_PROXY) still need it.
TRUST_VARIABLES = (
    "SSL_CERT_FILE",  # OpenSSL: Python's ssl (httpx, openai, anthropic), curl, Go, Rust (Codex), Bun
    "REQUESTS_CA_BUNDLE",  # requests, which reads certifi's bundle otherwise
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",  # Node and Bun: added to their built-in roots
    "CODEX_CA_CERTIFICATE",  # Codex
    "GIT_SSL_CAINFO",
    "AWS_CA_BUNDLE",  # boto3 and the AWS CLI (Bedrock)
    "PIP_CERT",
    "HTTPLIB2_CA_CERTS",  # httplib2 (older Google API clients)
    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",  # gRPC
    "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",  # gcloud
    "NIX_SSL_CERT_FILE",
    "DENO_CERT",
)
LOOPBACK = ("localhost", "127.0.0.1", "::1")
LISTENING = re.compile(r"HTTP\(S\) proxy listening at \S*?:(\d+)")
ACTIVE = " active: "  # in the addon's startup line, once its `running` hook has run
START_SECONDS = 60.0  # generous: only reached when something is wrong
STOP_SECONDS = 10.0  # a clean stop closes the cache and the flow file; after this long it is killed
LOGS_KEPT = 20
OWN_FLAGS = ("--show-proxy-log", "--install-node-agent")


class UsageError(Exception):
    pass


def split_arguments(argv: list[str]) -> tuple[list[str], list[str]]:
    """MITMDUMP OPTIONS and CLIENT [ARGS...], on either side of the first `--`."""
    if "--" not in argv:
        raise UsageError("no client: put it after --, e.g. scripts/with-proxy -- opencode")
    at = argv.index("--")
    options, client = argv[:at], argv[at + 1 :]
    if not client:
        raise UsageError("no client after --")
    return options, client


def state_dir() -> Path:
    """The addon's default state folder (addon/shared/settings.py): where scripts/run keeps the cache and log."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "llm-reasoning-proxy"


def new_log_path(state: Path) -> Path:
    """An owner-only file for this run's mitmdump output; only the newest LOGS_KEPT runs' logs are kept."""
    folder = state / "with-proxy"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for old in sorted(folder.glob("*.log"))[: -(LOGS_KEPT - 1)]:
        with contextlib.suppress(OSError):
            old.unlink()
    path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600))
    return path


def mitmproxy_confdir(options: list[str]) -> Path:
    """Where mitmdump keeps its CA: ~/.mitmproxy, or the last `--set confdir=...` among the options."""
    confdir = "~/.mitmproxy"
    for option in options:  # "--set", "confdir=DIR" or "--set=confdir=DIR"
        if option.removeprefix("--set=").startswith("confdir="):
            confdir = option.removeprefix("--set=").removeprefix("confdir=")
    return Path(os.path.expanduser(confdir))


def redactor():
    """The addon's redactor for mitmdump's output lines (URLs may carry a key=), or none if it cannot load."""
    try:
        from llm_reasoning_proxy.shared.redact import redact_text
    except Exception:  # the venv lacks the project: lines are written as mitmdump printed them
        return lambda line: line
    return redact_text


def keep_alive_only_with_parent() -> None:
    """Runs in mitmdump's process before it starts: if with-proxy dies without stopping it (SIGKILL), Linux sends it
    SIGTERM (prctl PR_SET_PDEATHSIG, https://man7.org/linux/man-pages/man2/prctl.2.html)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except Exception:  # not Linux: stopping it on every other way out has to do
        pass


class Proxy:
    """mitmdump with the addon and the tally, in a session of its own (a Ctrl-C in the terminal is for the client),
    its output going to a log file."""

    def __init__(self, options: list[str], scratch: Path, log_path: Path, echo: bool) -> None:
        self.command = [
            str(MITMDUMP),
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            "0",
            "-s",
            str(ADDON),
            "-s",
            str(TALLY),
            *options,  # after ours: the user's win, as with scripts/run
        ]
        self.tally_file = scratch / "tally.json"
        self.log_path = log_path
        self.echo = echo
        self.port: int | None = None
        self.lines: list[str] = []
        self._active = False
        self._ready = threading.Event()  # listening with the addon active, or output ended
        self._process: subprocess.Popen[str] | None = None
        self._drain: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
            preexec_fn=keep_alive_only_with_parent,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "WITH_PROXY_TALLY": str(self.tally_file)},
        )
        self._drain = threading.Thread(target=self._copy_output, daemon=True)
        self._drain.start()

    def _copy_output(self) -> None:
        """Copies mitmdump's output, redacted, to the log (and stderr), noting the port and the addon's start."""
        assert self._process is not None and self._process.stdout is not None
        redact = redactor()
        with open(self.log_path, "a", encoding="utf-8") as log:
            for raw in self._process.stdout:
                line = redact(raw.rstrip("\n"))
                self.lines.append(line)
                log.write(line + "\n")
                log.flush()
                if self.echo:
                    print(line, file=sys.stderr, flush=True)
                if self.port is None and (match := LISTENING.search(line)):
                    self.port = int(match.group(1))
                self._active = self._active or ACTIVE in line
                if self.port is not None and self._active:
                    self._ready.set()
        self._ready.set()

    def wait_until_ready(self) -> None:
        """Returns once mitmdump listens with the addon active; raises with its output if it stopped first."""
        if not self._ready.wait(START_SECONDS) or self.port is None or not self._active:
            output = "\n".join(self.lines[-20:])
            raise RuntimeError(f"mitmdump did not start (its log: {self.log_path}):\n{output}")

    def stop(self) -> None:
        """SIGTERM (a clean exit closes the cache and any -w file), SIGKILL if that takes too long; waits for it."""
        if self._process is None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_SECONDS), (signal.SIGKILL, START_SECONDS)):
            if self._process.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(wait)
        if self._drain is not None:
            self._drain.join(STOP_SECONDS)

    def tally(self) -> dict:
        """What went through it (scripts/with_proxy_tally.py); empty if it counted nothing."""
        try:
            return json.loads(self.tally_file.read_text())
        except (OSError, ValueError):
            return {}


def wait_for_file(path: Path, proxy: Proxy) -> None:
    """mitmdump writes its CA on first start, before it listens; this only guards against a slow file system."""
    deadline = time.monotonic() + START_SECONDS
    while not path.is_file():
        if time.monotonic() > deadline:
            raise RuntimeError(f"mitmdump wrote no CA certificate at {path} (its log: {proxy.log_path})")
        time.sleep(0.05)


def system_roots() -> Path | None:
    """The operating system's trusted roots as one PEM file; certifi's only where the system has none."""
    candidates = [*SYSTEM_ROOTS, ssl.get_default_verify_paths().cafile]
    found = next((Path(c) for c in candidates if c and Path(c).is_file()), None)
    if found is not None:
        return found
    try:
        import certifi
    except ImportError:
        return None
    return Path(certifi.where())


def write_ca_bundle(folder: Path, mitmproxy_ca: Path, env: dict[str, str]) -> Path:
    """One owner-only PEM file: the system's roots, what the environment already trusted, and mitmproxy's CA.

    A bundle of mitmproxy's CA alone would break every host the client reaches directly (NO_PROXY)."""
    sources: list[Path] = []
    for source in [system_roots(), *(Path(env[name]) for name in TRUST_VARIABLES if env.get(name)), mitmproxy_ca]:
        if source is not None and source.is_file() and source.resolve() not in [s.resolve() for s in sources]:
            sources.append(source)
    text = "".join(source.read_text(errors="replace").rstrip("\n") + "\n" for source in sources)
    path = folder / "ca-bundle.pem"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return path


def installed_undici() -> Path | None:
    package = NODE_PACKAGES / "node_modules" / "undici"
    try:
        version = json.loads((package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None
    return package if version == UNDICI else None


def install_undici() -> Path | None:
    """The pinned undici for the Node preload, installed from the npm registry into the checkout on first use.

    None where there is no Node, or npm cannot install it (offline, say): Node's fetch then goes direct before
    Node 24, and the summary says so if nothing went through the proxy."""
    found = installed_undici()
    if found is not None or shutil.which("node") is None:
        return found
    npm = shutil.which("npm")
    if npm is None:
        print("with-proxy: no npm to install undici with: fetch in Node 20 and 22 will go direct", file=sys.stderr)
        return None
    NODE_PACKAGES.mkdir(exist_ok=True)
    with open(NODE_PACKAGES / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another with-proxy may be installing it right now
        if installed_undici() is None:
            print(f"with-proxy: installing undici {UNDICI} into {NODE_PACKAGES} (once, for Node)", file=sys.stderr)
            command = [npm, "install", "--prefix", str(NODE_PACKAGES), "--no-save", "--no-package-lock"]
            command += ["--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error", f"undici@{UNDICI}"]
            try:
                done = subprocess.run(
                    command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300
                )
                failure = done.stderr.strip() if done.returncode else ""
            except (OSError, subprocess.TimeoutExpired) as e:
                failure = str(e)
            if failure:
                print(f"with-proxy: could not install undici ({failure.splitlines()[-1]})", file=sys.stderr)
    return installed_undici()


def node_options(existing: str) -> str:
    """NODE_OPTIONS with the preload required after whatever the user had there."""
    preload = str(PRELOAD)
    quoted = f'"{preload}"' if re.search(r'[\s"\\]', preload) else preload  # Node reads NODE_OPTIONS with quoting
    return f"{existing} --require {quoted}".strip()


def client_environment(env: dict[str, str], proxy_url: str, bundle: Path, undici: Path | None) -> dict[str, str]:
    """The client's environment: every variable its runtime reads for a proxy and for trust."""
    env = dict(env)
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):  # curl, Go, Python, Rust, Bun, undici, Node 24+
        env[name] = env[name.lower()] = proxy_url
    already = [h.strip() for h in (env.get("NO_PROXY") or env.get("no_proxy") or "").split(",") if h.strip()]
    env["NO_PROXY"] = env["no_proxy"] = ",".join(dict.fromkeys([*LOOPBACK, *already]))
    for name in TRUST_VARIABLES:
        env[name] = str(bundle)
    env["NODE_USE_ENV_PROXY"] = "1"  # Node 24+ (22.21+) reads the proxy variables itself
    env["NODE_OPTIONS"] = node_options(env.get("NODE_OPTIONS", ""))
    if undici is not None:
        env["WITH_PROXY_UNDICI"] = str(undici)
    return env


def came_from_terminal() -> bool:
    """Whether a SIGINT or SIGQUIT was most likely typed at the terminal: then the client, in with-proxy's
    foreground process group, got it too and decides what it means (a TUI may only cancel a generation)."""
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
    return False


@contextlib.contextmanager
def interrupts_end_setup() -> Iterator[None]:
    """Until the client runs, SIGTERM and SIGHUP unwind like Ctrl-C does, so the proxy is stopped on the way out."""

    def unwind(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, unwind) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def signals_forwarded_to(client: subprocess.Popen) -> Iterator[None]:
    """While the client runs, with-proxy's signals are the client's: it exits when the client does."""

    def forward(signum: int, frame: object) -> None:
        if signum in (signal.SIGINT, signal.SIGQUIT) and came_from_terminal():
            return
        with contextlib.suppress(ProcessLookupError):
            client.send_signal(signum)

    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
    previous = {sig: signal.signal(sig, forward) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_client(command: list[str], env: dict[str, str]) -> int:
    """Runs the client to its end; its exit status, 128+N if signal N ended it (as a shell says)."""
    try:
        client = subprocess.Popen(command, env=env)
    except OSError as e:
        print(f"with-proxy: cannot run {shlex.join(command)}: {e.strerror}", file=sys.stderr)
        return 127 if isinstance(e, FileNotFoundError) else 126
    with signals_forwarded_to(client):
        status = client.wait()
    return 128 - status if status < 0 else status


def summary(tally: dict, client: list[str], log_path: Path) -> str:
    """One line for stderr: what went through the proxy, or that nothing did and what to try."""
    name = Path(client[0]).name
    requests, connects, refused = tally.get("requests", 0), tally.get("connects", 0), tally.get("refused_by", [])
    log = f"log: {log_path}"
    distrust = f"{name} refused mitmproxy's certificate for {', '.join(refused)} (it reads its own trust store)"
    if requests:
        line = (
            f"with-proxy: {requests} request(s) went through the proxy ({tally.get('llm', 0)} to LLM providers: "
            f"{tally.get('repaired', 0)} repaired, {tally.get('recovered', 0)} recovered)"
        )
        return "; ".join([line, distrust, log] if refused else [line, log])
    if refused:
        return f"with-proxy: nothing went through the proxy: {distrust}; {log}"
    if connects:
        return f"with-proxy: {connects} connection(s) reached the proxy, but no request got through (see the {log})"
    return (
        f"with-proxy: nothing went through the proxy: if {name} made requests, it ignores proxy variables; "
        "use its own proxy setting with scripts/run, or a reverse listener with its base-URL variable "
        '(scripts/run --mode reverse:https://PROVIDER, then http://127.0.0.1:8080; README: "Put a client through '
        f'it"); {log}'
    )


def with_proxy(options: list[str], client: list[str]) -> int:
    echo = "--show-proxy-log" in options
    options = [option for option in options if option not in OWN_FLAGS]
    undici = install_undici()
    log_path = new_log_path(state_dir())
    with tempfile.TemporaryDirectory(prefix="with-proxy-") as scratch:  # 0700, removed at exit
        proxy = Proxy(options, Path(scratch), log_path, echo)
        try:
            with interrupts_end_setup():
                proxy.start()
                proxy.wait_until_ready()
                ca = mitmproxy_confdir(options) / "mitmproxy-ca-cert.pem"
                wait_for_file(ca, proxy)
                bundle = write_ca_bundle(Path(scratch), ca, dict(os.environ))
                env = client_environment(dict(os.environ), proxy.url, bundle, undici)
            status = run_client(client, env)
        except RuntimeError as e:
            print(f"with-proxy: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # before the client ran
            return 128 + signal.SIGINT
        finally:
            proxy.stop()
        print(summary(proxy.tally(), client, log_path), file=sys.stderr)
    return status


def main(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if argv == ["--install-node-agent"]:
        return 0 if install_undici() is not None or shutil.which("node") is None else 1
    try:
        options, client = split_arguments(argv)
    except UsageError as e:
        print(f"with-proxy: {e}\nusage: scripts/with-proxy [MITMDUMP OPTIONS...] -- CLIENT [ARGS...]", file=sys.stderr)
        return 2
    return with_proxy(options, client)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
