"""The PLEG's safety-net relists: the relist a worker's sync asks for after reading what it
made (SyncChangedRuntime.observed), and the one a worker's end of a stop asks for, wait
SAFETY_NET_DELAY, one for all asked meanwhile, and any relist before then stands in for
it; a sync that read nothing after it (a failure) still gets its relist at once. Each
Relisted says when its lists were back (listed_at)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.kubelet import names
from actors.kubelet.messages import SyncChangedRuntime
from actors.kubelet.pleg import SAFETY_NET_DELAY
from actors.kubelet.pod_stopping import PodStopping
from runtime.ids import ContainerID, PodUID
from tests.helpers import wait_for
from tests.unit.kubelet.test_pleg import _pod
from tests.unit.kubelet.test_pleg_evented import Rig, _connected, _wait_relists, pleg_rig

UIDS = tuple(PodUID(f"u{i}") for i in range(5))


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield from pleg_rig()


def _synced(rig: Rig, uid: PodUID, read: bool = True) -> None:
    observed = ((ContainerID(f"c-{uid}"), "running"),) if read else None
    rig.dispatch.tell(names.PLEG, SyncChangedRuntime(uid, observed), sender=f"pod/{uid}")


def _delayed(rig: Rig) -> None:
    """Wait for the PLEG to have set the delayed relist's timer."""
    wait_for(lambda: rig.timers.next_due() is not None, 10.0, "the delayed relist's timer")


def test_the_syncs_of_a_burst_share_one_delayed_relist(rig: Rig) -> None:
    settled = _connected(rig)
    for uid in UIDS:
        _synced(rig, uid)
    _delayed(rig)
    assert rig.settle() == settled  # none yet
    assert rig.timers.advance(SAFETY_NET_DELAY) == 1
    relisted = _wait_relists(rig, settled + 1)
    assert rig.settle() == settled + 1
    assert relisted[-1].listed_at == rig.clock.monotonic()


def test_a_relist_meanwhile_stands_in_for_the_delayed_one(rig: Rig) -> None:
    settled = _connected(rig)
    _synced(rig, UIDS[0])
    _delayed(rig)
    _synced(rig, UIDS[1], read=False)  # a failed sync: its relist at once
    _wait_relists(rig, settled + 1)
    assert rig.timers.advance(SAFETY_NET_DELAY) == 0  # the delayed one was cancelled
    assert rig.settle() == settled + 1


def test_the_end_of_a_stop_waits_too(rig: Rig) -> None:
    _pod(rig.fake, "u1", "web")
    settled = _connected(rig)
    rig.dispatch.tell(names.PLEG, PodStopping(PodUID("u1"), True), sender="pod/u1")
    rig.dispatch.tell(names.PLEG, PodStopping(PodUID("u1"), False), sender="pod/u1")
    _synced(rig, UIDS[2])
    _delayed(rig)
    assert rig.settle() == settled
    assert rig.timers.advance(SAFETY_NET_DELAY) == 1
    _wait_relists(rig, settled + 1)
    assert rig.settle() == settled + 1
