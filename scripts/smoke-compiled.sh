#!/usr/bin/env bash
# Starts the compiled service (dist/, from `npm run build`) once on a fresh SQLite database, waits
# for /readyz, prints the start-up time and resident memory, checks the compiled CLI, and stops it.
# Used by .ci/run; `scripts/smoke-compiled.sh tsx` measures `tsx src/main.ts` the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-compiled}"
port="${SMOKE_PORT:-18480}"
dir="$(mktemp -d)"
export DATABASE_URL="sqlite:$dir/smoke.sqlite" PORT="$port" HOST=127.0.0.1 LOG_LEVEL=warn
if [ "$mode" = compiled ]; then
  [ -f dist/main.js ] || { echo "dist/main.js is missing: run npm run build" >&2; exit 1; }
  command=(node dist/main.js)
else
  command=(node_modules/.bin/tsx src/main.ts)
fi

started=$(date +%s%N)
"${command[@]}" >"$dir/server.log" 2>&1 &
pid=$!
stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap stop EXIT

ready=""
for _ in $(seq 1 600); do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: the $mode service exited before it was ready:" >&2
    cat "$dir/server.log" >&2
    exit 1
  fi
  if body=$(curl -sf "http://127.0.0.1:$port/readyz" 2>/dev/null); then
    ready=$(date +%s%N)
    break
  fi
  sleep 0.1
done
[ -n "$ready" ] || { echo "FAIL: /readyz did not answer within 60 s" >&2; exit 1; }
[ "$body" = '{"status":"ready","database":"ok"}' ] || { echo "FAIL: /readyz answered $body" >&2; exit 1; }
# The resident memory of the process tree (tsx runs the service in a child process).
# CPU time to get ready, which a busy machine does not inflate as it does the wall-clock time.
rss_kb=0
ticks=0
for p in $pid $(pgrep -P "$pid" || true); do
  rss_kb=$((rss_kb + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
  ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
done
cpu_ms=$((ticks * 1000 / $(getconf CLK_TCK)))
echo "$mode: ready in $(((ready - started) / 1000000)) ms (CPU $cpu_ms ms), RSS $((rss_kb / 1024)) MiB"

if [ "$mode" = compiled ]; then
  node dist/cli/main.js issuers list --json | grep -q '"sandbox-state.example"' ||
    { echo "FAIL: the compiled CLI did not list the sandbox issuers" >&2; exit 1; }
  echo "compiled CLI: ok"
fi
