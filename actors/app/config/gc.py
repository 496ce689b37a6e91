"""The garbage collection and crash-loop back-off flags, as upstream names them.

Container GC: upstream's deprecated ``--minimum-container-ttl-duration``,
``--maximum-dead-containers-per-container`` and ``--maximum-dead-containers`` (flags only,
no KubeletConfiguration field). Image GC: ``--image-gc-high-threshold``,
``--image-gc-low-threshold``, ``--minimum-image-ttl-duration``, ``--image-maximum-gc-age``
(also imageGCHighThresholdPercent, imageGCLowThresholdPercent, imageMinimumGCAge and
imageMaximumGCAge in --config). Upstream has no flag for either collector's period; this
project's own ``--kubelet-actors-container-gc-period`` and ``--kubelet-actors-image-gc-period``
set them (for tests and small disks). ``crashLoopBackOff.maxContainerRestartPeriod`` is a
KubeletConfiguration field only, behind the KubeletCrashLoopBackOffMax gate, as upstream.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from actors.app.config.feature_gates import CRASH_LOOP_BACKOFF_MAX, enabled
from actors.app.config.pflag_values import DURATION, INT32
from actors.kubelet.gc_settings import CONTAINER_GC_PERIOD, IMAGE_GC_PERIOD, GCSettings
from runtime.errors import ConfigError
from runtime.kuberuntime import container_gc as cgc
from runtime.kuberuntime import image_gc as igc

MIN_RESTART_PERIOD, MAX_RESTART_PERIOD = 1.0, 300.0
"""Upstream's bounds of crashLoopBackOff.maxContainerRestartPeriod."""

AddFlag = Callable[..., None]


def add_gc_flags(add: AddFlag) -> None:
    """Add the flags to a parser (through build_parser's ``add``)."""
    add("--minimum-container-ttl-duration", type=DURATION, default=cgc.DEFAULT_MIN_AGE,
        help="deprecated, as upstream: the minimum age of a finished container before it "
             "is garbage collected")
    add("--maximum-dead-containers-per-container", type=INT32,
        default=cgc.DEFAULT_MAX_PER_POD_CONTAINER,
        help="deprecated, as upstream: the dead instances kept per container")
    add("--maximum-dead-containers", type=INT32, default=cgc.DEFAULT_MAX_CONTAINERS,
        help="deprecated, as upstream: the dead containers kept in all (-1: no limit)")
    add("--image-gc-high-threshold", type=INT32, default=igc.DEFAULT_HIGH_THRESHOLD,
        help="the percent of the image filesystem in use at which image GC always runs "
             "(100 turns image GC off)")
    add("--image-gc-low-threshold", type=INT32, default=igc.DEFAULT_LOW_THRESHOLD,
        help="the percent of the image filesystem in use image GC frees down to")
    add("--minimum-image-ttl-duration", type=DURATION, default=igc.DEFAULT_MIN_AGE,
        help="the minimum age of an unused image before it is garbage collected")
    add("--image-maximum-gc-age", type=DURATION, default=igc.DEFAULT_MAX_AGE,
        help="unused images older than this are garbage collected whatever the disk "
             "usage (0: never)")
    add("--kubelet-actors-container-gc-period", type=DURATION,
        default=CONTAINER_GC_PERIOD,
        help="this project's own (upstream's period is fixed, at this default): how often "
             "dead containers are garbage collected")
    add("--kubelet-actors-image-gc-period", type=DURATION, default=IMAGE_GC_PERIOD,
        help="this project's own (upstream's period is fixed, at this default): how often "
             "images are garbage collected")


def gc_settings(ns: argparse.Namespace) -> GCSettings:
    """The collector's settings from the parsed flags (and --config), checked as upstream."""
    images = igc.ImageGCPolicy(
        high_threshold=ns.image_gc_high_threshold, low_threshold=ns.image_gc_low_threshold,
        min_age=ns.minimum_image_ttl_duration, max_age=ns.image_maximum_gc_age)
    images.validate()
    for flag, seconds in (("--kubelet-actors-container-gc-period",
                           ns.kubelet_actors_container_gc_period),
                          ("--kubelet-actors-image-gc-period", ns.kubelet_actors_image_gc_period)):
        if seconds <= 0:
            raise ConfigError(f"{flag} {seconds:g}s: must be more than 0")
    return GCSettings(
        containers=cgc.ContainerGCPolicy(
            min_age=ns.minimum_container_ttl_duration,
            max_per_pod_container=ns.maximum_dead_containers_per_container,
            max_containers=ns.maximum_dead_containers),
        images=images,
        container_gc_period=ns.kubelet_actors_container_gc_period,
        image_gc_period=ns.kubelet_actors_image_gc_period,
        sandbox_image=ns.pod_infra_container_image)


def max_container_restart_period(ns: argparse.Namespace,
                                 gates: tuple[tuple[str, bool], ...]) -> float:
    """crashLoopBackOff.maxContainerRestartPeriod (from --config), checked as upstream's
    ValidateKubeletConfiguration checks it; upstream's 300 s when not set."""
    value: Any = getattr(ns, "max_container_restart_period", None)
    if value is None:
        return MAX_RESTART_PERIOD
    if not enabled(gates, CRASH_LOOP_BACKOFF_MAX):
        raise ConfigError("invalid configuration: FeatureGate KubeletCrashLoopBackOffMax not "
                          "enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set",
                          field="crashLoopBackOff.maxContainerRestartPeriod")
    if not MIN_RESTART_PERIOD <= value <= MAX_RESTART_PERIOD:
        raise ConfigError(f"invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod "
                          f"(got: {value:g} seconds) must be set between "
                          f"{MIN_RESTART_PERIOD:g}s and {MAX_RESTART_PERIOD:g}s",
                          field="crashLoopBackOff.maxContainerRestartPeriod")
    return float(value)
