#!/usr/bin/env bash
# Builds the real Kubernetes control plane the tests judge fleet-rs by, from the upstream Go
# modules at the versions .ci/real-k8s/go.mod pins: kube-apiserver and
# kube-controller-manager (k8s.io/kubernetes v1.37.2) and etcd (go.etcd.io/etcd v3.7.0).
# Idempotent: the binaries are cached under a directory named by the hash of go.mod and
# go.sum, so a change of version builds again and nothing else does.
#   .ci/real-k8s.sh [DIR]     (default: $FLEET_REAL_K8S or ~/.cache/fleet-rs/real-k8s)
# Prints the directory holding etcd, kube-apiserver and kube-controller-manager.
set -euo pipefail
module="$(cd "$(dirname "$0")/real-k8s" && pwd)"
root="${1:-${FLEET_REAL_K8S:-$HOME/.cache/fleet-rs/real-k8s}}"
stamp="$(cat "$module/go.mod" "$module/go.sum" | sha256sum | cut -c1-16)"
dir="$root/$stamp"
binaries=(etcd kube-apiserver kube-controller-manager)

complete() {
  for binary in "${binaries[@]}"; do
    [ -x "$dir/$binary" ] || return 1
  done
}

if ! complete; then
  command -v go >/dev/null || { echo "real-k8s: Go is required to build the control plane" >&2; exit 1; }
  mkdir -p "$dir"
  version="$(sed -n 's/^\tk8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$module/go.mod" | head -1)"
  minor="$(echo "$version" | cut -d. -f2)"
  # What `kube-apiserver --version` and discovery's /version report: Helm checks charts'
  # kubeVersion against it.
  stamp_version="-X k8s.io/component-base/version.gitVersion=$version"
  stamp_version+=" -X k8s.io/component-base/version.gitMajor=1"
  stamp_version+=" -X k8s.io/component-base/version.gitMinor=$minor"
  stamp_version+=" -X k8s.io/component-base/version.gitTreeState=clean"
  stamp_version+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
  build() {
    local output="$1" package="$2"
    echo "real-k8s: building $output ($package)" >&2
    (cd "$module" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $stamp_version" \
      -o "$dir/$output.partial" "$package")
    mv "$dir/$output.partial" "$dir/$output"
  }
  [ -x "$dir/etcd" ] || build etcd go.etcd.io/etcd/server/v3
  [ -x "$dir/kube-apiserver" ] || build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
  [ -x "$dir/kube-controller-manager" ] ||
    build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
fi
"$dir/etcd" --version >/dev/null
"$dir/kube-apiserver" --version >/dev/null
"$dir/kube-controller-manager" --version >/dev/null
echo "$dir"
