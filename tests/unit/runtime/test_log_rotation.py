"""Container log rotation: the plan as a table (upstream's container_log_manager_test
cases in this project's terms), and the rotator on the fake runtime against real files:
rotation, compression of the older ones, the cap on files, leftovers of an interrupted
rotation, ReopenContainerLog failing (renamed back), a missing log reopened, a container
that is not running or whose log is outside the pod logs directory left alone; and a
follow of the log across a rotation the rotator does."""

from __future__ import annotations

import gzip
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.clock import FakeClock
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
)
from runtime.errors import CRIError
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.log_reader import read_log, rotated_logs
from runtime.kuberuntime.log_rotation import (
    LogRotatePolicy,
    RotationPlan,
    parse_max_size,
    plan_rotation,
    rotated_name,
    split_unused,
)
from runtime.kuberuntime.log_rotator import ContainerLogRotator, RotationPass, compress_log
from runtime.kuberuntime.logs import LogOptions
from runtime.testing.fake_runtime import FakeRuntime

NOW = time.mktime((2026, 11, 25, 17, 30, 0, 0, 0, -1))  # local time, as the names are
STAMP = "20261125-173000"
LOG = "/logs/ns_pod_uid/app/0.log"
POLICY = LogRotatePolicy(max_size=100, max_files=5)
SMALL = LogRotatePolicy(max_size=100, max_files=4)


def _r(*stamps: str) -> tuple[str, ...]:
    return tuple(f"{LOG}.{s}" for s in stamps)


PLANS: list[tuple[str, int, tuple[str, ...], LogRotatePolicy, RotationPlan | None]] = [
    ("under the size: nothing", 99, _r("20261125-100000"), POLICY, None),
    ("at the size: rotated (upstream rotates at >= max size)", 100, (), POLICY,
     RotationPlan((), (), (), f"{LOG}.{STAMP}")),
    ("the last rotated one compressed", 150, _r("20261125-100000"), POLICY,
     RotationPlan((), (), _r("20261125-100000"), f"{LOG}.{STAMP}")),
    ("max-files 5 keeps 3 rotated: the oldest removed, the rest compressed", 150,
     _r("20261125-100000.gz", "20261125-110000.gz", "20261125-120000.gz",
        "20261125-130000"), POLICY,
     RotationPlan((), _r("20261125-100000.gz"), _r("20261125-130000"), f"{LOG}.{STAMP}")),
    ("max-files 2 keeps none rotated", 150, _r("20261125-100000.gz", "20261125-110000"),
     LogRotatePolicy(100, 2),
     RotationPlan((), _r("20261125-100000.gz", "20261125-110000"), (), f"{LOG}.{STAMP}")),
    ("leftovers of a cut compression: the .tmp and the compressed original removed", 150,
     _r("20261125-100000", "20261125-100000.gz", "20261125-110000",
        "20261125-110000.tmp"), POLICY,
     RotationPlan(_r("20261125-100000", "20261125-110000.tmp"), (),
                  _r("20261125-110000"), f"{LOG}.{STAMP}")),
    ("this second's name taken: wait a pass", 150, _r(STAMP), POLICY, None),
    ("this second's name taken, compressed: wait a pass", 150, _r(f"{STAMP}.gz"), POLICY,
     None),
]


@pytest.mark.parametrize(("size", "rotated", "policy", "want"),
                         [p[1:] for p in PLANS], ids=[p[0] for p in PLANS])
def test_plan_rotation(size: int, rotated: tuple[str, ...], policy: LogRotatePolicy,
                       want: RotationPlan | None) -> None:
    assert plan_rotation(LOG, size, rotated, policy, NOW) == want


def test_rotated_name_is_upstreams_timestamp_format() -> None:
    assert rotated_name(LOG, NOW) == f"{LOG}.{STAMP}"


@pytest.mark.parametrize(("files", "inuse", "unused"), [
    ((), (), ()),
    (("a.1", "a.2.gz"), ("a.1", "a.2.gz"), ()),
    (("a.1.tmp", "a.1"), ("a.1",), ("a.1.tmp",)),
    (("a.1", "a.1.gz"), ("a.1.gz",), ("a.1",)),
])
def test_split_unused(files: tuple[str, ...], inuse: tuple[str, ...],
                      unused: tuple[str, ...]) -> None:
    assert split_unused(files) == (inuse, unused)


