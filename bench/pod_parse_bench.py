"""How long parsing and validating a big pod manifest takes (issue 9's budget: a
100-container pod under 10 ms).

    python -m bench.pod_parse_bench [--containers 100] [--runs 200]

Builds one manifest with N containers that use most of what the model knows (ports,
env from fields and secrets, mounts of several volume types, probes, hooks, security
contexts, resources), then times runtime.pod.manifest.parse_manifest (YAML load,
decode, defaults, validation: an ordinary manifest takes the fast YAML path), that path's
parts, the exact (YAML 1.1) path, the same pod written as JSON (which takes the JSON
reader), and, separately, decode + defaults + validation of the already-loaded object,
so the YAML reader's share is visible. Prints the median and the
95th percentile of each, in wall-clock and in CPU time (process_time: less disturbed when
other work shares the machine). No containerd needed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import msgspec
import yaml

from runtime.pod.defaults import api_defaults, apply_defaults
from runtime.pod.manifest import parse_manifest
from runtime.pod.model import Pod
from runtime.pod.validation import validate_pod
from runtime.pod.yaml_fast import fast_load, needs_exact_reader

CONTAINER = """\
  - name: app-{i}
    image: registry.example.com/team/app:1.{i}
    command: [/app, --port={port}]
    ports:
    - {{name: http-{i}, containerPort: {port}}}
    - {{name: metrics-{i}, containerPort: {metrics}, protocol: TCP}}
    env:
    - {{name: POD_NAME, valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}}}
    - {{name: TOKEN, valueFrom: {{secretKeyRef: {{name: app-secret, key: token}}}}}}
    - {{name: MODE, value: fast}}
    envFrom:
    - configMapRef: {{name: app-config}}
    resources:
      requests: {{cpu: 10m, memory: 16Mi}}
      limits: {{cpu: 100m, memory: 64Mi}}
    volumeMounts:
    - {{name: data, mountPath: /data}}
    - {{name: config, mountPath: /etc/app, readOnly: true}}
    - {{name: certs, mountPath: /etc/certs, readOnly: true}}
    livenessProbe:
      httpGet: {{path: /healthz, port: {port}}}
      periodSeconds: 10
    readinessProbe:
      tcpSocket: {{port: http-{i}}}
    lifecycle:
      preStop: {{sleep: {{seconds: 5}}}}
    securityContext:
      runAsUser: 1000
      allowPrivilegeEscalation: false
      capabilities: {{drop: [ALL]}}
"""

HEAD = """\
apiVersion: v1
kind: Pod
metadata:
  name: big
  labels: {app: big, tier: backend}
spec:
  securityContext: {runAsNonRoot: true, fsGroup: 2000, seccompProfile: {type: RuntimeDefault}}
  volumes:
  - {name: data, emptyDir: {sizeLimit: 1Gi}}
  - {name: config, configMap: {name: app-config}}
  - name: certs
    projected:
      sources:
      - secret: {name: certs}
      - serviceAccountToken: {path: token, expirationSeconds: 3600}
  containers:
"""


def manifest(containers: int) -> bytes:
    body = "".join(
        CONTAINER.format(i=i, port=10000 + 2 * i, metrics=10001 + 2 * i) for i in range(containers)
    )
    return (HEAD + body).encode()


def _time(fn: object, runs: int) -> tuple[list[float], list[float]]:
    assert callable(fn)
    fn()  # warm up
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return wall, cpu


def _report(what: str, samples: tuple[list[float], list[float]]) -> None:
    for kind, values in zip(("wall", "cpu"), samples, strict=True):
        values = sorted(values)
        p95 = values[int(len(values) * 0.95) - 1]
        print(f"{what:<42} {kind:<4} median {statistics.median(values):7.2f} ms"
              f"   p95 {p95:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int, default=100)
    parser.add_argument("--runs", type=int, default=200)
    opts = parser.parse_args()
    data = manifest(opts.containers)
    (pod,) = parse_manifest(data, "big.yaml")
    assert len(pod.spec.containers) == opts.containers
    raw = yaml.load(data, Loader=yaml.CSafeLoader)

    def model_only() -> None:
        decoded = msgspec.convert(raw, Pod)
        kept = apply_defaults(decoded)
        assert not validate_pod(api_defaults(kept, defaulted=True))

    print(f"{opts.containers}-container pod, {len(data)} bytes of YAML, {opts.runs} runs")
    _report("parse_manifest (YAML+decode+validate)",
            _time(lambda: parse_manifest(data, "big.yaml"), opts.runs))
    text = data.decode()
    _report("fast YAML path: scan + yaml-rs",
            _time(lambda: fast_load(text), opts.runs))
    _report("  of which the YAML 1.1 scan",
            _time(lambda: needs_exact_reader(text), opts.runs))
    _report("exact YAML path alone (libyaml, PyYAML)",
            _time(lambda: yaml.load(data, Loader=yaml.CSafeLoader), opts.runs))
    as_json = json.dumps(raw).encode()
    _report(f"parse_manifest of its JSON ({len(as_json)} B)",
            _time(lambda: parse_manifest(as_json, "big.json"), opts.runs))
    _report("decode + defaults + validate (no YAML)", _time(model_only, opts.runs))
    _report("validate_pod alone", _time(lambda: validate_pod(api_defaults(pod)), opts.runs))


if __name__ == "__main__":
    main()
