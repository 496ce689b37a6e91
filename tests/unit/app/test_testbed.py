"""The test bed's parts that need no containerd: the users' corners, the machine-wide lock
(taken, waited for, handed to a child) and images.sh's errors."""

from __future__ import annotations

import fcntl
import ipaddress
import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.testbed import (
    BENCH,
    BENCH_WIDE,
    DRILLS,
    E2E,
    MAX_SLOTS,
    SOAK,
    Bed,
    TestbedError,
    machine_lock,
)
from actors.app.testbed import lock as lock_module
from actors.app.testbed import registry as registry_module
from actors.app.testbed.lock import LOCK_FD_ENV


@pytest.fixture
def lock_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "testbed.lock"
    monkeypatch.setattr(lock_module, "LOCK_PATH", path)
    monkeypatch.delenv(LOCK_FD_ENV, raising=False)
    return path


@pytest.fixture
def bed(tmp_path: Path) -> Bed:
    parent = tmp_path / "beds"
    parent.mkdir()
    return Bed("unit", "kau-unit-", "kau0", "10.99.0.0/24", parent)


@pytest.fixture
def holder(lock_path: Path) -> Iterator[int]:
    """Another open file description holding the lock: another process, as flock sees it."""
    with open(lock_path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield f.fileno()


def free(lock_path: Path) -> bool:
    with open(lock_path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def test_each_user_has_its_own_prefix_bridge_and_subnet() -> None:
    users = (E2E, DRILLS, BENCH, BENCH_WIDE, SOAK)
    assert len({b.dir_prefix for b in users}) == len({b.bridge for b in users}) == len(users)
    for a, b in itertools.combinations(users, 2):
        assert not a.dir_prefix.startswith(b.dir_prefix)
        assert not b.dir_prefix.startswith(a.dir_prefix)
        assert not ipaddress.ip_network(a.subnet).overlaps(ipaddress.ip_network(b.subnet))


def test_slots_have_their_own_dirs_bridges_and_subnets() -> None:
    slots = [DRILLS.slot(n) for n in range(MAX_SLOTS)]
    assert slots[0] == DRILLS and slots[3].bridge == "kad3"
    assert slots[3].subnet == "10.92.3.0/24" and slots[3].dir_prefix == "kad-drill-3-"
    assert len({s.bridge for s in slots}) == len({s.dir_prefix for s in slots}) == MAX_SLOTS
    others = [ipaddress.ip_network(b.subnet) for b in (E2E, BENCH, BENCH_WIDE, SOAK)]
    for a, b in itertools.combinations(slots, 2):
        assert not ipaddress.ip_network(a.subnet).overlaps(ipaddress.ip_network(b.subnet))
    for slot in slots:
        assert not any(ipaddress.ip_network(slot.subnet).overlaps(o) for o in others)
        assert slot.dir_prefix.startswith(DRILLS.dir_prefix)  # the bed's cleanup finds them
    with pytest.raises(TestbedError, match=f"slot {MAX_SLOTS} of the drills bed"):
        DRILLS.slot(MAX_SLOTS)


def test_a_slot_s_dir_is_the_bed_s_and_knows_its_slot(bed: Bed) -> None:
    mine, slot7 = bed.new_dir(), bed.slot(7).new_dir()
    assert bed.dirs() == sorted([mine, slot7]) and bed.slot(7).dirs() == [slot7]
    assert bed.slot_of(mine) == bed
    assert bed.slot_of(slot7) == bed.slot(7) and bed.slot_of(slot7).bridge == "kau7"


def test_a_new_dir_is_one_of_the_users_dirs(bed: Bed) -> None:
    made = bed.new_dir()
    assert made.parent == bed.parent and made.name.startswith(bed.dir_prefix)
    assert bed.dirs() == [made]


def test_the_lock_is_held_inside_and_released_after(lock_path: Path, bed: Bed) -> None:
    with machine_lock(bed) as held:
        assert not held.inherited
        assert not free(lock_path)
    assert free(lock_path)


def test_a_lock_held_elsewhere_times_out_naming_the_file(
        lock_path: Path, bed: Bed, holder: int) -> None:
    with pytest.raises(TestbedError, match=r"still held after 0\.3 s") as info, \
            machine_lock(bed, wait_s=0.3):
        pass
    assert str(lock_path) in str(info.value)


def test_a_child_runs_under_the_lock_its_parent_hands_down(
        lock_path: Path, bed: Bed, monkeypatch: pytest.MonkeyPatch) -> None:
    with machine_lock(bed) as parent:
        for key, value in parent.child_env().items():
            monkeypatch.setenv(key, value)
        with machine_lock(bed, wait_s=0.0) as child:
            assert child.inherited and child.fd == parent.fd
        # The child leaves the parent's lock held.
        assert not free(lock_path)
        monkeypatch.delenv(LOCK_FD_ENV)
    assert free(lock_path)


def test_a_handed_down_fd_of_another_file_is_refused(
        lock_path: Path, bed: Bed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock_path.touch()
    with open(tmp_path / "other", "a+") as other:
        monkeypatch.setenv(LOCK_FD_ENV, str(other.fileno()))
        refused = pytest.raises(TestbedError, match=f"is not {re.escape(str(lock_path))}")
        with refused, machine_lock(bed):
            pass


def test_a_handed_down_fd_that_does_not_hold_the_lock_is_refused(
        lock_path: Path, bed: Bed, holder: int, monkeypatch: pytest.MonkeyPatch) -> None:
    with open(lock_path, "a+") as unlocked:
        monkeypatch.setenv(LOCK_FD_ENV, str(unlocked.fileno()))
        with pytest.raises(TestbedError, match="does not hold"), machine_lock(bed):
            pass


def test_a_handed_down_fd_that_is_no_number_is_refused(
        lock_path: Path, bed: Bed, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCK_FD_ENV, "seven")
    with pytest.raises(TestbedError, match="'seven' is no open descriptor"), machine_lock(bed):
        pass


def test_images_sh_missing_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "IMAGES_SH", tmp_path / "images.sh")
    with pytest.raises(TestbedError, match=r"images\.sh is missing"):
        registry_module.images_sh("status")


def test_images_sh_failing_gives_its_exit_code_and_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "images.sh"
    script.write_text('echo "no docker-registry here: $*" >&2; exit 3\n')
    monkeypatch.setattr(registry_module, "IMAGES_SH", script)
    with pytest.raises(TestbedError, match=r"build serve failed \(3\):\nno docker-registry "
                                           r"here: build serve"):
        registry_module.images_sh("build", "serve")


def test_the_package_ships_images_sh_and_pause_c() -> None:
    assert registry_module.IMAGES_SH.is_file()
    assert registry_module.IMAGES_SH.with_name("pause.c").is_file()
