"""runtime.pod.static: upstream's static-pod rules and the manifest-directory reader."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.errors import ManifestError
from runtime.pod.manifest import parse_manifest
from runtime.pod.model import Pod, pod_to_json
from runtime.pod.static import (
    CONFIG_HASH,
    CONFIG_SEEN,
    CONFIG_SOURCE,
    make_static_pod,
    read_manifest_dir,
    read_manifest_file,
)

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"


def manifest(name: str = "web", namespace: str = "", extra_meta: str = "") -> bytes:
    ns = f"\n  namespace: {namespace}" if namespace else ""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}{ns}{extra_meta}\n"
        f"spec:\n  containers:\n  - name: c\n    image: {IMAGE}\n"
    ).encode()


def pod(data: bytes | None = None) -> Pod:
    (p,) = parse_manifest(data or manifest(), "m.yaml")
    return p


# --- make_static_pod --------------------------------------------------------------------


def test_name_namespace_node_and_annotations() -> None:
    p = make_static_pod(pod(), "Node-A.example", "file", "/etc/kubelet/web.yaml")
    assert p.metadata.name == "web-node-a.example"
    assert p.metadata.namespace == "default"
    assert p.spec.node_name == "Node-A.example"
    assert p.full_name == "web-node-a.example_default"
    assert p.metadata.annotations[CONFIG_SOURCE] == "file"
    assert p.metadata.annotations[CONFIG_HASH] == p.uid
    assert CONFIG_SEEN not in p.metadata.annotations  # the caller stamps it
    assert p.is_static
    assert len(p.uid) == 32 and int(p.uid, 16) >= 0


def test_explicit_namespace_and_annotations_kept() -> None:
    raw = pod(manifest(namespace="kube-system", extra_meta="\n  annotations: {team: infra}"))
    p = make_static_pod(raw, "n1", "http", "http://cfg/pods")
    assert p.metadata.namespace == "kube-system"
    assert p.metadata.annotations["team"] == "infra"
    assert p.metadata.annotations[CONFIG_SOURCE] == "http"


def test_input_is_not_changed() -> None:
    raw = pod()
    before = pod_to_json(raw)
    make_static_pod(raw, "n1", "file", "/m/web.yaml")
    assert pod_to_json(raw) == before


def test_name_required() -> None:
    with pytest.raises(ManifestError) as info:
        make_static_pod(Pod(), "n1", "file", "/m/x.yaml")
    assert (info.value.source, info.value.path) == ("/m/x.yaml", "metadata.name")
    assert info.value.cause == "required for a static pod"


def test_name_too_long_after_renaming() -> None:
    with pytest.raises(ManifestError) as info:
        make_static_pod(pod(manifest(name="a" * 250)), "node-1", "file", "/m/x.yaml")
    assert info.value.path == "metadata.name"
    assert "253" in info.value.cause


def test_uid_from_manifest_is_kept() -> None:
    p = make_static_pod(pod(manifest(extra_meta="\n  uid: fixed-uid")), "n1", "file", "/m/a")
    assert p.uid == "fixed-uid"
    assert p.metadata.annotations[CONFIG_HASH] == "fixed-uid"


def uid(data: bytes, node: str, kind: str, source: str) -> str:
    return make_static_pod(pod(data), node, kind, source).uid  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("other", "differs"),
    [
        ((manifest(), "n1", "file", "/m/web.yaml"), False),
        ((manifest(), "n2", "file", "/m/web.yaml"), True),
        ((manifest(), "N1", "file", "/m/web.yaml"), True),
        ((manifest(), "n1", "file", "/m/other.yaml"), True),
        ((manifest(), "n1", "http", "/m/web.yaml"), True),
        ((manifest(name="web2"), "n1", "file", "/m/web.yaml"), True),
        ((manifest(namespace="default"), "n1", "file", "/m/web.yaml"), False),
    ],
    ids=["same", "other-node", "node-case", "other-path", "url", "other-pod", "same-defaulted"],
)
def test_uid_stability(other: tuple[bytes, str, str, str], differs: bool) -> None:
    base = uid(manifest(), "n1", "file", "/m/web.yaml")
    assert (uid(*other) != base) is differs


def test_url_uid_does_not_depend_on_node() -> None:
    # As upstream: only file sources mix the host name into the UID.
    a = uid(manifest(), "n1", "http", "http://cfg/pods")
    assert a == uid(manifest(), "n2", "http", "http://cfg/pods")
    assert a != uid(manifest(), "n1", "http", "http://cfg/other")


def test_bad_source_kind() -> None:
    with pytest.raises(ValueError):
        make_static_pod(pod(), "n1", "api", "x")  # type: ignore[arg-type]


# --- read_manifest_file / read_manifest_dir -----------------------------------------------


def test_read_manifest_file(tmp_path: Path) -> None:
    f = tmp_path / "web.yaml"
    f.write_bytes(manifest())
    (p,) = read_manifest_file(f, "n1")
    assert p.metadata.name == "web-n1"
    assert p.uid == make_static_pod(pod(), "n1", "file", str(f)).uid


def test_read_manifest_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as info:
        read_manifest_file(tmp_path / "missing.yaml", "n1")
    assert info.value.source == str(tmp_path / "missing.yaml")
    assert "cannot read" in info.value.cause


BAD_FILES: dict[str, tuple[bytes, str, str]] = {
    # name: (content, error path, error cause fragment)
    "b-broken.yaml": (b"metadata: {name: x\nspec: [\n", "", "invalid YAML at line"),
    "c-noimage.yaml": (
        b"metadata: {name: c}\nspec: {containers: [{name: c}]}\n",
        "spec.containers[0].image",
        "Required value",
    ),
    "d-wrongtype.yaml": (
        b"metadata: {name: d}\nspec: {containers: [{name: c, image: x, ports: [{containerPort: "
        b"http}]}]}\n",
        "spec.containers[0].ports[0].containerPort",
        "expected int, got str",
    ),
    "e-unknown.yaml": (
        b"metadata: {name: e}\nspec: {containers: [{name: c, imagee: x}]}\n",
        "spec.containers[0].imagee",
        "unknown field",
    ),
    "f-empty.yaml": (b"", "", "no pod in the file"),
    "g-binary.bin": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "", "not a text file"),
}


def test_directory_with_good_and_bad_files(tmp_path: Path) -> None:
    (tmp_path / "a-good.yaml").write_bytes(manifest("good"))
    for name, (content, _, _) in BAD_FILES.items():
        (tmp_path / name).write_bytes(content)
    # Neither of these is read: a dot-file (an editor's swap file) and a subdirectory.
    (tmp_path / ".a-good.yaml.swp").write_bytes(b"\x00garbage")
    (tmp_path / ".hidden.yaml").write_bytes(manifest("hidden"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "nested.yaml").write_bytes(manifest("nested"))

    result = read_manifest_dir(tmp_path, "node1")

    assert [(s.pod.metadata.name, s.source) for s in result.pods] == [
        ("good-node1", str(tmp_path / "a-good.yaml"))
    ]
    assert result.pods[0].pod.spec.node_name == "node1"
    assert [e.source for e in result.errors] == [str(tmp_path / n) for n in sorted(BAD_FILES)]
    for err, (name, (_, path, cause)) in zip(result.errors, sorted(BAD_FILES.items()), strict=True):
        assert err.path == path, name
        assert cause in err.cause, name
        assert str(err).startswith(str(tmp_path / name))


def test_directory_is_read_in_name_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yaml", "c.json", "10.yaml"):
        (tmp_path / name).write_bytes(manifest(name.split(".")[0] + "x"))
    result = read_manifest_dir(str(tmp_path), "n")
    assert [os.path.basename(s.source) for s in result.pods] == [
        "10.yaml",
        "a.yaml",
        "b.yaml",
        "c.json",
    ]
    assert result.errors == ()


def test_duplicate_full_name_keeps_the_first(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_bytes(manifest("web"))
    (tmp_path / "b.yaml").write_bytes(manifest("web", namespace="default"))
    (tmp_path / "c.yaml").write_bytes(manifest("web", namespace="other"))
    result = read_manifest_dir(tmp_path, "n")
    assert [(s.source, s.pod.full_name) for s in result.pods] == [
        (str(tmp_path / "a.yaml"), "web-n_default"),
        (str(tmp_path / "c.yaml"), "web-n_other"),
    ]
    (err,) = result.errors
    assert err.source == str(tmp_path / "b.yaml")
    assert err.path == "metadata.name"
    assert "web-n_default" in err.cause and str(tmp_path / "a.yaml") in err.cause


def test_missing_directory_is_empty_not_an_error(tmp_path: Path) -> None:
    result = read_manifest_dir(tmp_path / "nope", "n")
    assert (result.pods, result.errors) == ((), ())


def test_path_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "only.yaml"
    f.write_bytes(manifest("only"))
    result = read_manifest_dir(f, "n")
    assert [(s.pod.metadata.name, s.source) for s in result.pods] == [("only-n", str(f))]


def test_broken_symlink_is_reported(tmp_path: Path) -> None:
    (tmp_path / "link.yaml").symlink_to(tmp_path / "gone.yaml")
    (err,) = read_manifest_dir(tmp_path, "n").errors
    assert err.source == str(tmp_path / "link.yaml")
    assert "cannot stat" in err.cause


def test_unreadable_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "secret.yaml"
    f.write_bytes(manifest())
    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        # Root reads mode-0 files, so refuse the read the way the kernel would for others.
        if self == f:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    (err,) = read_manifest_dir(tmp_path, "n").errors
    assert err.source == str(f)
    assert "cannot read" in err.cause


def test_multi_pod_file_and_warnings(tmp_path: Path) -> None:
    (tmp_path / "pods.yaml").write_bytes(
        manifest("a") + b"---\n" + manifest("b") + b"  priorityClassName: hi\n"
    )
    result = read_manifest_dir(tmp_path, "n")
    assert [s.pod.metadata.name for s in result.pods] == ["a-n", "b-n"]
    assert len({s.pod.uid for s in result.pods}) == 2
    (warning,) = result.warnings
    assert warning.startswith(str(tmp_path / "pods.yaml") + ": document 2: spec.priorityClassName")


def test_a_huge_file_in_the_directory_is_refused_without_reading_it(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_bytes(manifest("good"))
    with (tmp_path / "huge.yaml").open("wb") as f:
        f.truncate(11 * 1024 * 1024)  # sparse: no real bytes written
    result = read_manifest_dir(tmp_path, "n")
    assert [s.pod.metadata.name for s in result.pods] == ["good-n"]
    (err,) = result.errors
    assert err.source == str(tmp_path / "huge.yaml") and "larger than" in err.cause
