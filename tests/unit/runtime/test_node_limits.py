"""Whether N pods fit the node: the limits read from /proc and the verdict on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.cri.client import MAX_MESSAGE_BYTES
from runtime.host_counters import HostPaths
from runtime.node_limits import (
    CONTAINERD_FDS_BASE,
    CONTAINERD_FDS_PER_POD,
    CRI_LIST_BYTES_PER_POD,
    TASK_HEADROOM,
    NodeLimits,
    capacity_problems,
    pod_addresses,
    read_limits,
    soft_nofile,
    tasks_needed,
)

LIMITS = """\
Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max processes             96365                96365                processes
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
"""

AMPLE = NodeLimits(max_tasks=4_194_304, tasks_now=200, containerd_nofile=1_048_576,
                   pod_addresses=1021)


@pytest.mark.parametrize(("subnet", "addresses"), [
    ("10.94.0.0/22", 1021),  # the scale bench's bed: 1,024 less network, broadcast, gateway
    ("10.91.0.0/24", 253),
    ("10.88.0.0/16", 65533),
    ("10.0.0.0/30", 1),
    ("10.0.0.0/31", 0),
    ("fd00::/120", 253),
])
def test_pod_addresses_leave_out_network_broadcast_and_gateway(subnet: str,
                                                               addresses: int) -> None:
    assert pod_addresses(subnet) == addresses


@pytest.mark.parametrize(("text", "soft"), [
    (LIMITS, 20000),
    (LIMITS.replace("20000                20000", "unlimited            unlimited"), None),
    ("Limit Soft Hard Units\n", None),
    ("", None),
])
def test_soft_nofile_of_a_proc_limits_text(text: str, soft: int | None) -> None:
    assert soft_nofile(text) == soft


def test_read_limits_from_a_fake_proc(tmp_path: Path) -> None:
    (tmp_path / "sys/kernel").mkdir(parents=True)
    (tmp_path / "sys/kernel/pid_max").write_text("20000\n")
    (tmp_path / "sys/kernel/threads-max").write_text("96365\n")
    (tmp_path / "loadavg").write_text("0.50 0.40 0.30 2/187 12345\n")
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242/limits").write_text(LIMITS)
    limits = read_limits(4242, "10.94.0.0/22", HostPaths(proc=str(tmp_path)))
    assert limits == NodeLimits(max_tasks=20000, tasks_now=187, containerd_nofile=20000,
                                pod_addresses=1021, cri_max_message=MAX_MESSAGE_BYTES)
    unknown = read_limits(None, None, HostPaths(proc=str(tmp_path / "nothing")))
    assert unknown == NodeLimits(None, None, None, None)
    gone = read_limits(999999, None, HostPaths(proc=str(tmp_path)))
    assert gone.containerd_nofile is None


def test_this_machine_reads_its_task_limits() -> None:
    limits = read_limits(None, None)
    assert limits.max_tasks is not None and limits.max_tasks > 0
    assert limits.tasks_now is not None and 0 < limits.tasks_now <= limits.max_tasks


def test_enough_of_everything_has_no_problem() -> None:
    assert capacity_problems(500, AMPLE) == ()
    assert capacity_problems(500, NodeLimits(15_000, 200, None, None), 8) == ()
    assert capacity_problems(500, NodeLimits(None, None, None, None)) == ()


def test_tasks_count_the_running_pods_and_those_churning() -> None:
    assert tasks_needed(500, 500) > tasks_needed(500, 8) > tasks_needed(110, 8)
    assert tasks_needed(10, 500) == tasks_needed(10, 10)


@pytest.mark.parametrize(("limits", "pods", "churning", "words"), [
    # 15,000 tasks hold 500 pods starting 8 at a time but not all 500 at once
    (NodeLimits(15_000, 200, None, None), 500, 500, "kernel allows 15000"),
    (NodeLimits(20_000, 200, None, None), 1200, 8, "1200 pods need about"),
    (NodeLimits(None, None, 1024, None), 110, None, "RLIMIT_NOFILE is 1024"),
    (NodeLimits(None, None, None, 253), 254, None, "the pod subnet has 253"),
    (NodeLimits(None, None, None, None, cri_max_message=4 * 1024 * 1024), 5000, None,
     "message limit"),
])
def test_each_limit_names_itself_when_pods_run_into_it(limits: NodeLimits, pods: int,
                                                      churning: int | None,
                                                      words: str) -> None:
    problems = capacity_problems(pods, limits, churning)
    assert len(problems) == 1
    assert words in problems[0]


def test_the_limits_are_edges_not_ranges() -> None:
    """One pod more than a limit holds is a problem; the pod before it is not."""
    fds_for = (20_000 - CONTAINERD_FDS_BASE) // CONTAINERD_FDS_PER_POD
    nofile = NodeLimits(None, None, 20_000, None)
    assert capacity_problems(fds_for, nofile) == ()
    assert len(capacity_problems(fds_for + 1, nofile)) == 1
    tasks = NodeLimits(tasks_needed(300, 300) + 100 + TASK_HEADROOM, 100, None, None)
    assert capacity_problems(300, tasks, churning=300) == ()
    assert len(capacity_problems(301, tasks, churning=300)) == 1
    messages = NodeLimits(None, None, None, None)
    fits = MAX_MESSAGE_BYTES // CRI_LIST_BYTES_PER_POD
    assert capacity_problems(fits, messages) == ()
    assert len(capacity_problems(fits + 1, messages)) == 1
