#!/usr/bin/env bash
# Fuzzes the Go template parser and executor with cargo-fuzz (libFuzzer). The toolchain
# here is stable, so RUSTC_BOOTSTRAP=1 lets cargo-fuzz use the sanitizer flags it needs.
# Seeds are the chart templates in testdata/ and, when present, podinfo's (copied into the
# ignored corpus directory, never committed). Usage: helm/fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
mkdir -p fuzz/corpus/template
cp ../testdata/charts/*/templates/* fuzz/corpus/template/ 2>/dev/null || true
cp ../../shared/charts/podinfo/templates/*.yaml fuzz/corpus/template/ 2>/dev/null || true
RUSTC_BOOTSTRAP=1 cargo fuzz run template -- -max_total_time="${1:-600}" -max_len=4096 -rss_limit_mb=2048
