#!/usr/bin/env bash
# Regenerates testdata/charts/goldens/ with real Helm (helm-sdkpy 0.1.32 from PyPI, which
# embeds Helm 4's library for linux-amd64 and asks for Python 3.12; it runs on 3.11 when
# installed with --ignore-requires-python). Not part of CI: the goldens are committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${VENV:-/tmp/helm-sdkpy-venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --ignore-requires-python helm-sdkpy==0.1.32 pyyaml
fi
cargo build -q --bin fleet
DATA=$(mktemp -d)
clusters=()
while read -r name _; do
  case "$name" in ''|'#'*) continue ;; esac
  clusters+=(--cluster "$name")
done < testdata/charts/cases.txt
PORT=$((20000 + RANDOM % 20000))
./target/debug/fleet hub --data "$DATA" --listen "127.0.0.1:$PORT" "${clusters[@]}" >/dev/null &
HUB=$!
trap 'kill $HUB; rm -rf "$DATA"' EXIT
for _ in $(seq 50); do [ -f "$DATA/local.kubeconfig" ] && break; sleep 0.1; done
sleep 0.5
"$VENV/bin/python" testdata/charts/make-goldens.py "$DATA"
