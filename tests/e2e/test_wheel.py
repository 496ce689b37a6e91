"""The drills run from a wheel installed outside the checkout (issue 8).

Nothing a drill needs may live in tests/ or bench/, and the images must build from the
package's own images.sh. The wheel is built from a copy of the product's sources (so the
checkout gets no build/ or egg-info) and installed with --no-deps into a fresh venv; its
dependencies come from this venv's site-packages through a .pth (offline, and quick). The
drill runs from a directory outside the checkout, under this session's lock, which it
inherits by file descriptor.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from actors.app.testbed import HeldLock, Registry

pytestmark = pytest.mark.e2e

CHECKOUT = Path(__file__).resolve().parents[2]
SOURCES = ("setup.cfg", "pyproject.toml", "README.md", "actors", "runtime", "proto", "bin")
DRILL = "corrupt-manifest"
STEP_TIMEOUT_S = 120.0


def run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
        pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``args`` to the end; fail the test with its output if it fails."""
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, pass_fds=pass_fds,
                          capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False)
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
    return proc


def outside_env() -> dict[str, str]:
    """This environment minus what would make a child import the checkout's code."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the product's wheel installed in it."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in SOURCES:
        source = CHECKOUT / name
        if source.is_dir():
            shutil.copytree(source, src / name, ignore=skip)
        else:
            shutil.copy2(source, src / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", work / "dist", src], cwd=work)
    (wheel,) = (work / "dist").glob("kubelet_actors-*.whl")
    venv = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=work)
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         "-q", wheel], cwd=work)
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
               cwd=work).stdout.strip()
    # The dependencies, after the venv's own site-packages: a .pth line adds a directory but
    # runs none of its .pth files, so this venv's editable install of the checkout stays out.
    Path(site, "shared-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv


def test_the_installed_package_is_not_the_checkout(venv: Path, tmp_path: Path) -> None:
    code = "import actors.app.testbed.registry as t, bin.main; print(t.__file__, t.IMAGES_SH)"
    where = run([venv / "bin" / "python", "-c", code], cwd=tmp_path,
                env=outside_env()).stdout.split()
    assert all(Path(p).is_relative_to(venv) for p in where), where
    assert Path(where[1]).is_file() and Path(where[1]).with_name("pause.c").is_file(), where


def test_drill_list_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    listed = run([venv / "bin" / "kubelet-actors", "drill", "--list"], cwd=tmp_path,
                 env=outside_env()).stdout
    assert DRILL in listed and "sigkill-daemon" in listed, listed


def test_trace_html_from_the_wheel_inlines_the_page(venv: Path, tmp_path: Path) -> None:
    trace = CHECKOUT / "tests" / "traces" / "restart-and-remove"
    out = tmp_path / "timeline.html"
    run([venv / "bin" / "kubelet-actors", "trace", "html", trace, out], cwd=tmp_path,
        env=outside_env())
    page = out.read_text()
    assert "window.timeline" in page and "#canvas" in page, page[:300]  # script and style
    assert "/*SCRIPT*/" not in page and "/*STYLE*/" not in page


def test_a_drill_passes_from_the_wheel(venv: Path, tmp_path: Path, registry: Registry,
                                       e2e_lock: HeldLock) -> None:
    out = run([venv / "bin" / "kubelet-actors", "drill", DRILL, "--seed", "1"], cwd=tmp_path,
              env={**outside_env(), **e2e_lock.child_env()}, pass_fds=(e2e_lock.fd,)).stdout
    assert f"PASS {DRILL}" in out, out
    assert "no divergence" in out, out
