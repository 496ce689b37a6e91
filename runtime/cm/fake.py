"""An in-memory CgroupManager for unit tests: remembers each cgroup's last config."""

from __future__ import annotations

from runtime.cm.names import CgroupName
from runtime.cm.resources import NodeResourceConfig, ResourceConfig


class FakeCgroupManager:
    def __init__(self) -> None:
        self.cgroups: dict[CgroupName, ResourceConfig] = {}
        self.calls: list[tuple[str, CgroupName]] = []
        self.processes: dict[CgroupName, frozenset[int]] = {}

    def exists(self, name: CgroupName) -> bool:
        return name in self.cgroups

    def create(self, name: CgroupName, config: ResourceConfig) -> None:
        self.calls.append(("create", name))
        for depth in range(1, len(name)):
            self.cgroups.setdefault(name[:depth], ResourceConfig())
        self.cgroups[name] = _merge(ResourceConfig(), config)

    def update(self, name: CgroupName, config: ResourceConfig) -> None:
        self.calls.append(("update", name))
        self.cgroups[name] = _merge(self.cgroups.get(name, ResourceConfig()), config)

    def destroy(self, name: CgroupName) -> None:
        self.calls.append(("destroy", name))
        for key in [k for k in self.cgroups if k[: len(name)] == name]:
            del self.cgroups[key]

    def pids(self, name: CgroupName) -> frozenset[int]:
        found: frozenset[int] = frozenset()
        for key, pids in self.processes.items():
            if key[: len(name)] == name:
                found |= pids
        return found

    def children(self, name: CgroupName) -> tuple[str, ...]:
        self.calls.append(("children", name))
        return tuple(sorted(k[-1] for k in self.cgroups
                            if len(k) == len(name) + 1 and k[: len(name)] == name))


def _merge(old: ResourceConfig, new: ResourceConfig) -> ResourceConfig:
    """As the filesystem does: a value left None keeps what the cgroup had (a node
    allocatable cgroup's config stays a NodeResourceConfig, its pids.max kept too)."""
    merged = ResourceConfig(
        cpu_shares=new.cpu_shares if new.cpu_shares is not None else old.cpu_shares,
        cpu_quota=new.cpu_quota if new.cpu_quota is not None else old.cpu_quota,
        cpu_period=new.cpu_period if new.cpu_period is not None else old.cpu_period,
        memory=new.memory if new.memory is not None else old.memory,
        hugepage_limits={**old.hugepage_limits, **new.hugepage_limits},
    )
    if not isinstance(new, NodeResourceConfig) and not isinstance(old, NodeResourceConfig):
        return merged
    pids = _pids(new) if _pids(new) is not None else _pids(old)
    return NodeResourceConfig(**{f: getattr(merged, f) for f in merged.__struct_fields__},
                              pids_limit=pids)


def _pids(config: ResourceConfig) -> int | None:
    return config.pids_limit if isinstance(config, NodeResourceConfig) else None
