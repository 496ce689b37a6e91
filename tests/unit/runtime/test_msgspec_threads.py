"""Threads decoding their first Pod (or PodStatus) at once do not crash the interpreter.

msgspec 0.22 builds a Struct type's decoding info on first use, and two threads doing that
together segfault (found by the API drills: the API and file sources decode their first
pods at the same moment). runtime.pod.model and runtime.status.types build it at import.
Each case runs in a fresh interpreter: the race is only at a type's first decode.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

RACE = """
import threading, msgspec
from {module} import {type}
raw = {raw!r}
barrier = threading.Barrier(4)
def decode():
    barrier.wait()
    msgspec.convert(raw, {type})
threads = [threading.Thread(target=decode) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
"""

CASES = [
    ("runtime.pod.model", "Pod",
     {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "b"}]}}),
    ("runtime.status.types", "PodStatus",
     {"phase": "Running", "containerStatuses": [
         {"name": "c", "state": {"running": {}}, "lastState": {}, "ready": True,
          "restartCount": 0, "image": "b", "imageID": ""}]}),
]


@pytest.mark.parametrize("module, type_, raw", CASES)
def test_first_decodes_in_threads_at_once_do_not_crash(module: str, type_: str,
                                                        raw: dict[str, object]) -> None:
    code = RACE.format(module=module, type=type_, raw=raw)
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
