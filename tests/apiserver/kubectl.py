"""Real kubectl against the emulated API server: the upstream client that pins its semantics.

``kubectl_binary()`` finds kubectl (PATH, then the Google Cloud SDK's versioned copies this
machine kind carries); :class:`Kubectl` runs it with a kubeconfig the server wrote;
:func:`local_strategic_patch` is the offline strategic-merge-patch oracle
(``kubectl patch --local``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SDK = Path("/usr/lib/google-cloud-sdk/bin")


def kubectl_binary() -> str:
    found = shutil.which("kubectl")
    if found:
        return found
    for candidate in sorted(SDK.glob("kubectl*"), reverse=True):
        if candidate.is_file():
            return str(candidate)
    raise FileNotFoundError("kubectl is not installed (it comes with this machine kind)")


@dataclass(frozen=True)
class Kubectl:
    """kubectl with a fixed kubeconfig."""

    kubeconfig: Path
    binary: str = ""

    def argv(self, *args: str) -> list[str]:
        return [self.binary or kubectl_binary(), "--kubeconfig", str(self.kubeconfig),
                "--request-timeout=20s", *args]

    def run(self, *args: str, check: bool = True,
            timeout: float = 30) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(self.argv(*args), capture_output=True, text=True,
                                timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json").stdout)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(*args), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)


def local_strategic_patch(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Upstream's answer: ``kubectl patch --local -f obj --type strategic -p patch -o json``."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(obj, f)
        f.flush()
        result = subprocess.run(
            [kubectl_binary(), "patch", "--local", "-f", f.name, "--type", "strategic",
             "-p", json.dumps(patch), "-o", "json"],
            capture_output=True, text=True, timeout=30, check=False)
    if result.returncode != 0:
        raise AssertionError(f"kubectl patch --local failed: {result.stderr}")
    patched: dict[str, Any] = json.loads(result.stdout)
    return patched
