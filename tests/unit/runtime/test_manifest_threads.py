"""Manifests read on threads that come and go (a file source actor restarted by its
supervisor runs on a new thread): the YAML library keeps state of the thread that loaded
it, so it is loaded with the manifest module, on the importing thread."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

MANIFEST = ("apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\n"
            "spec:\n  containers:\n  - {name: main, image: busybox}\n")

PROGRAM = f"""
import sys, threading
import runtime.pod.manifest as m
assert "yaml_rs" in sys.modules, "the manifest module did not load yaml-rs"
names = []
def read():
    names.append(m.parse_manifest({MANIFEST.encode()!r}, "web.yaml")[0].metadata.name)
for _ in range(3):  # each reader thread ends before the next starts
    t = threading.Thread(target=read)
    t.start()
    t.join()
print(names)
"""


def test_manifests_read_on_threads_that_end_one_after_another() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['web', 'web', 'web']"