@pytest.mark.parametrize(("text", "size"), [
    ("10Mi", 10 * 2**20), ("500Ki", 500 * 1024), ("1G", 10**9), ("1024", 1024),
    ("1.5Ki", 1536), ("-1", -1),
])
def test_parse_max_size(text: str, size: int) -> None:
    assert parse_max_size(text) == size


@pytest.mark.parametrize(("text", "why"), [
    ("10MB", "is not a quantity"), ("0.5", "invalid max log size"), ("", "not a quantity"),
])
def test_parse_max_size_refuses(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=f'failed to parse container log max size "{text}"'
                       f".*{why}"):
        parse_max_size(text)


# --- the rotator on the fake runtime --------------------------------------------------


class Node:
    """A fake runtime with one running container whose log is a real file."""

    def __init__(self, root: Path, policy: LogRotatePolicy = SMALL) -> None:
        self.logs = root / "pods"
        self.fake = FakeRuntime(FakeClock(), images=("busybox",))
        pod_dir = self.logs / "default_web_uid-1"
        sandbox = self.fake.run_pod_sandbox(PodSandboxConfig(
            PodSandboxMetadata("web", "uid-1", "default"), log_directory=str(pod_dir)))
        config = ContainerConfig(
            ContainerMetadata("app"), ImageSpec("busybox"), log_path="app/0.log",
            labels={L.POD_NAME: "web", L.POD_NAMESPACE: "default", L.POD_UID: "uid-1",
                    L.CONTAINER_NAME: "app"})
        self.cid = self.fake.create_container(
            sandbox, config, self.fake.sandbox_config(sandbox))
        self.fake.start_container(self.cid)
        self.log = pod_dir / "app" / "0.log"
        self.log.parent.mkdir(parents=True)
        self.now = NOW
        self.rotator = ContainerLogRotator(self.fake, policy, str(self.logs),
                                           now=lambda: self.now)

    def write(self, data: bytes) -> None:
        with self.log.open("ab") as f:
            f.write(data)

    def files(self) -> list[str]:
        return sorted(os.listdir(self.log.parent))


def test_rotates_compresses_and_caps_the_files(tmp_path: Path) -> None:
    node = Node(tmp_path)
    contents: list[bytes] = []
    for i in range(4):
        data = f"run {i}\n".encode() * 20  # 120 bytes: over the 100
        node.write(data)
        contents.append(data)
        done = node.rotator.rotate_all()
        assert done.containers == 1 and len(done.rotations) == 1
        rotation = done.rotations[0]
        assert (rotation.pod, rotation.namespace, rotation.uid, rotation.container,
                rotation.error, rotation.size) == ("web", "default", "uid-1", "app", "", 120)
        assert node.log.exists() and node.log.stat().st_size == 0  # reopened: a new file
        node.now += 10
    # max-files 4: the current log and three rotated ones (the oldest rotation removed),
    # all but the newest compressed.
    kept = [time.strftime("%Y%m%d-%H%M%S", time.localtime(NOW + t)) for t in (10, 20, 30)]
    assert node.files() == ["0.log", f"0.log.{kept[0]}.gz", f"0.log.{kept[1]}.gz",
                            f"0.log.{kept[2]}"]
    for stamp, data in zip(kept[:2], contents[1:3], strict=True):
        assert gzip.decompress((node.log.parent / f"0.log.{stamp}.gz").read_bytes()) == data
    assert (node.log.parent / f"0.log.{kept[2]}").read_bytes() == contents[3]
    assert node.fake.called("reopen_container_log") == 4
    assert [Path(f).name for f in rotated_logs(str(node.log))] == node.files()[1:]


