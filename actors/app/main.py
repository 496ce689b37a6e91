"""The kubelet-actors program: flags in, a runtime chosen, the requested mode run."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from loguru import logger

# Re-exported (as X as X): the tests and callers name them through this module too.
from actors.app.command_line import EXIT_FAILED as EXIT_FAILED
from actors.app.command_line import EXIT_OK as EXIT_OK
from actors.app.command_line import EXIT_RUNTIME as EXIT_RUNTIME
from actors.app.command_line import EXIT_USAGE as EXIT_USAGE
from actors.app.config.flags import KubeletFlags, parse_flags
from actors.app.http.tls import begin_serving_pair, tls_settings
from actors.app.logging_setup import configure_logging
from actors.app.process_memory import limit_arenas
from actors.app.root_lock import hold_root_dir, share_root_dir
from actors.app.startup import end_of_start
from runtime.errors import ConfigError, CRIError, KubeletError
from runtime.node_address import node_ip as find_node_ip

# The rest of the kubelet is imported where it is used: a daemon's first start makes its
# serving pair in a child process from the moment its flags are read (run_daemon), beside
# those imports, so they come after it.
if TYPE_CHECKING:
    from runtime.containerd.embedded import EmbeddedContainerd
    from runtime.cri.client import CRIClient

EXIT_PODS_FAILED = EXIT_FAILED  # --runonce: a pod did not run as its spec asks


@contextlib.contextmanager
def open_runtime(
    flags: KubeletFlags, must_answer: bool = True
) -> Iterator[tuple[CRIClient, EmbeddedContainerd | None]]:
    """The CRI runtime to use: the given endpoint, or an embedded containerd we start.

    The embedded containerd is stopped on the way out; its containers keep running. With
    ``must_answer`` False (the daemon) a runtime that does not answer yet is logged, not
    fatal: the daemon waits for it with back-off, as upstream does.
    """
    from runtime.cri.client import CRIClient

    embedded: EmbeddedContainerd | None = None
    endpoint = flags.container_runtime_endpoint
    if not endpoint:
        # Imported here: about 12 ms that a run against a given endpoint need not pay.
        from actors.app.pod_network import embedded_network
        from runtime.containerd.embedded import EmbeddedContainerd

        embedded = EmbeddedContainerd(
            flags.root_dir,
            sandbox_image=flags.pod_infra_container_image,
            **embedded_network(flags),
        )
        logger.info("starting the embedded containerd under {}", flags.root_dir)
        embedded.start()
        endpoint = embedded.endpoint
    client = CRIClient(endpoint, timeout=flags.runtime_request_timeout)
    try:
        try:
            version = client.version()
            logger.info("runtime {} {} (CRI {}) at {}", version.runtime_name,
                        version.runtime_version, version.runtime_api_version, endpoint)
        except CRIError as err:
            down = CRIError(
                "Version",
                f"the container runtime at {endpoint} does not answer: {err.detail}",
                err.code,
            )
            if must_answer:
                raise down from err
            logger.warning("{}; waiting for it", down)
        yield client, embedded
    finally:
        client.close()
        if embedded is not None:
            embedded.stop()


def run_once(flags: KubeletFlags) -> int:
    from actors.app.cgroups import (
        LoggedRecorder,
        node_allocatable_enforcement,
        start_pod_cgroups,
    )
    from actors.app.node import node_ip, node_settings, this_node
    from actors.app.report import print_document, print_table
    from actors.app.runonce import RunOnce
    from runtime.clock import RealClock
    from runtime.kuberuntime.manager import KubeRuntimeManager
    from runtime.pod.static import read_manifest_dir

    clock = RealClock()
    listing = read_manifest_dir(flags.pod_manifest_path, flags.node_name)
    for error in listing.errors:
        logger.error("{}", error)
    for warning in listing.warnings:
        logger.warning("{}", warning)
    settings = node_settings(flags)
    host_ip = node_ip(flags)
    with hold_root_dir(flags.root_dir):
        share_root_dir(flags.root_dir)
        with open_runtime(flags) as (client, embedded):
            cgroups = start_pod_cgroups(flags, client, embedded=embedded is not None)
            # Run once has no events actor: the Node events are only logged.
            enforcement = node_allocatable_enforcement(flags, cgroups, LoggedRecorder())
            try:
                if enforcement is not None:
                    enforcement.start()
                manager = KubeRuntimeManager(client, settings, clock, node_ip=host_ip,
                                             cgroups=cgroups)
                pods = tuple(p.pod for p in listing.pods)
                logger.info("run-once: {} pod(s) from {}", len(pods), flags.pod_manifest_path)
                outcomes = RunOnce(manager, clock, flags.runonce_timeout, host_ip=host_ip,
                                   node=this_node(flags),
                                   allowed_unsafe_sysctls=flags.allowed_unsafe_sysctls
                                   ).run(pods)
            finally:
                if enforcement is not None:
                    enforcement.stop()
    if flags.output == "table":
        print_table(outcomes, listing.errors)
    else:  # json, yaml
        print_document(outcomes, listing.errors, flags.output)
    ok = all(o.ok for o in outcomes) and not listing.errors
    return EXIT_OK if ok else EXIT_PODS_FAILED


def run_daemon(flags: KubeletFlags) -> int:
    limit_arenas()  # before the daemon's threads start: see actors.app.process_memory
    host_ip = find_node_ip(flags.node_ip, flags.node_name)  # as actors.app.node.node_ip
    # A first start's serving pair is made in a child process from here on, beside the
    # daemon's imports and runtime connection (actors.app.http.self_signed).
    # (None with serverTLSBootstrap in cluster mode: the API server's CA signs it.)
    pair = (begin_serving_pair(tls_settings(flags, (host_ip,)))
            if flags.port and not (flags.server_tls_bootstrap and flags.kubeconfig)
            else contextlib.nullcontext())
    with hold_root_dir(flags.root_dir), pair:
        share_root_dir(flags.root_dir)
        from actors.app.daemon import StopSignals, run_until_signalled, start_kubelet
        from runtime.kuberuntime.dns import resolv_conf_limit_problem

        if flags.resolv_conf and (problem := resolv_conf_limit_problem(flags.resolv_conf,
                                                                        flags.cluster_domain)):
            # Upstream's CheckLimitsForResolvConf, once at start (a warning event on the
            # node).
            logger.warning("CheckLimitsForResolvConf: {}", problem)

        with open_runtime(flags, must_answer=False) as (client, embedded):
            signals = StopSignals()  # /healthz answers before start_kubelet returns
            try:
                kubelet = start_kubelet(flags, client, host_ip, embedded,
                                        runtime_endpoint=client.endpoint)
            except BaseException:
                signals.restore()
                raise
            end_of_start()
            return run_until_signalled(kubelet, signals=signals)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        flags = parse_flags(args)
    except ConfigError as err:  # a flag (or --config) is wrong: a usage error, exit 2
        print(f"kubelet-actors: {err}", file=sys.stderr)
        return EXIT_USAGE
    configure_logging(flags.log_level, flags.log_format == "json", flags.vmodule)
    try:
        if flags.runonce:
            end_of_start()
            return run_once(flags)
        return run_daemon(flags)
    except KubeletError as err:
        print(f"kubelet-actors: {err}", file=sys.stderr)
        return EXIT_RUNTIME
