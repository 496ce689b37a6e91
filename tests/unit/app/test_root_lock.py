"""One kubelet per root dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors.app.root_lock import LOCK_NAME, hold_root_dir
from runtime.errors import ConfigError

HOLD = """
import sys, time
from actors.app.root_lock import hold_root_dir
with hold_root_dir(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_second_kubelet_on_the_same_root_dir_is_refused(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[3]
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], cwd=repo,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(repo)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError) as caught, hold_root_dir(str(tmp_path)):
            pass
        message = str(caught.value)
        assert f"--root-dir {tmp_path}: already in use" in message
        assert f"pid {holder.pid}" in message
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    with hold_root_dir(str(tmp_path)):  # free again once the holder exited
        assert (tmp_path / LOCK_NAME).read_text() == str(os.getpid())
