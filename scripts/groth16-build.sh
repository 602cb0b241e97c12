#!/usr/bin/env bash
# Reproducible SANDBOX build of the `groth16` credential format (docs/zk-groth16.md):
#   compile circuits/student-credential.circom with circom2 (from node_modules),
#   run a local powers of tau and a Groth16 setup whose only "contributions" are public beacons,
#   export the verification key, and write the sandbox issuer public keys.
# Outputs (committed): src/proofs/groth16/artifacts/{student-credential.wasm,
#   student-credential.zkey, verification_key.json, sandbox-issuers.json, build-info.json}.
#
# Every random input is replaced by a published beacon, so the toxic waste of this setup can be
# recomputed by anyone: anyone can forge proofs against the sandbox key. That is fine for the
# sandbox (its issuer keys are published too) and NEVER fine for live: see the ceremony in the docs.
#
# Usage: scripts/groth16-build.sh            (from the repository root, after npm ci)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

CIRCUIT=student-credential
OUT="src/proofs/groth16/artifacts"
SNARKJS="node node_modules/snarkjs/build/cli.cjs"
CIRCOM="node node_modules/circom2/cli.js"
# Published beacons (SHA-256 of a fixed label) stand in for entropy; 2^10 hash iterations each.
PTAU_BEACON="$(printf '%s' 'matricula-groth16-sandbox-v1|powers-of-tau' | sha256sum | cut -d' ' -f1)"
ZKEY_BEACON="$(printf '%s' 'matricula-groth16-sandbox-v1|phase2' | sha256sum | cut -d' ' -f1)"
BEACON_ITERATIONS_EXP=10

# Prints a step banner with the seconds spent so far (the build takes a few minutes).
step() { echo "== [${SECONDS}s] $*"; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/matricula-groth16.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

step "compile ($($CIRCOM --version 2>/dev/null | tail -n1))"
# -l node_modules: circom resolves "circomlib/circuits/..." there (circom2 runs under WASI and
# cannot follow a symlinked node_modules, so it must be a real directory).
$CIRCOM "circuits/$CIRCUIT.circom" --r1cs --wasm --O2 -l node_modules -o "$WORK" | tee "$WORK/compile.log"

INFO="$($SNARKJS r1cs info "$WORK/$CIRCUIT.r1cs")"
echo "$INFO"
field() { echo "$INFO" | sed -n "s/.*# of $1: *\([0-9]*\).*/\1/p"; }
CONSTRAINTS="$(field Constraints)"
PUBLIC_INPUTS="$(field 'Public Inputs')"
OUTPUTS="$(field Outputs)"
# Groth16 needs a domain of at least constraints + public signals + 1: take the smallest power.
NEEDED=$((CONSTRAINTS + PUBLIC_INPUTS + OUTPUTS + 1))
POWER=1
while (((1 << POWER) < NEEDED)); do POWER=$((POWER + 1)); done
step "constraints $CONSTRAINTS, domain needs $NEEDED, ptau power $POWER"

step "powers of tau (phase 1)"
$SNARKJS powersoftau new bn128 "$POWER" "$WORK/pot_0000.ptau"
$SNARKJS powersoftau beacon "$WORK/pot_0000.ptau" "$WORK/pot_beacon.ptau" "$PTAU_BEACON" "$BEACON_ITERATIONS_EXP" -n="matricula sandbox phase 1 beacon"
$SNARKJS powersoftau prepare phase2 "$WORK/pot_beacon.ptau" "$WORK/pot_final.ptau"
$SNARKJS powersoftau verify "$WORK/pot_final.ptau" > "$WORK/ptau-verify.log"

step "groth16 setup (phase 2)"
$SNARKJS groth16 setup "$WORK/$CIRCUIT.r1cs" "$WORK/pot_final.ptau" "$WORK/${CIRCUIT}_0000.zkey"
$SNARKJS zkey beacon "$WORK/${CIRCUIT}_0000.zkey" "$WORK/$CIRCUIT.zkey" "$ZKEY_BEACON" "$BEACON_ITERATIONS_EXP" -n="matricula sandbox phase 2 beacon"
$SNARKJS zkey verify "$WORK/$CIRCUIT.r1cs" "$WORK/pot_final.ptau" "$WORK/$CIRCUIT.zkey"
$SNARKJS zkey export verificationkey "$WORK/$CIRCUIT.zkey" "$WORK/verification_key.json"

step "install artifacts into $OUT"
mkdir -p "$OUT"
cp "$WORK/${CIRCUIT}_js/$CIRCUIT.wasm" "$OUT/$CIRCUIT.wasm"
cp "$WORK/$CIRCUIT.zkey" "$OUT/$CIRCUIT.zkey"
cp "$WORK/verification_key.json" "$OUT/verification_key.json"
node --import tsx scripts/groth16-sandbox-issuers.ts

sha() { sha256sum "$1" | cut -d' ' -f1; }
cat > "$OUT/build-info.json" <<JSON
{
  "circuit": "circuits/$CIRCUIT.circom",
  "compiler": "$($CIRCOM --version 2>/dev/null | tail -n1)",
  "snarkjs": "$(node -p "require('./node_modules/snarkjs/package.json').version")",
  "optimization": "O2",
  "constraints": $CONSTRAINTS,
  "publicInputs": $PUBLIC_INPUTS,
  "outputs": $OUTPUTS,
  "ptauPower": $POWER,
  "setup": "single-party sandbox: phase 1 and phase 2 contributions are public beacons; not for live use",
  "ptauBeacon": "$PTAU_BEACON",
  "zkeyBeacon": "$ZKEY_BEACON",
  "beaconIterationsExp": $BEACON_ITERATIONS_EXP,
  "sha256": {
    "$CIRCUIT.r1cs": "$(sha "$WORK/$CIRCUIT.r1cs")",
    "$CIRCUIT.wasm": "$(sha "$OUT/$CIRCUIT.wasm")",
    "$CIRCUIT.zkey": "$(sha "$OUT/$CIRCUIT.zkey")",
    "verification_key.json": "$(sha "$OUT/verification_key.json")"
  }
}
JSON
cat "$OUT/build-info.json"
ls -l "$OUT"
step "done"
