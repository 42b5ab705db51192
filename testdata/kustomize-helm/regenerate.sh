#!/usr/bin/env bash
# Rewrites each fixture's expected.yaml with real kubectl kustomize and real Helm
# (installed by .ci/real-tools.sh).
set -euo pipefail
cd "$(dirname "$0")"
tools="${FLEET_REAL_TOOLS:-$HOME/.cache/fleet-rs/real-tools}"
for dir in */; do
  dir="${dir%/}"
  [ -f "$dir/kustomization.yaml" ] || continue
  "$tools/kubectl137" kustomize --enable-helm --helm-command "$tools/helm4" "$dir" >"$dir/expected.yaml"
done
