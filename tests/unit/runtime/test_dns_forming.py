"""A pod's DNS config (runtime.kuberuntime.dns), as upstream's DNS configurer forms it:
the policies, the pod's dnsConfig, the limits and the events (upstream's TestParseResolvConf,
TestFormDNSSearchFitsLimits, TestFormDNSNameserversFitsLimits, TestGetPodDNSType and
TestGetPodDNS*, as tables)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.cri.types import DNSConfig
from runtime.kuberuntime.dns import (
    DNSEvent,
    ResolvConfError,
    form_pod_dns,
    parse_resolv_conf,
    read_resolv_conf,
    resolv_conf_limit_problem,
)
from runtime.pod.model import ObjectMeta, Pod, PodDNSConfig, PodDNSConfigOption, PodSpec

HOST = DNSConfig(("192.0.2.53",), ("example.com",), ("edns0",))
CLUSTER_SEARCH = ("ns.svc.cluster.local", "svc.cluster.local", "cluster.local")


@pytest.mark.parametrize(("text", "expected"), [
    ("", DNSConfig()),
    (" ", DNSConfig()),
    ("\n", DNSConfig()),
    ("\t\n\t", DNSConfig()),
    ("#comment\n", DNSConfig()),
    (" #comment\n", DNSConfig()),
    ("#comment\n#comment", DNSConfig()),
    ("nameserver 1.2.3.4", DNSConfig(("1.2.3.4",))),
    (" nameserver 1.2.3.4", DNSConfig(("1.2.3.4",))),
    ("\tnameserver 1.2.3.4", DNSConfig(("1.2.3.4",))),
    ("nameserver\t1.2.3.4", DNSConfig(("1.2.3.4",))),
    ("nameserver 1.2.3.4\nnameserver 2.3.4.5", DNSConfig(("1.2.3.4", "2.3.4.5"))),
    ("nameserver 1.2.3.4 #comment", DNSConfig(("1.2.3.4",))),
    ("search ", DNSConfig()),
    ("search .", DNSConfig()),
    ("search foo", DNSConfig((), ("foo",))),
    ("search foo bar", DNSConfig((), ("foo", "bar"))),
    ("search foo. bar", DNSConfig((), ("foo", "bar"))),
    ("search foo\nsearch bar", DNSConfig((), ("bar",))),
    ("nameserver 1.2.3.4\nsearch foo bar", DNSConfig(("1.2.3.4",), ("foo", "bar"))),
    ("options ndots:5 attempts:2", DNSConfig((), (), ("ndots:5", "attempts:2"))),
    ("options ndots:1\noptions ndots:5 attempts:3",
     DNSConfig((), (), ("ndots:5", "attempts:3"))),  # the last options line wins
    ("options a\noptions b", DNSConfig((), (), ("b",))),
    ("nameserver\n", DNSConfig()),  # upstream: an error, the line is skipped
])
def test_parse_resolv_conf(text: str, expected: DNSConfig) -> None:
    assert parse_resolv_conf(text) == expected


def test_read_resolv_conf_errors(tmp_path: Path) -> None:
    with pytest.raises(ResolvConfError, match="no such file or directory"):
        read_resolv_conf(str(tmp_path / "missing"))
    (tmp_path / "r").write_text("nameserver 1.1.1.1\n")
    assert read_resolv_conf(str(tmp_path / "r")) == DNSConfig(("1.1.1.1",))


def make_pod(**spec: Any) -> Pod:
    return Pod(metadata=ObjectMeta(name="web", namespace="ns", uid="u1"), spec=PodSpec(**spec))


def options(*pairs: tuple[str, str | None]) -> tuple[PodDNSConfigOption, ...]:
    return tuple(PodDNSConfigOption(name=n, value=v) for n, v in pairs)


MISSING = DNSEvent("MissingClusterDNS", (
    'pod: "web_ns(u1)". kubelet does not have ClusterDNS IP configured and cannot create Pod '
    'using "ClusterFirst" policy. Falling back to "Default" policy.'))

# (case, pod spec, cluster DNS, resolv-conf path, expected config, expected events)
CASES: list[tuple[str, dict[str, Any], tuple[str, ...], str, DNSConfig,
                  tuple[DNSEvent, ...]]] = [
    ("ClusterFirst", {}, ("10.0.0.10",), "/r",
     DNSConfig(("10.0.0.10",), (*CLUSTER_SEARCH, "example.com"), ("ndots:5",)), ()),
    ("ClusterFirst, several cluster DNS servers", {}, ("10.0.0.10", "10.0.0.11"), "/r",
     DNSConfig(("10.0.0.10", "10.0.0.11"), (*CLUSTER_SEARCH, "example.com"), ("ndots:5",)),
     ()),
    ("ClusterFirst without cluster DNS is Default", {}, (), "/r", HOST, (MISSING,)),
    ("ClusterFirst without cluster DNS nor resolv.conf", {}, (), "",
     DNSConfig(("127.0.0.1",), (".",)), (MISSING,)),
    ("ClusterFirst on the host network is Default", {"host_network": True},
     ("10.0.0.10",), "/r", HOST, ()),
    ("ClusterFirstWithHostNet", {"host_network": True,
                                 "dns_policy": "ClusterFirstWithHostNet"},
     ("10.0.0.10",), "/r",
     DNSConfig(("10.0.0.10",), (*CLUSTER_SEARCH, "example.com"), ("ndots:5",)), ()),
    ("ClusterFirstWithHostNet without cluster DNS",
     {"dns_policy": "ClusterFirstWithHostNet"}, (), "/r", HOST, (MISSING,)),
    ("Default", {"dns_policy": "Default"}, ("10.0.0.10",), "/r", HOST, ()),
    ("Default with --resolv-conf ''", {"dns_policy": "Default"}, (), "",
     DNSConfig(("127.0.0.1",), (".",)), ()),
    ("None", {"dns_policy": "None"}, ("10.0.0.10",), "/r", DNSConfig(), ()),
    ("None with dnsConfig", {"dns_policy": "None", "dns_config": PodDNSConfig(
        nameservers=("203.0.113.1",), searches=("my.dns.search.suffix",),
        options=options(("ndots", "2"), ("edns0", None)))}, (), "/r",
     DNSConfig(("203.0.113.1",), ("my.dns.search.suffix",), ("ndots:2", "edns0")), ()),
    ("ClusterFirst with dnsConfig", {"dns_config": PodDNSConfig(
        nameservers=("10.0.0.10", "203.0.113.1"), searches=("cluster.local", "my.dom"),
        options=options(("ndots", "3"), ("debug", None)))}, ("10.0.0.10",), "/r",
     DNSConfig(("10.0.0.10", "203.0.113.1"), (*CLUSTER_SEARCH, "example.com", "my.dom"),
               ("ndots:3", "debug")), ()),
    ("Default with dnsConfig", {"dns_policy": "Default", "dns_config": PodDNSConfig(
        options=options(("edns0", None), ("ndots", "1")))}, (), "/r",
     DNSConfig(HOST.servers, HOST.searches, ("edns0", "ndots:1")), ()),
]


@pytest.mark.parametrize(("case", "spec", "cluster_dns", "resolv", "expected", "events"),
                         CASES, ids=[c[0] for c in CASES])
def test_form_pod_dns(case: str, spec: dict[str, Any], cluster_dns: tuple[str, ...],
                      resolv: str, expected: DNSConfig, events: tuple[DNSEvent, ...]) -> None:
    host = HOST if resolv else DNSConfig()
    assert form_pod_dns(make_pod(**spec), host, resolv, cluster_dns, "cluster.local") == (
        expected, events)


def test_ipv6_node_without_resolv_conf_asks_its_own_localhost() -> None:
    config, _ = form_pod_dns(make_pod(dns_policy="Default"), DNSConfig(), "", (), "", True)
    assert config == DNSConfig(("::1",), (".",))


def test_cluster_first_without_a_domain_keeps_the_node_s_searches() -> None:
    config, _ = form_pod_dns(make_pod(), HOST, "/r", ("10.0.0.10",), "")
    assert config == DNSConfig(("10.0.0.10",), ("example.com",), ("ndots:5",))


def none_with(**dns: Any) -> Pod:
    return make_pod(dns_policy="None", dns_config=PodDNSConfig(**dns))


def limited(pod: Pod) -> tuple[DNSConfig, tuple[DNSEvent, ...]]:
    return form_pod_dns(pod, DNSConfig(), "/r", (), "")


def test_more_than_three_nameservers_are_cut_with_an_event() -> None:
    config, events = limited(none_with(nameservers=("1.1.1.1", "2.2.2.2", "3.3.3.3",
                                                    "4.4.4.4")))
    assert config.servers == ("1.1.1.1", "2.2.2.2", "3.3.3.3")
    assert events == (DNSEvent("DNSConfigForming", (
        "Nameserver limits were exceeded, some nameservers have been omitted, the applied "
        "nameserver line is: 1.1.1.1 2.2.2.2 3.3.3.3")),)


@pytest.mark.parametrize(("searches", "kept"), [
    (tuple(f"s{i}.dom" for i in range(32)), tuple(f"s{i}.dom" for i in range(32))),
    (tuple(f"s{i}.dom" for i in range(40)), tuple(f"s{i}.dom" for i in range(32))),
    # A domain longer than 253 characters would abort glibc's resolver: dropped.
    (("ok.dom", "x" * 254, "also.ok"), ("ok.dom", "also.ok")),
    # 2048 characters at most on the line: the last domains go until it fits.
    (tuple(f"{i:02d}" + "a" * 98 for i in range(21)),
     tuple(f"{i:02d}" + "a" * 98 for i in range(20))),
], ids=["32-fit", "40-cut-to-32", "too-long-domain", "too-long-line"])
def test_search_limits(searches: tuple[str, ...], kept: tuple[str, ...]) -> None:
    config, events = limited(none_with(searches=searches))
    assert config.searches == kept
    if kept == searches:
        assert events == ()
    else:
        assert events == (DNSEvent("DNSConfigForming", (
            "Search Line limits were exceeded, some search paths have been omitted, the "
            f"applied search line is: {' '.join(kept)}")),)
    assert len(" ".join(config.searches)) <= 2048


def test_duplicates_are_dropped() -> None:
    config, _ = limited(none_with(nameservers=("1.1.1.1", "1.1.1.1"),
                                  searches=("a.dom", "a.dom", "b.dom")))
    assert (config.servers, config.searches) == (("1.1.1.1",), ("a.dom", "b.dom"))


@pytest.mark.parametrize(("text", "domain", "problem"), [
    ("search a b c\n", "cluster.local", ""),
    ("search " + " ".join(f"d{i}" for i in range(30)) + "\n", "cluster.local",
     "contains search line consisting of more than 29 domains!"),
    ("search " + " ".join(f"d{i}" for i in range(30)) + "\n", "", ""),
    ("search " + "x" * 254 + "\n", "", "contains a search path which length is more than "
                                       "allowed 253 chars!"),
    ("search " + " ".join("y" * 200 for _ in range(11)) + "\n", "",
     "contains search line which length is more than allowed 2048 chars!"),
])
def test_resolv_conf_limit_problem(tmp_path: Path, text: str, domain: str,
                                   problem: str) -> None:
    path = tmp_path / "resolv.conf"
    path.write_text(text)
    found = resolv_conf_limit_problem(str(path), domain)
    assert found.endswith(problem) if problem else found == ""
