#!/usr/bin/env bash
# Create (or refresh) the project's virtualenv with everything installed.
# Idempotent: reinstalls only when pyproject.toml or the C sources changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "bootstrap: Python >= 3.11 is required (found: $("$py" --version 2>&1))." >&2
  echo "bootstrap: set PYTHON=/path/to/python3.11 or install it (apt-get install python3)." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $("$py" --version)"
  "$py" -m venv .venv
fi
stamp=.venv/.vexnudge-installed
want="$(cat pyproject.toml $(find tree_edit -name '*.c' -o -name '*.h' 2>/dev/null | sort) 2>/dev/null | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing vexnudge and its dependencies into .venv (first run takes a minute)"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
  echo "$want" > "$stamp"
fi
