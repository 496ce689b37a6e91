"""The event reasons upstream's kubelet records (pkg/kubelet/events/event.go), in one place."""

from __future__ import annotations

NORMAL = "Normal"
WARNING = "Warning"
EVENT_TYPES = frozenset({NORMAL, WARNING})

# Containers
CREATED_CONTAINER = "Created"
STARTED_CONTAINER = "Started"
FAILED_TO_CREATE_CONTAINER = "Failed"
FAILED_TO_START_CONTAINER = "Failed"
KILLING_CONTAINER = "Killing"
BACK_OFF_START_CONTAINER = "BackOff"
EXCEEDED_GRACE_PERIOD = "ExceededGracePeriod"

# Pods
FAILED_TO_KILL_POD = "FailedKillPod"
EVICTED = "Evicted"
FAILED_TO_CREATE_POD_CONTAINER = "FailedCreatePodContainer"

# Images
PULLING_IMAGE = "Pulling"
PULLED_IMAGE = "Pulled"
FAILED_TO_PULL_IMAGE = "Failed"
FAILED_TO_INSPECT_IMAGE = "InspectFailed"
ERR_IMAGE_NEVER_PULL_POLICY = "ErrImageNeverPull"
BACK_OFF_PULL_IMAGE = "BackOff"

# The kubelet and its node
EVICTION_THRESHOLD_MET = "EvictionThresholdMet"
NODE_READY = "NodeReady"
NODE_NOT_READY = "NodeNotReady"
NODE_SHUTDOWN = "NodeShutdown"
STARTING_KUBELET = "Starting"
FAILED_MOUNT_VOLUME = "FailedMount"
SANDBOX_CHANGED = "SandboxChanged"
FAILED_CREATE_POD_SANDBOX = "FailedCreatePodSandBox"
NETWORK_NOT_READY = "NetworkNotReady"
FAILED_NODE_ALLOCATABLE_ENFORCEMENT = "FailedNodeAllocatableEnforcement"
SUCCESSFUL_NODE_ALLOCATABLE_ENFORCEMENT = "NodeAllocatableEnforced"
FAILED_PREPARE_DYNAMIC_RESOURCES = "FailedPrepareDynamicResources"

# Garbage collection
CONTAINER_GC_FAILED = "ContainerGCFailed"
IMAGE_GC_FAILED = "ImageGCFailed"
FREE_DISK_SPACE_FAILED = "FreeDiskSpaceFailed"
INVALID_DISK_CAPACITY = "InvalidDiskCapacity"

# Probes
CONTAINER_UNHEALTHY = "Unhealthy"
CONTAINER_PROBE_WARNING = "ProbeWarning"

# Lifecycle hooks
FAILED_POST_START_HOOK = "FailedPostStartHook"
FAILED_PRE_STOP_HOOK = "FailedPreStopHook"
