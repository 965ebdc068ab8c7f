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
