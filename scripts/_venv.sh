# Sourced by the scripts: creates .venv when missing (or half made) with $PYTHON or the newest supported Python
# (on PATH or installed by pyenv), and (re)installs the project into it whenever pyproject.toml has changed. pip
# picks the newest mitmproxy the venv's Python allows: 12.x on Python 3.12 and newer, 11.0.2 on 3.10 and 3.11.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${LLM_PROXY_VENV:-$ROOT/.venv}"
SUPPORTED_PYTHONS="3.13 3.12 3.11 3.10"  # newest first; each is tested

runs_python() {  # $1: a command; true when it is a Python 3.10 or newer that runs
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1
}

python_version() {  # $1: "3.13"; prints a command for that Python: on PATH, or installed by pyenv
    local command="python$1" candidate
    if runs_python "$command"; then echo "$command"; return; fi
    if command -v pyenv >/dev/null 2>&1; then
        for candidate in $(ls -d "$(pyenv root)/versions/$1".* 2>/dev/null | sort -V -r); do
            if runs_python "$candidate/bin/$command"; then echo "$candidate/bin/$command"; return; fi
        done
    fi
    return 1
}

find_python() {  # $PYTHON, else the newest supported Python (on PATH or installed by pyenv), else python3
    local version said
    if [ -n "${PYTHON:-}" ]; then
        if runs_python "$PYTHON"; then echo "$PYTHON"; return; fi
        # pyenv's shim for python3.13 runs only where pyenv selects 3.13; its own copy of 3.13 runs anywhere.
        if [[ "$PYTHON" =~ ^python(3\.[0-9]+)$ ]] && python_version "${BASH_REMATCH[1]}"; then return; fi
        said="not found"
        if command -v "$PYTHON" >/dev/null 2>&1; then said="$("$PYTHON" -V 2>&1 | head -n 1)" || true; fi
        echo "PYTHON=$PYTHON is not a Python 3.10 or newer that runs (${said:-no output});" \
            "name one, such as PYTHON=python3.13 or a path" >&2
        return 1
    fi
    for version in $SUPPORTED_PYTHONS; do
        if python_version "$version"; then return; fi
    done
    if runs_python python3; then echo python3; return; fi
    echo "no Python 3.10 or newer found (looked for python3.13 to python3.10, on PATH and in pyenv, and python3);" \
        "install one or set PYTHON" >&2
    return 1
}

note_kept_venv() {  # PYTHON only chooses the Python a venv is made with: says so when the venv has another
    local asked wanted have
    asked="$(find_python)" || return 0
    wanted="$("$asked" -V 2>&1)"
    have="$("$VENV/bin/python" -V 2>&1)"
    if [ "$wanted" != "$have" ]; then
        echo "keeping $VENV ($have), not PYTHON=$PYTHON ($wanted): remove $VENV to make it again with that," \
            "or set LLM_PROXY_VENV to another folder" >&2
    fi
}

MADE_HERE=".made-by-llm-reasoning-proxy"  # marks a venv these scripts made, and so may make again

make_venv() {
    if [ -e "$VENV" ] && ! "$VENV/bin/python" -c 'import pip' >/dev/null 2>&1; then
        # A first run that failed half way (no ensurepip, an interrupted install, a removed Python). Only the
        # project's own .venv, or one these scripts made, is made again: LLM_PROXY_VENV may name anything.
        if [ "$VENV" != "$ROOT/.venv" ] && [ ! -f "$VENV/$MADE_HERE" ]; then
            echo "$VENV has no working Python with pip (made by uv?); run '$VENV/bin/python -m ensurepip'," \
                "or set LLM_PROXY_VENV to a folder the scripts may make" >&2
            exit 1
        fi
        echo "$VENV is incomplete: making it again" >&2
        rm -rf "$VENV"
    fi
    if [ -x "$VENV/bin/python" ]; then
        if [ -n "${PYTHON:-}" ]; then note_kept_venv; fi
        return
    fi
    local python
    python="$(find_python)"
    echo "creating $VENV with $("$python" -V 2>&1)" >&2
    if ! "$python" -m venv "$VENV"; then
        rm -rf "$VENV"
        echo "could not create a virtual environment with $python; on Debian and Ubuntu install the venv" \
            "module first: sudo apt install python3-venv (or python3.X-venv for the Python you use)" >&2
        exit 1
    fi
    touch "$VENV/$MADE_HERE"
}

ensure_venv() {  # $1: "run" or "test"
    local flavour="$1" target="$ROOT"
    [ "$flavour" = test ] && target="$ROOT[test]"
    make_venv
    local stamp="$VENV/.installed-$flavour" want
    want="$(sha256sum < "$ROOT/pyproject.toml" | cut -d' ' -f1)"
    # The test install holds everything the run install does.
    if [ "$flavour" = run ] && [ "$(cat "$VENV/.installed-test" 2>/dev/null)" = "$want" ]; then
        return
    fi
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "installing llm-reasoning-proxy ($flavour) into $VENV" >&2
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$target"
        echo "$want" > "$stamp"  # only once the install has succeeded: a failed one is retried next time
        echo "installed: $("$VENV/bin/python" -c 'from mitmproxy.version import VERSION; import platform
print(f"mitmproxy {VERSION} on Python {platform.python_version()}")')" >&2
    fi
}

ensure_redis_server() {  # the tests start real Redis servers; Debian's package when there is none
    command -v redis-server >/dev/null && return
    echo "installing redis-server (Debian package)" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null
}

ensure_sqlite_shell() {  # a test backs the cache up with the sqlite3 shell while proxies use it
    command -v sqlite3 >/dev/null && return
    echo "installing sqlite3 (Debian package)" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends sqlite3 >/dev/null
}

ensure_browser() {  # the HTML report's tests open it in Debian's chromium, driven through chromium-driver
    [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && return
    echo "installing chromium and chromium-driver (Debian packages)" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver \
        >/dev/null
}
