#!/usr/bin/env bash
# Builds the release binaries (fleet, fleet-agent, fleet-bench) with profile-guided
# optimisation. An instrumented build runs a benchmark fleet (hub, gitjob, controller and
# agents with RBAC) and renders the repository's test charts and kustomizations; the
# release build is then optimised with the counts it made. docs/deploying.md has the
# figures against a plain release build.
#   deploy/pgo-build.sh [CLUSTERS]     (CLUSTERS: the training fleet's size, default 1000)
# The binaries land in target/release, as `cargo build --release` puts them (a later
# plain `cargo build --release` rebuilds them without the profile).
# llvm-profdata must read the profiles of rustc's LLVM: rustup's llvm-tools, or Debian's
# llvm-19 or newer (`apt-get install llvm-19`) read those of rustc 1.95 (LLVM 22).
# LLVM_PROFDATA=PATH names one; otherwise each found is tried, newest first.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
clusters="${1:-1000}"
work="$root/target/pgo"
bins=(--bin fleet --bin fleet-agent --bin fleet-bench)
cd "$root"

# The merger: LLVM_PROFDATA, rustup's, then Debian's (newest first), then the one on PATH.
candidates() {
  [ -n "${LLVM_PROFDATA:-}" ] && echo "$LLVM_PROFDATA"
  ls "$(rustc --print sysroot)"/lib/rustlib/*/bin/llvm-profdata 2>/dev/null || true
  ls -d /usr/lib/llvm-*/bin/llvm-profdata 2>/dev/null | sort -t- -k2 -n -r || true
  command -v llvm-profdata || true
}
if [ -z "$(candidates)" ]; then
  echo "pgo-build: no llvm-profdata found; install rustup's llvm-tools or Debian's llvm-19" >&2
  exit 1
fi

rm -rf "$work/raw" "$work"/*.profdata
mkdir -p "$work/raw"
echo "pgo-build: instrumented build" >&2
RUSTFLAGS="-Cprofile-generate=$work/raw" CARGO_TARGET_DIR="$work/instrumented" \
  cargo build --release --locked "${bins[@]}"
trained="$work/instrumented/release"

echo "pgo-build: training on a fleet of $clusters clusters x 10 bundles" >&2
"$trained/fleet-bench" fleet --clusters "$clusters" --bundles 10 --registered --idle-seconds 0
echo "pgo-build: training on the test charts and kustomizations" >&2
# Code the training never runs is optimised as cold, so it also renders the key and
# certificate functions charts use (bitnami's, for one), which the test charts do not.
crypto="$work/crypto-chart"
mkdir -p "$crypto/templates"
printf 'apiVersion: v2\nname: crypto\nversion: 0.1.0\n' > "$crypto/Chart.yaml"
cat > "$crypto/templates/secret.yaml" <<'TEMPLATE'
{{- $ca := genCA "training-ca" 365 }}
{{- $signed := genSignedCert "training" (list "127.0.0.1") (list "training.local") 365 $ca }}
{{- $self := genSelfSignedCert "training" nil nil 365 }}
apiVersion: v1
kind: Secret
metadata:
  name: training
stringData:
  ca: {{ $ca.Cert | quote }}
  signed: {{ $signed.Key | quote }}
  self: {{ $self.Cert | quote }}
  rsa: {{ genPrivateKey "rsa" | quote }}
  ecdsa: {{ genPrivateKey "ecdsa" | quote }}
  ed25519: {{ genPrivateKey "ed25519" | quote }}
  htpasswd: {{ htpasswd "user" "password" | quote }}
  derived: {{ derivePassword 1 "long" "password" "user" "example.com" | quote }}
  aes: {{ encryptAES "key" "text" | decryptAES "key" | quote }}
TEMPLATE
for chart in "$crypto"/ testdata/charts/*/ deploy/charts/*/; do
  if [ -f "$chart/Chart.yaml" ]; then
    "$trained/fleet" helm template "$chart" > /dev/null 2>&1 || true
  fi
done
for dir in testdata/kustomize/*/ testdata/kustomize-helm/*/; do
  "$trained/fleet" kustomize build "$dir" > /dev/null 2>&1 || true
done

merged=""
while read -r profdata; do
  if "$profdata" merge -o "$work/merged.profdata" "$work/raw" 2>/dev/null; then
    merged="$profdata"
    break
  fi
  echo "pgo-build: $profdata cannot read these profiles; trying the next" >&2
done < <(candidates)
if [ -z "$merged" ]; then
  echo "pgo-build: no llvm-profdata found reads the profiles of $(rustc -vV | grep LLVM)" >&2
  exit 1
fi
# Named by its content: cargo rebuilds when RUSTFLAGS change, not when a file they name does.
profile="$work/fleet-$(sha256sum "$work/merged.profdata" | cut -c1-16).profdata"
mv "$work/merged.profdata" "$profile"
echo "pgo-build: profiles merged by $merged; optimised build" >&2
RUSTFLAGS="-Cprofile-use=$profile" cargo build --release --locked "${bins[@]}"
echo "pgo-build: target/release/fleet, fleet-agent and fleet-bench are built with the profile" >&2
