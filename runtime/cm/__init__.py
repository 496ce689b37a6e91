"""Container management of the node (upstream pkg/kubelet/cm): QoS classes, the pod's
cgroup resources, the kubepods cgroup hierarchy and containers' OOM score adjustment.

The decisions (qos, resources, oom, names) are pure functions of the pod; the cgroup
filesystem is touched only through a CgroupManager (cgroupfs.py, or fake.py in tests),
driven by PodCgroups (pod_cgroups.py).
"""