def test_under_the_size_nothing_is_touched(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.write(b"x" * 99)
    assert node.rotator.rotate_all().rotations == ()
    assert node.files() == ["0.log"] and node.fake.called("reopen_container_log") == 0


def test_a_container_not_running_is_left_alone(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.write(b"x" * 500)
    node.fake.exit_container(node.cid, 0)
    assert node.rotator.rotate_all() == RotationPass(containers=0)
    assert node.files() == ["0.log"]


def test_a_log_outside_the_pod_logs_dir_is_left_alone(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.write(b"x" * 500)
    elsewhere = ContainerLogRotator(node.fake, LogRotatePolicy(100, 4),
                                    str(tmp_path / "other"))
    assert elsewhere.rotate_all().rotations == ()
    assert node.files() == ["0.log"]


def test_reopen_failing_renames_the_log_back(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.write(b"x" * 500)
    node.fake.fail("reopen_container_log", CRIError("ReopenContainerLog", "boom"))
    (rotation,) = node.rotator.rotate_all().rotations
    assert "failed to reopen container log" in rotation.error and "boom" in rotation.error
    assert node.files() == ["0.log"] and node.log.stat().st_size == 500
    (rotation,) = node.rotator.rotate_all().rotations  # the next pass tries again
    assert rotation.error == "" and node.files() == ["0.log", f"0.log.{STAMP}"]


def test_a_missing_log_is_reopened(tmp_path: Path) -> None:
    node = Node(tmp_path)
    assert not node.log.exists()
    assert node.rotator.rotate_all().rotations == ()
    assert node.log.exists() and node.fake.called("reopen_container_log") == 1


def test_leftovers_of_an_interrupted_rotation_are_removed(tmp_path: Path) -> None:
    node = Node(tmp_path)
    d = node.log.parent
    (d / "0.log.20261125-100000").write_bytes(b"a")
    (d / "0.log.20261125-100000.gz").write_bytes(gzip.compress(b"a"))
    (d / "0.log.20261125-110000").write_bytes(b"b")
    (d / "0.log.20261125-110000.tmp").write_bytes(b"partial")
    node.write(b"x" * 500)
    (rotation,) = node.rotator.rotate_all().rotations
    assert rotation.error == ""
    assert node.files() == ["0.log", "0.log.20261125-100000.gz", "0.log.20261125-110000.gz",
                            f"0.log.{STAMP}"]


def test_compress_log_keeps_the_mode_and_leaves_no_tmp(tmp_path: Path) -> None:
    log = tmp_path / "0.log.1"
    log.write_bytes(b"hello\n" * 1000)
    log.chmod(0o640)
    done = compress_log(str(log))
    assert done == f"{log}.gz" and not log.exists()
    assert sorted(os.listdir(tmp_path)) == ["0.log.1.gz"]
    assert gzip.decompress(Path(done).read_bytes()) == b"hello\n" * 1000
    assert os.stat(done).st_mode & 0o777 == 0o640


def test_max_workers_rotate_every_container(tmp_path: Path) -> None:
    node = Node(tmp_path)
    sandbox = node.fake.container_sandbox(node.cid)
    other = node.fake.create_container(sandbox, ContainerConfig(
        ContainerMetadata("side"), ImageSpec("busybox"), log_path="side/0.log",
        labels={L.CONTAINER_NAME: "side"}), node.fake.sandbox_config(sandbox))
    node.fake.start_container(other)
    (node.log.parent.parent / "side").mkdir()
    (node.log.parent.parent / "side" / "0.log").write_bytes(b"y" * 200)
    node.write(b"x" * 200)
    rotator = ContainerLogRotator(node.fake, LogRotatePolicy(100, 4), str(node.logs),
                                  now=lambda: NOW, max_workers=2)
    done = rotator.rotate_all()
    assert sorted(r.container for r in done.rotations) == ["app", "side"]
    assert all(r.error == "" for r in done.rotations)


# --- a follow across a rotation the rotator does ---------------------------------------


def _record(i: int) -> bytes:
    return f"2026-11-25T17:30:00.{i:09d}Z stdout F line{i}\n".encode()


def test_follow_goes_on_across_a_rotation(tmp_path: Path) -> None:
    """A follow reading the log while the rotator renames it (the runtime writing on to
    the renamed file until it reopens) and the runtime starts a new one: every line comes
    out once, in order."""
    node = Node(tmp_path, LogRotatePolicy(150, 3))
    node.write(_record(0) + _record(1))
    writer = node.log.open("ab")  # the runtime's open file: it follows the rename

    def rotate() -> None:
        writer.write(_record(2) + _record(3))
        writer.flush()
        (rotation,) = node.rotator.rotate_all().rotations
        assert rotation.error == "" and rotation.rotated_to.endswith(STAMP)
        writer.write(_record(4))  # before the runtime reopens: to the renamed file
        writer.close()

    def new_file() -> None:
        node.write(_record(5))

    steps: list[Callable[[], None]] = [rotate, new_file, lambda: node.write(_record(6))]

    def running() -> bool:
        if not steps:
            return False
        steps.pop(0)()
        return True

    ticks = iter(range(1, 1000))
    out = b"".join(read_log(str(node.log), LogOptions(follow=True), running,
                            clock=lambda: float(next(ticks))))
    assert out == b"".join(f"line{i}\n".encode() for i in range(7))
    assert node.files() == ["0.log", f"0.log.{STAMP}"]
