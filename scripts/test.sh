#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: install, start the local stack
# (Kafka broker + PostgreSQL) through the project's own command, run pytest.
# Extra arguments go to pytest, e.g. `scripts/test.sh -k ingest -x`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
bash scripts/install-browser.sh || echo "test.sh: no headless Chromium; the browser tests will say so" >&2
export PATH="$root/.venv/bin:$PATH"
started_here=0
if ! vexnudge stack status --quiet; then
  vexnudge stack up
  started_here=1
fi
cleanup() {
  if [ "$started_here" = 1 ] && [ "${KEEP_STACK:-0}" != 1 ]; then
    vexnudge stack down || true
  fi
}
trap cleanup EXIT
mkdir -p test-artifacts
python -m pytest "$@"
