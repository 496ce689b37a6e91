"""runtime.pod.manifest and runtime.pod.validation: manifest bytes to validated pods."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from runtime.errors import ManifestError
from runtime.pod import yaml_exact
from runtime.pod.manifest import parse_manifest, parse_manifest_with_warnings
from runtime.pod.validation import default_pull_policy

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"


def y(text: str) -> bytes:
    return textwrap.dedent(text).lstrip("\n").encode()


def pod_yaml(containers: str = "", spec: str = "", metadata: str = "name: p") -> bytes:
    """A small pod manifest; ``containers``/``spec`` are extra YAML indented as given."""
    containers = containers or f"- name: c\n  image: {IMAGE}\n"
    return y(
        "apiVersion: v1\nkind: Pod\nmetadata:\n"
        + textwrap.indent(metadata, "  ")
        + "\nspec:\n"
        + textwrap.indent(spec, "  ")
        + "\n  containers:\n"
        + textwrap.indent(containers, "  ")
    )


def container(extra: str = "", name: str = "c") -> str:
    return f"- name: {name}\n  image: {IMAGE}\n" + textwrap.indent(extra, "  ")


def errors_of(data: bytes) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse_manifest(data, "m.yaml")
    return info.value


# --- decoding: one error, exact path ----------------------------------------------------

DECODE_CASES = [
    pytest.param(
        pod_yaml(container() + container(name="d").replace(f"  image: {IMAGE}\n", "")),
        "spec.containers[1].image",
        "Required value",
        id="missing-image",
    ),
    pytest.param(
        pod_yaml(container("imagee: x\n")),
        "spec.containers[0].imagee",
        "unknown field",
        id="unknown-field",
    ),
    pytest.param(
        pod_yaml(container("ports:\n- containerPort: '80'\n")),
        "spec.containers[0].ports[0].containerPort",
        "expected int, got str",
        id="wrong-type",
    ),
    pytest.param(
        pod_yaml(metadata="labels: {app: x}"),
        "metadata.name",
        "Required value: name or generateName is required",
        id="no-name",
    ),
    pytest.param(
        pod_yaml(f"- image: {IMAGE}\n"),
        "spec.containers[0].name",
        "required",
        id="missing-required-field",
    ),
    pytest.param(
        pod_yaml(spec="volumes:\n- name: v\n  emptyDirr: {}"),
        "spec.volumes[0].emptyDirr",
        "unknown field",
        id="unknown-volume-field",
    ),
    pytest.param(
        pod_yaml(metadata="name: p\nlabels: {1: x}"),
        "metadata.labels",
        "keys must be str, got int",
        id="non-string-key",
    ),
    pytest.param(
        y("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: {}}\n"),
        "spec.containers",
        "expected array, got object",
        id="object-for-array",
    ),
    pytest.param(
        y("apiVersion: apps/v1\nkind: Pod\n"),
        "apiVersion",
        'unsupported apiVersion "apps/v1": expected v1',
        id="api-version",
    ),
    pytest.param(
        y("apiVersion: v1\nkind: Deployment\n"),
        "kind",
        'unsupported kind "Deployment": expected Pod or PodList',
        id="kind",
    ),
    pytest.param(
        y("kind: PodList\nitems:\n- kind: Service\n"),
        "items[0].kind",
        'unsupported kind "Service": expected Pod',
        id="podlist-item-kind",
    ),
    pytest.param(
        y("kind: PodList\nitems: {}\n"),
        "items",
        "expected array, got object",
        id="podlist-items-type",
    ),
    pytest.param(
        y("kind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: a}]}\n"),
        "items[0].spec.containers[0].image",
        "Required value",
        id="podlist-item-path",
    ),
]


@pytest.mark.parametrize(("data", "path", "cause"), DECODE_CASES)
def test_decode_error_names_path_and_cause(data: bytes, path: str, cause: str) -> None:
    err = errors_of(data)
    assert (err.source, err.path, err.cause) == ("m.yaml", path, cause)
    assert str(err) == f"m.yaml: {path}: {cause}"


# --- whole-file faults (path "") --------------------------------------------------------

FILE_CASES = [
    pytest.param(b"", "no pod in the file", id="empty"),
    pytest.param(b"# just a comment\n\n# another\n", "no pod in the file", id="comments"),
    pytest.param(b"---\n---\n", "no pod in the file", id="empty-documents"),
    pytest.param(b"\x7fELF\x02\x01\x01\x00\x00", "not a text file", id="nul-bytes"),
    pytest.param(b"name: caf\xe9\n", "not a text file", id="latin-1"),
    pytest.param(b"a: b: c\n", "invalid YAML at line 1, column 5", id="broken-yaml"),
    pytest.param(b"kind: Pod\nspec:\n  containers: [\n", "invalid YAML at line 4", id="unclosed"),
    pytest.param(b"a: 1\na: 2\n", 'line 2, column 1: duplicate key "a"', id="duplicate-key"),
    pytest.param(b'{"kind": "Pod",}x', "invalid YAML at line 1", id="broken-json"),
    pytest.param(b"just a string\n", "expected a Pod or PodList object, got string", id="scalar"),
    pytest.param(b"42\n", "got integer", id="number"),
    pytest.param(b"- kind: Pod\n", "expected a Pod or PodList object, got array", id="list"),
]


@pytest.mark.parametrize(("data", "cause"), FILE_CASES)
def test_whole_file_errors(data: bytes, cause: str) -> None:
    err = errors_of(data)
    assert err.path == ""
    assert cause in err.cause
    assert str(err).startswith("m.yaml: ")


# --- semantic validation: every fault of a pod at once, worded as upstream's field errors
# (issue 9 changed the wording from this kubelet's own to upstream's) ------------------

SEMANTIC_CASES = [
    (
        y("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n"),
        "spec.containers",
        "Required value",
    ),
    (pod_yaml(container(name="Web_1")), "spec.containers[0].name", "a lowercase RFC 1123 label"),
    (
        pod_yaml(container() + container()),
        "spec.containers[1].name",
        'Duplicate value: "c"',
    ),
    (
        pod_yaml(spec=f"initContainers:\n- name: c\n  image: {IMAGE}"),
        "spec.containers[0].name",
        'Duplicate value: "c"',
    ),
    (
        pod_yaml("- name: c\n  image: '  '\n"),
        "spec.containers[0].image",
        "must not have leading or trailing whitespace",
    ),
    (
        pod_yaml(spec="restartPolicy: Sometimes"),
        "spec.restartPolicy",
        'Unsupported value: "Sometimes"',
    ),
    (
        pod_yaml(container("imagePullPolicy: Maybe\n")),
        "spec.containers[0].imagePullPolicy",
        "Maybe",
    ),
    (
        pod_yaml(container("ports: [{containerPort: 70000}]\n")),
        "spec.containers[0].ports[0].containerPort",
        "between 1 and 65535",
    ),
    (
        pod_yaml(container("ports: [{containerPort: 0}]\n")),
        "spec.containers[0].ports[0].containerPort",
        "Required value",
    ),
    (
        pod_yaml(container("ports: [{containerPort: 80, protocol: HTTP}]\n")),
        "spec.containers[0].ports[0].protocol",
        '"SCTP", "TCP", "UDP"',
    ),
    (
        pod_yaml(container("livenessProbe: {periodSeconds: 5}\n")),
        "spec.containers[0].livenessProbe",
        "must specify a handler",
    ),
    (
        pod_yaml(container("readinessProbe:\n  exec: {command: [a]}\n  tcpSocket: {port: 80}\n")),
        "spec.containers[0].readinessProbe.tcpSocket",
        "Forbidden: may not specify more than 1 handler type",
    ),
    (
        pod_yaml(container("lifecycle:\n  preStop: {}\n")),
        "spec.containers[0].lifecycle.preStop",
        "must specify a handler",
    ),
    (
        pod_yaml(
            container("lifecycle:\n  postStart: {exec: {command: [a]}, sleep: {seconds: 1}}\n")
        ),
        "spec.containers[0].lifecycle.postStart.sleep",
        "may not specify more than 1 handler type",
    ),
    (
        pod_yaml(container("livenessProbe: {exec: {command: [a]}, initialDelaySeconds: -1}\n")),
        "spec.containers[0].livenessProbe.initialDelaySeconds",
        "greater than or equal to 0",
    ),
    (
        pod_yaml(container("livenessProbe: {exec: {command: [a]}, periodSeconds: -5}\n")),
        "spec.containers[0].livenessProbe.periodSeconds",
        "greater than or equal to 0",
    ),
    (
        pod_yaml(container("livenessProbe: {exec: {command: [a]}, successThreshold: 2}\n")),
        "spec.containers[0].livenessProbe.successThreshold",
        "Invalid value: 2: must be 1",
    ),
    (
        pod_yaml(container("startupProbe: {exec: {command: [a]}, successThreshold: 3}\n")),
        "spec.containers[0].startupProbe.successThreshold",
        "Invalid value: 3: must be 1",
    ),
    (
        pod_yaml(container("readinessProbe: {httpGet: {port: 0}}\n")),
        "spec.containers[0].readinessProbe.httpGet.port",
        "between 1 and 65535",
    ),
    (
        pod_yaml(container("volumeMounts: [{name: data, mountPath: /data}]\n")),
        "spec.containers[0].volumeMounts[0].name",
        'Not found: "data"',
    ),
    (
        pod_yaml(spec="volumes:\n- name: v\n  emptyDir: {}\n  hostPath: {path: /tmp}"),
        "spec.volumes[0].hostPath",
        "Forbidden: may not specify more than 1 volume type",
    ),
    (
        pod_yaml(spec="volumes:\n- name: v\n  hostPath: {path: /a/../b}"),
        "spec.volumes[0].hostPath.path",
        "Invalid value: \"/a/../b\": must not contain '..'",
    ),
    (
        pod_yaml(spec="volumes:\n- {name: v, emptyDir: {}}\n- {name: v, emptyDir: {}}"),
        "spec.volumes[1].name",
        'Duplicate value: "v"',
    ),
    (
        pod_yaml(container("env: [{name: '', value: x}]\n")),
        "spec.containers[0].env[0].name",
        "Required value",
    ),
    (
        pod_yaml(
            spec=f"initContainers:\n- name: i\n  image: {IMAGE}\n"
            "  readinessProbe: {exec: {command: [a]}}"
        ),
        "spec.initContainers[0].readinessProbe",
        "Forbidden: may not be set for init containers without restartPolicy=Always",
    ),
    (
        pod_yaml(
            spec=f"initContainers:\n- name: i\n  image: {IMAGE}\n"
            "  lifecycle: {preStop: {sleep: {seconds: 1}}}"
        ),
        "spec.initContainers[0].lifecycle",
        "may not be set for init containers",
    ),
    (
        pod_yaml(container("restartPolicy: Always\n")),
        "spec.containers[0].restartPolicy",
        "may not be set for non-init containers",
    ),
    (
        pod_yaml(spec="terminationGracePeriodSeconds: -1"),
        "spec.terminationGracePeriodSeconds",
        "greater than or equal to 0",
    ),
    (pod_yaml(metadata="name: My_Pod"), "metadata.name", "a lowercase RFC 1123 subdomain"),
    (
        pod_yaml(metadata="name: p\nnamespace: kube.system"),
        "metadata.namespace",
        "must not contain dots",
    ),
]


@pytest.mark.parametrize(("data", "path", "cause"), SEMANTIC_CASES)
def test_semantic_error(data: bytes, path: str, cause: str) -> None:
    err = errors_of(data)
    found = [e for e in err.errors if e.startswith(f"{path}: ")]
    assert found, err.errors
    assert cause in found[0]


def test_all_faults_of_a_pod_are_reported_together() -> None:
    data = pod_yaml(
        "- name: Bad_Name\n  image: ''\n  ports: [{containerPort: 0}]\n",
        spec="restartPolicy: Sometimes",
    )
    err = errors_of(data)
    assert [e.split(": ")[0] for e in err.errors] == [
        "spec.containers[0].name",
        "spec.containers[0].image",
        "spec.containers[0].ports[0].containerPort",
        "spec.restartPolicy",
    ]
    # The first fault is also in path/cause, and the message lists all of them.
    assert err.path == "spec.containers[0].name"
    assert str(err).count("; ") == 3
    assert "spec.containers[0].image: Required value" in str(err)


def test_sidecar_init_container_may_have_probes_and_hooks() -> None:
    data = pod_yaml(
        spec=(
            f"initContainers:\n- name: side\n  image: {IMAGE}\n  restartPolicy: Always\n"
            "  readinessProbe: {exec: {command: [a]}}\n"
            "  lifecycle: {preStop: {sleep: {seconds: 1}}}"
        )
    )
    (pod,) = parse_manifest(data, "m.yaml")
    assert pod.spec.init_containers[0].is_restartable_init


# --- defaults ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("localhost:5000/busybox", "Always"),
        ("localhost:5000/kubelet-actors/busybox:latest", "Always"),
        ("busybox:1.35", "IfNotPresent"),
        ("localhost:5000/kubelet-actors/busybox:1.35", "IfNotPresent"),
        ("busybox@sha256:" + "a" * 64, "IfNotPresent"),
        ("localhost:5000/busybox:latest@sha256:" + "a" * 64, "IfNotPresent"),
    ],
)
def test_default_pull_policy(image: str, policy: str) -> None:
    assert default_pull_policy(image) == policy
    (pod,) = parse_manifest(pod_yaml(f"- name: c\n  image: '{image}'\n"), "m.yaml")
    assert pod.spec.containers[0].image_pull_policy == policy


def test_explicit_pull_policy_is_kept() -> None:
    (pod,) = parse_manifest(pod_yaml(container("imagePullPolicy: Never\n")), "m.yaml")
    assert pod.spec.containers[0].image_pull_policy == "Never"


def test_defaults() -> None:
    data = pod_yaml(
        container(
            "ports: [{containerPort: 80, protocol: ''}]\n"
            "livenessProbe: {httpGet: {port: 80}, periodSeconds: 0, failureThreshold: 0}\n"
        ),
        spec="volumes:\n- name: scratch",
    )
    (pod,) = parse_manifest(data, "m.yaml")
    c = pod.spec.containers[0]
    assert pod.metadata.namespace == "default"
    assert pod.spec.restart_policy == "Always"
    assert c.ports[0].protocol == "TCP"
    assert c.liveness_probe is not None
    assert (c.liveness_probe.period_seconds, c.liveness_probe.failure_threshold) == (10, 3)
    assert c.liveness_probe.timeout_seconds == 1
    # Upstream defaults a volume that names no source to an emptyDir.
    assert pod.spec.volumes[0].empty_dir is not None


def test_explicit_namespace_is_kept() -> None:
    (pod,) = parse_manifest(pod_yaml(metadata="name: p\nnamespace: kube-system"), "m.yaml")
    assert pod.metadata.namespace == "kube-system"


# --- formats and document structure ----------------------------------------------------


def test_json_manifest() -> None:
    data = (
        b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"},\n'
        b'\t"spec": {"containers": [{"name": "c", "image": "' + IMAGE.encode() + b'"}]}}'
    )
    (pod,) = parse_manifest(data, "m.json")
    assert pod.metadata.name == "j"


def test_utf8_bom_is_accepted() -> None:
    (pod,) = parse_manifest(b"\xef\xbb\xbf" + pod_yaml(), "m.yaml")
    assert pod.metadata.name == "p"


def test_multi_document() -> None:
    data = pod_yaml(metadata="name: a") + b"---\n---\n" + pod_yaml(metadata="name: b")
    pods = parse_manifest(data, "m.yaml")
    assert [p.metadata.name for p in pods] == ["a", "b"]


def test_multi_document_error_names_the_document() -> None:
    bad = pod_yaml("- name: c\n")
    err = errors_of(pod_yaml(metadata="name: a") + b"---\n" + bad)
    assert err.document == 2
    assert err.path == "spec.containers[0].image"
    assert str(err) == "m.yaml: document 2: spec.containers[0].image: Required value"


def test_pod_list() -> None:
    data = y(
        f"""
        apiVersion: v1
        kind: PodList
        metadata: {{resourceVersion: "1"}}
        items:
        - metadata: {{name: a}}
          spec: {{containers: [{{name: c, image: "{IMAGE}"}}]}}
        - apiVersion: v1
          kind: Pod
          metadata: {{name: b}}
          spec: {{containers: [{{name: c, image: "{IMAGE}"}}]}}
        """
    )
    pods = parse_manifest(data, "list.yaml")
    assert [p.metadata.name for p in pods] == ["a", "b"]


def test_empty_pod_list_is_an_empty_set() -> None:
    assert parse_manifest(b"apiVersion: v1\nkind: PodList\nitems: []\n", "u") == ()


def test_timestamps_stay_strings() -> None:
    data = pod_yaml(metadata="name: p\ncreationTimestamp: 2024-05-01T10:00:00Z")
    (pod,) = parse_manifest(data, "m.yaml")
    assert pod.metadata.creation_timestamp == "2024-05-01T10:00:00Z"


def test_kubectl_style_output_decodes() -> None:
    # What `kubectl run --dry-run=client -o yaml` writes: null timestamp, empty status.
    data = y(
        f"""
        apiVersion: v1
        kind: Pod
        metadata:
          creationTimestamp: null
          labels: {{run: x}}
          name: x
        spec:
          containers:
          - image: {IMAGE}
            name: x
            resources: {{}}
          dnsPolicy: ClusterFirst
          restartPolicy: Always
        status: {{}}
        """
    )
    pods, warnings = parse_manifest_with_warnings(data, "m.yaml")
    assert pods[0].metadata.name == "x"
    assert warnings == ()


def test_node_selector_and_tolerations_do_not_warn() -> None:
    """Admission checks nodeSelector against the node; tolerations are ignored for static
    pods upstream too (only NoExecute taints count, and never for static pods)."""
    data = pod_yaml(spec="nodeSelector: {disk: ssd}\ntolerations: [{operator: Exists}]")
    assert parse_manifest_with_warnings(data, "m.yaml")[1] == ()


def test_ignored_fields_warn() -> None:
    data = pod_yaml(
        spec="nodeSelector: {disk: ssd}\nserviceAccountName: robot\npriorityClassName: hi"
    )
    pods, warnings = parse_manifest_with_warnings(data, "m.yaml")
    assert len(pods) == 1
    assert [w.split(": ")[1] for w in warnings] == [
        "spec.priorityClassName",
        "spec.serviceAccountName",
    ]
    assert all(w.startswith("m.yaml: ") and "no effect" in w for w in warnings)


def test_pods_are_frozen() -> None:
    (pod,) = parse_manifest(pod_yaml(), "m.yaml")
    with pytest.raises(AttributeError):
        pod.metadata.name = "x"  # type: ignore[misc]


def test_a_yaml_alias_bomb_is_refused_before_it_expands() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 10):  # 9 levels of 12: 10 * 12**9 strings once walked
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 12) + "]")
    with pytest.raises(ManifestError) as caught:
        parse_manifest("\n".join(lines).encode(), "bomb.yaml")
    assert caught.value.source == "bomb.yaml"
    assert "YAML aliases" in caught.value.cause and "refused" in caught.value.cause


def test_a_manifest_larger_than_10_mib_is_refused() -> None:
    data = b"# " + b"x" * (10 * 1024 * 1024) + b"\n"
    with pytest.raises(ManifestError, match="larger than"):
        parse_manifest(data, "huge.yaml")


def test_unmountable_volume_decodes_with_a_warning() -> None:
    # Before issue 9 the model knew only emptyDir and hostPath and refused the rest as
    # "not supported"; upstream's pod is valid, so it decodes and is warned about.
    data = pod_yaml(spec="volumes:\n- name: v\n  configMap: {name: cm}\n"
                         "- name: w\n  secret: {secretName: s, optional: true}")
    _, warnings = parse_manifest_with_warnings(data, "m.yaml")
    assert warnings == (  # an optional secret gives an empty volume: no warning
        "m.yaml: spec.volumes[0].configMap: this kubelet has no API server or volume plugin "
        "to get configMap volumes from (only emptyDir, hostPath, downwardAPI): the pod will stay "
        "Pending",
    )


CORPUS_FILES = sorted(Path(__file__).resolve().parents[2].glob("data/manifests/*/*.yaml"))


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_the_lean_yaml_reader_builds_what_pyyaml_builds(path: Path) -> None:
    """yaml_exact.load_all (libyaml's nodes, built directly) == yaml.load_all(_Loader)."""
    text = path.read_text()
    assert yaml_exact.load_all(text) == list(yaml.load_all(text, Loader=yaml_exact.Loader))


@pytest.mark.parametrize("text", [
    "a: 010\nb: 0x1F\nc: 1_000\nd: 1.5\ne: .inf\nf: yes\ng: Off\nh: ~\ni: ''\nj: 2024-01-01\n",
    "base: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n",
    "- [1, -2, +3]\n- !!str 5\n- {? [a]\n  : 1}\n",
])
def test_the_lean_yaml_reader_on_yaml_1_1_corners(text: str) -> None:
    try:
        expected: object = list(yaml.load_all(text, Loader=yaml_exact.Loader))
    except yaml.YAMLError as err:
        expected = type(err)
    try:
        found: object = yaml_exact.load_all(text)
    except yaml.YAMLError as err:
        found = type(err)
    assert found == expected


@pytest.mark.parametrize("path", [p for p in CORPUS_FILES if "/valid/" in str(p)][:20],
                         ids=lambda p: p.name)
def test_a_json_manifest_is_the_same_pod_as_its_yaml(path: Path) -> None:
    """Strict JSON takes the JSON reader; the pods are the same."""
    (document,) = [d for d in yaml.load_all(path.read_text(), Loader=yaml_exact.Loader) if d]
    as_json = json.dumps(document, indent=2).encode()
    assert parse_manifest(as_json, "p.json") == parse_manifest(path.read_bytes(), "p.yaml")


def test_json_with_a_repeated_key_is_refused_as_yaml_refuses_it() -> None:
    data = b'{"apiVersion": "v1", "kind": "Pod", "kind": "Pod", "metadata": {"name": "p"}}'
    with pytest.raises(ManifestError, match='duplicate key "kind"'):
        parse_manifest(data, "p.json")


def test_json_nan_is_left_to_the_yaml_reader() -> None:
    data = b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": NaN}}'
    with pytest.raises(ManifestError, match=r"metadata\.name"):
        parse_manifest(data, "p.json")
