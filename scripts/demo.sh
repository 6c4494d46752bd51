#!/usr/bin/env bash
# The main job on a fresh machine: install, start the local stack, run the
# pipeline and replay the sample classroom.  See `vexnudge demo --help`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
export PATH="$root/.venv/bin:$PATH"
vexnudge stack up
exec vexnudge demo "$@"
