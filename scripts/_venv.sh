# Sourced by scripts/run and scripts/test: creates .venv when missing and
# (re)installs the project into it whenever pyproject.toml has changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${LLM_PROXY_VENV:-$ROOT/.venv}"

ensure_venv() {  # $1: "run" or "test"
    local flavour="$1" target="$ROOT"
    [ "$flavour" = test ] && target="$ROOT[test]"
    if [ ! -x "$VENV/bin/python" ]; then
        echo "creating $VENV" >&2
        "${PYTHON:-python3}" -m venv "$VENV"
    fi
    local stamp="$VENV/.installed-$flavour" want
    want="$(sha256sum < "$ROOT/pyproject.toml" | cut -d' ' -f1)"
    # The test install holds everything the run install does.
    if [ "$flavour" = run ] && [ "$(cat "$VENV/.installed-test" 2>/dev/null)" = "$want" ]; then
        return
    fi
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "installing llm-reasoning-proxy ($flavour) into $VENV" >&2
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$target"
        echo "$want" > "$stamp"
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
