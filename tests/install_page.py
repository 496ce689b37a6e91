"""docs/install.md and deploy/, as tests read them: the page's marked blocks, its paths moved
under a test's directory, the installed unit's command line (the join-page e2e test and the
deploy files' unit tests share these)."""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
PAGE = CHECKOUT / "docs" / "install.md"
DEPLOY = CHECKOUT / "deploy"
MARK = "<!-- join-test -->"
UNIT = "kubelet-actors.service"
INSTALLED_BINARY = "/opt/kubelet-actors/bin/kubelet-actors"
BLOCK_TIMEOUT_S = 120.0


def join_blocks(page: str) -> list[str]:
    """The shell blocks right after each ``MARK`` line, in page order."""
    blocks = re.findall(rf"^{re.escape(MARK)}\n```sh\n(.*?)^```$", page, re.M | re.S)
    assert len(blocks) == page.count(MARK), "a join-test mark not followed by a sh block"
    return blocks


@dataclass(frozen=True)
class Host:
    """The page's filesystem, moved under ``root``."""

    root: Path

    @classmethod
    def debian(cls, root: Path) -> Host:
        """A Host with the directories a stock Debian has that the page writes into."""
        for directory in ("etc/default", "etc/systemd/system"):
            (root / directory).mkdir(parents=True, exist_ok=True)
        return cls(root)

    def path(self, page_path: str) -> Path:
        return self.root / page_path.lstrip("/")

    def moved(self, text: str) -> str:
        """``text`` with the page's paths in their moved places."""
        text = text.replace("/opt/src/kubelet-actors", str(CHECKOUT))
        text = text.replace("/var/lib/kubelet-actors", str(self.path("/var/lib/kubelet-actors")))
        return re.sub(r"(?<![\w.~/])/etc/", f"{self.root}/etc/", text)

    def move_file(self, page_path: str) -> Path:
        path = self.path(page_path)
        path.write_text(self.moved(path.read_text()))
        return path


def run_block(block: str, host: Host, env: dict[str, str]) -> str:
    """Run one of the page's blocks in bash; fail with its output if any command fails."""
    script = ("set -euo pipefail\n"
              'systemctl() { printf "%s\\n" "$*" >> "$SYSTEMCTL_LOG"; }\n'
              + host.moved(block))
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT_S, check=False)
    assert proc.returncode == 0, f"the page's block failed:\n{script}\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def unit_command(unit: Path, host: Host) -> list[str]:
    """The installed unit's ExecStart as systemd runs it: continuation lines joined,
    ``$KUBELET_EXTRA_ARGS`` split from its EnvironmentFile."""
    text = unit.read_text().replace("\\\n", " ")
    exec_start = re.search(r"^ExecStart=(.*)$", text, re.M)
    env_file = re.search(r"^EnvironmentFile=-?(.*)$", text, re.M)
    assert exec_start and env_file, text
    values: dict[str, str] = {}
    for line in Path(env_file.group(1)).read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    argv: list[str] = []
    for word in shlex.split(exec_start.group(1)):
        if word.startswith("$"):
            argv += shlex.split(values.get(word.lstrip("${").rstrip("}"), ""))
        else:
            argv.append(word)
    assert argv[0] == INSTALLED_BINARY, argv
    return argv[1:]
