"""Regenerate the Python stubs of proto/*.proto (CRI v1, containerd's events), or check them.

Run from the repository root::

    python -m proto.generate          # rewrite proto/api_pb2.py, api_pb2_grpc.py, *.pyi
    python -m proto.generate --check  # exit 1, naming the stale files, if they differ

The include root is the repository root, so the generated modules import each other as
``from proto import api_pb2``. The ``.pyi`` stubs come from mypy-protobuf's
``protoc-gen-mypy`` / ``protoc-gen-mypy_grpc`` plugins, found next to the running Python.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = REPO_ROOT / "proto"
PROTO_SOURCES = ("proto/api.proto", "proto/containerd_events.proto")

# Every file protoc writes for them, relative to the repository root.
GENERATED = tuple(
    f"{source.removesuffix('.proto')}{suffix}"
    for source in PROTO_SOURCES
    for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")
)


def _plugin(name: str) -> str:
    """Path of a protoc plugin executable, preferring the one beside this interpreter."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found: install mypy-protobuf (pip install -e .[dev])")
    return found


def generate_into(out_dir: Path) -> None:
    """Run protoc (from grpc_tools) on every source, writing all outputs under ``out_dir``."""
    import grpc_tools
    from grpc_tools import protoc  # dev-only dependency, imported lazily

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{REPO_ROOT}",
        f"-I{well_known}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--mypy_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *(str(REPO_ROOT / source) for source in PROTO_SOURCES),
    ]
    code = protoc.main(args)
    if code != 0:
        raise SystemExit(f"protoc failed with exit code {code}")


def stale_files(root: Path = REPO_ROOT) -> list[str]:
    """Generated files under ``root`` that are missing or differ from a fresh generation."""
    with tempfile.TemporaryDirectory(prefix="cri-proto-") as tmp:
        fresh = Path(tmp)
        generate_into(fresh)
        stale = []
        for rel in GENERATED:
            committed = root / rel
            if not committed.exists() or not filecmp.cmp(fresh / rel, committed, shallow=False):
                stale.append(rel)
        return stale


def regenerate(root: Path = REPO_ROOT) -> None:
    """Generate into a temporary directory and move the results into place."""
    with tempfile.TemporaryDirectory(prefix="cri-proto-") as tmp:
        fresh = Path(tmp)
        generate_into(fresh)
        for rel in GENERATED:
            target = root / rel
            shutil.copyfile(fresh / rel, target)
            os.chmod(target, 0o644)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m proto.generate", description=__doc__)
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 and name the stale files if the committed ones differ",
    )
    opts = parser.parse_args(argv)
    if opts.check:
        stale = stale_files()
        if stale:
            print("stale generated stubs (run `python -m proto.generate`):", file=sys.stderr)
            for rel in stale:
                print(f"  {rel}", file=sys.stderr)
            return 1
        print("generated stubs are up to date")
        return 0
    regenerate()
    for rel in GENERATED:
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
