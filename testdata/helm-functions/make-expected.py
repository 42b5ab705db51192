"""Writes expected.json: what real Helm 4.3.1 prints for each snippet of cases.yaml.

Each case becomes a chart named `t` (Chart.yaml with appVersion 1.2.3, the case's
values.yaml and files). A snippet that renders is run as templates/_case.tpl through
`v: {{ include "t/templates/_case.tpl" . | toJson }}` and its text recorded; one that fails
is run as templates/case.yaml itself and Helm's standard error recorded. A case marked
`direct` is always run as templates/case.yaml (its output is then Helm's text after the
`# Source:` line).

Usage: python3 testdata/helm-functions/make-expected.py   (Helm from .ci/real-tools.sh)
Not part of CI: expected.json is committed; helm/tests/functions.rs checks it.
"""
import json
import os
import subprocess
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
HELM = os.path.join(
    subprocess.run([os.path.join(ROOT, ".ci/real-tools.sh")], capture_output=True, text=True, check=True).stdout.strip(),
    "helm4",
)


def chart(case, direct):
    root = tempfile.mkdtemp()
    path = os.path.join(root, "t")
    os.makedirs(os.path.join(path, "templates"))
    with open(os.path.join(path, "Chart.yaml"), "w") as f:
        f.write("apiVersion: v2\nname: t\nversion: 0.1.0\nappVersion: \"1.2.3\"\n")
    with open(os.path.join(path, "values.yaml"), "w") as f:
        f.write(case.get("values", ""))
    for name, text in (case.get("files") or {}).items():
        os.makedirs(os.path.dirname(os.path.join(path, name)), exist_ok=True)
        with open(os.path.join(path, name), "w") as f:
            f.write(text)
    if direct:
        with open(os.path.join(path, "templates/case.yaml"), "w") as f:
            f.write(case["template"])
    else:
        with open(os.path.join(path, "templates/_case.tpl"), "w") as f:
            f.write(case["template"])
        with open(os.path.join(path, "templates/case.yaml"), "w") as f:
            f.write('v: {{ include "t/templates/_case.tpl" . | toJson }}\n')
    return path


def helm(path):
    return subprocess.run([HELM, "template", "rel", path], capture_output=True, text=True)


def main():
    with open(os.path.join(HERE, "cases.yaml")) as f:
        cases = yaml.safe_load(f)
    expected = {}
    for case in cases:
        if not case.get("direct"):
            run = helm(chart(case, direct=False))
            if run.returncode == 0:
                line = run.stdout.split("# Source: t/templates/case.yaml\nv: ", 1)[1]
                expected[case["name"]] = {"output": json.loads(line)}
                continue
        run = helm(chart(case, direct=True))
        if run.returncode == 0:
            text = run.stdout.split("# Source: t/templates/case.yaml\n", 1)[1]
            expected[case["name"]] = {"output": text}
        else:
            expected[case["name"]] = {"error": run.stderr}
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")


main()
