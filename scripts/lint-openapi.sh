#!/usr/bin/env bash
# Lints the OpenAPI document the app serves at /openapi.json with two linters we did not write:
# Redocly CLI (redocly.yaml) and Spectral with spectral:oas (.spectral.yaml). Errors fail, and so
# do warnings: the only ones allowed are switched off, with the reason, in those files. Offline:
# no telemetry, no update check, rulesets from node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
npx tsx scripts/openapi-document.ts "$dir/openapi.json"
npx redocly lint --max-problems 1000 --format stylish "$dir/openapi.json"
npx spectral lint --ruleset .spectral.yaml --fail-severity warn "$dir/openapi.json"
