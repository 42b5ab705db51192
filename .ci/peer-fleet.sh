#!/usr/bin/env bash
# Builds Rancher Fleet's controller and agent, the peer `fleet bench peer` measures fleet-rs
# against, from the Go module at the version .ci/peer-fleet/go.mod pins (v0.16.0: the Go
# module proxy serves it, and refuses v0.16.1), and copies the same release's CRDs beside
# them. Idempotent: everything is cached under a directory named by the hash of go.mod and
# go.sum, so a change of version builds again and nothing else does.
#   .ci/peer-fleet.sh [DIR]     (default: $FLEET_PEER or ~/.cache/fleet-rs/peer-fleet)
# Prints the directory holding fleetcontroller, fleetagent and crds.yaml.
set -euo pipefail
module="$(cd "$(dirname "$0")/peer-fleet" && pwd)"
root="${1:-${FLEET_PEER:-$HOME/.cache/fleet-rs/peer-fleet}}"
stamp="$(cat "$module/go.mod" "$module/go.sum" | sha256sum | cut -c1-16)"
dir="$root/$stamp"

command -v go >/dev/null || { echo "peer-fleet: Go is required to build Rancher Fleet" >&2; exit 1; }
mkdir -p "$dir"
build() {
  local output="$1" package="$2"
  echo "peer-fleet: building $output ($package)" >&2
  (cd "$module" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
    -o "$dir/$output.partial" "$package")
  mv "$dir/$output.partial" "$dir/$output"
}
[ -x "$dir/fleetcontroller" ] || build fleetcontroller github.com/rancher/fleet/cmd/fleetcontroller
[ -x "$dir/fleetagent" ] || build fleetagent github.com/rancher/fleet/cmd/fleetagent
if [ ! -s "$dir/crds.yaml" ]; then
  source="$(cd "$module" && go list -m -f '{{.Dir}}' github.com/rancher/fleet)"
  install -m 0644 "$source/charts/fleet-crd/templates/crds.yaml" "$dir/crds.yaml.partial"
  mv "$dir/crds.yaml.partial" "$dir/crds.yaml"
fi
"$dir/fleetcontroller" --help >/dev/null
"$dir/fleetagent" --help >/dev/null
echo "$dir"
