"""The embedded containerd's config: its runtime handlers (runc, its default, and
runc-alt, the same runc under a second name for pods whose RuntimeClass names it) and its
pod network (a fixed conflist standalone, a template containerd renders in cluster mode)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from runtime.containerd.config import (
    ALT_RUNTIME_HANDLER,
    DEFAULT_RUNTIME_HANDLER,
    RENDERED_CONFLIST,
    ContainerdConfig,
    render_cni_conflist,
    render_config_toml,
    write_config_files,
)
from runtime.errors import ContainerdError


def test_the_embedded_containerd_has_two_runc_handlers(tmp_path: Path) -> None:
    toml = tomllib.loads(render_config_toml(ContainerdConfig.for_base_dir(tmp_path)))
    containerd = toml["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert (DEFAULT_RUNTIME_HANDLER, ALT_RUNTIME_HANDLER) == ("runc", "runc-alt")
    assert containerd["default_runtime_name"] == "runc"
    runc = {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": False}}
    assert containerd["runtimes"] == {"runc": runc, "runc-alt": runc}


# --- the pod network: a fixed conflist, or cluster mode's template ------------------------

def _go_template(text: str, **lists: list[str]) -> str:
    """The two constructs the template uses, as Go's text/template runs them:
    ``{{range $i, $x := .Field}}{{if $i}}SEP{{end}}BODY{{end}}`` with ``{{$x}}`` in BODY."""
    pattern = re.compile(r"\{\{range \$i, \$(\w+) := \.(\w+)\}\}\{\{if \$i\}\}(.*?)\{\{end\}\}"
                         r"(.*?)\{\{end\}\}")

    def expand(match: re.Match[str]) -> str:
        var, field, sep, body = match.groups()
        return sep.join(body.replace(f"{{{{${var}}}}}", value) for value in lists[field])

    out = pattern.sub(expand, text)
    assert "{{" not in out, out
    return out


def _toml_cni(config: ContainerdConfig) -> dict[str, Any]:
    cni: dict[str, Any] = tomllib.loads(render_config_toml(config))["plugins"][
        "io.containerd.grpc.v1.cri"]["cni"]
    return cni


def test_standalone_writes_a_fixed_network_of_its_subnet(tmp_path: Path) -> None:
    config = ContainerdConfig.for_base_dir(tmp_path, bridge_name="kx0", subnet="10.85.1.0/24",
                                           cni_bin_dir="/opt/cni/bin")
    write_config_files(config)
    cni = _toml_cni(config)
    assert cni == {"bin_dir": "/opt/cni/bin", "conf_dir": str(tmp_path / "containerd/cni/net.d"),
                   "max_conf_num": 1}
    assert [p.name for p in config.cni_conf_dir.iterdir()] == ["10-kubelet-actors-kx0.conflist"]
    network = json.loads(config.cni_conflist_path.read_text())
    ipam = network["plugins"][0]["ipam"]
    assert (network["plugins"][0]["bridge"], ipam["ranges"], ipam["routes"]) == (
        "kx0", [[{"subnet": "10.85.1.0/24"}]], [{"dst": "0.0.0.0/0"}])
    assert ipam["dataDir"] == str(tmp_path / "containerd/cni/ipam")
    v6 = ContainerdConfig.for_base_dir(tmp_path, subnet="fd00:85::/64")
    assert json.loads(render_cni_conflist(v6))["plugins"][0]["ipam"]["routes"] == [
        {"dst": "::/0"}]


@pytest.mark.parametrize("cidrs", [["10.85.2.0/24"], ["10.85.3.0/24", "fd00:85:3::/64"]])
def test_cluster_mode_template_renders_the_same_network_on_the_given_ranges(
        tmp_path: Path, cidrs: list[str]) -> None:
    config = ContainerdConfig.for_base_dir(tmp_path, bridge_name="kx1",
                                           pod_cidr_from_kubelet=True)
    write_config_files(config)
    assert _toml_cni(config)["conf_template"] == str(tmp_path / "containerd/cni/conflist.template")
    assert list(config.cni_conf_dir.iterdir()) == []  # no network until the kubelet says
    routes = ["0.0.0.0/0", "::/0"][:len(cidrs)]  # containerd's: one per IP family
    rendered = json.loads(_go_template(config.cni_template_path.read_text(),
                                       PodCIDRRanges=cidrs, Routes=routes))
    fixed = json.loads(render_cni_conflist(config))
    fixed["plugins"][0]["ipam"]["ranges"] = [[{"subnet": c}] for c in cidrs]
    fixed["plugins"][0]["ipam"]["routes"] = [{"dst": r} for r in routes]
    assert rendered == fixed
    assert rendered["name"] == "kubelet-actors-kx1"


def test_what_containerd_rendered_goes_at_a_fresh_start_and_stays_at_a_restart(
        tmp_path: Path) -> None:
    config = ContainerdConfig.for_base_dir(tmp_path, pod_cidr_from_kubelet=True)
    write_config_files(config)
    config.rendered_conflist_path.write_text("{}")
    (config.cni_conf_dir / "99-other.conf").write_text("{}")
    write_config_files(config, fresh=False)  # containerd restarted: the kubelet gave it
    assert [p.name for p in config.cni_conf_dir.iterdir()] == ["10-containerd-net.conflist"]
    write_config_files(config)  # a new kubelet gives its pod CIDR again
    assert list(config.cni_conf_dir.iterdir()) == []


@pytest.mark.parametrize("from_kubelet", [False, True])
def test_the_operators_conf_dir_is_named_and_left_alone(tmp_path: Path,
                                                        from_kubelet: bool) -> None:
    operator = tmp_path / "net.d"
    operator.mkdir()
    (operator / "10-flannel.conflist").write_text("{}")
    (operator / RENDERED_CONFLIST).write_text("{}")
    config = ContainerdConfig.for_base_dir(tmp_path / "root", cni_conf_dir=operator,
                                           pod_cidr_from_kubelet=from_kubelet)
    write_config_files(config)
    assert _toml_cni(config)["conf_dir"] == str(operator)
    assert sorted(p.name for p in operator.iterdir()) == [RENDERED_CONFLIST,
                                                          "10-flannel.conflist"]
    assert not (tmp_path / "root/containerd/cni/net.d").exists()


def test_cni_dirs_must_be_absolute(tmp_path: Path) -> None:
    with pytest.raises(ContainerdError) as caught:
        ContainerdConfig.for_base_dir(tmp_path, cni_bin_dir="opt/cni/bin")
    assert str(caught.value) == "CNI bin dir 'opt/cni/bin': must be an absolute path"
    with pytest.raises(ContainerdError) as caught:
        ContainerdConfig.for_base_dir(tmp_path, cni_conf_dir="net.d")
    assert str(caught.value) == "CNI conf dir 'net.d': must be an absolute path"
