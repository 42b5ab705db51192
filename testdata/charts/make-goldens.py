"""Renders every case of cases.txt with real Helm and writes goldens/NAME.yaml.

Real Helm here is Helm 4's Go library as shipped in the PyPI wheel helm-sdkpy, which offers
install but not template. Each case is installed into its own logical cluster of a fleet
hub, and the release's manifest and hooks are printed the way `helm template` prints
them (Helm's template command writes strings.TrimSpace(manifest), then each hook as
"---\n# Source: PATH\nMANIFEST\n").

Usage (see make-goldens.sh): python make-goldens.py HUB_DATA_DIR
"""
import asyncio
import json
import os
import sys

import helm_sdkpy as helm
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def cases():
    with open(os.path.join(ROOT, "testdata/charts/cases.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, chart, release, namespace, *values = line.split()
                yield name, chart, release, namespace, values


def merge(base, overlay):
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


async def render(data, name, chart, release, namespace, values_files):
    values = {}
    for path in values_files:
        with open(os.path.join(ROOT, path)) as f:
            merge(values, yaml.safe_load(f) or {})
    kubeconfig = os.path.join(data, f"{name}.kubeconfig")
    config = helm.Configuration(namespace=namespace, kubeconfig=kubeconfig)
    result = await helm.Install(config).run(
        release, os.path.join(ROOT, chart), values=values or None, wait=False, create_namespace=True
    )
    out = result["manifest"].strip() + "\n"
    for hook in result.get("hooks") or []:
        out += "---\n# Source: %s\n%s\n" % (hook["path"], hook["manifest"])
    return out


async def main():
    data = sys.argv[1]
    goldens = os.path.join(ROOT, "testdata/charts/goldens")
    os.makedirs(goldens, exist_ok=True)
    for name, chart, release, namespace, values in cases():
        text = await render(data, name, chart, release, namespace, values)
        with open(os.path.join(goldens, f"{name}.yaml"), "w") as f:
            f.write(text)
        print(f"{name}: {text.count('# Source:')} documents")


asyncio.run(main())
