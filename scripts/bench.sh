#!/usr/bin/env bash
# Run every benchmark in bench/ on a fresh machine: install, start the local
# stack (Kafka broker + PostgreSQL) through the project's own command, run each
# bench/*.py that exists, one after the other.  Figures go to stdout; copy them
# into docs/performance.md.
#
#   scripts/bench.sh                  # every benchmark
#   scripts/bench.sh ingest pipeline  # only these (names of bench/<name>.py)
#   BENCH_ARGS_pipeline="--repeats 5" scripts/bench.sh pipeline
#
# The stack is the usual one (STACK_DIR / KAFKA_PORT / POSTGRES_PORT apply); a
# stack that was already running is left running, one started here is stopped
# at the end unless KEEP_STACK=1.  A benchmark that fails does not stop the
# others; the exit code is non-zero if any failed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
export PATH="$root/.venv/bin:$PATH"

if [ "$#" -gt 0 ]; then
  names=("$@")
else
  names=()
  for path in bench/*.py; do
    name="$(basename "$path" .py)"
    case "$name" in
      common | __init__) continue ;;  # shared helpers, not a benchmark
    esac
    names+=("$name")
  done
fi

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

failed=()
for name in "${names[@]}"; do
  script="bench/$name.py"
  if [ ! -f "$script" ]; then
    echo "bench.sh: no $script" >&2
    failed+=("$name")
    continue
  fi
  var="BENCH_ARGS_${name//[^A-Za-z0-9_]/_}"
  read -r -a extra <<< "${!var:-}"
  echo
  echo "=== $script ${extra[*]:-} ($(date -u +%Y-%m-%dT%H:%M:%SZ); load average $(cut -d' ' -f1-3 /proc/loadavg)) ==="
  if ! python "$script" ${extra[@]+"${extra[@]}"}; then
    echo "bench.sh: $script failed" >&2
    failed+=("$name")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "bench.sh: failed: ${failed[*]}" >&2
  exit 1
fi
