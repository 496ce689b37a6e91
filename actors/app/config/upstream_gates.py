"""Every feature gate upstream's kubelet knows, as data: its default, its stage and whether
it is locked to that default.

Transcribed from kubernetes/kubernetes pkg/features/kube_features.go
(``defaultVersionedKubernetesFeatureGates``, each gate's newest VersionedSpec; the newest
version of the file stored for this project is the 1.35 development line, which names
gates' removals in 1.36 to 1.38), with the gates that file registers from
k8s.io/apiserver (genericfeatures), apiextensions-apiserver, controller-manager and
component-base/zpages, client-go's (k8s.io/client-go/features/known_features.go, wired in
by kube_features.go's init) and component-base/logs/api/v1's (LoggingAlphaOptions,
LoggingBetaOptions, ContextualLogging, which cmd/kubelet registers); ``AllAlpha`` and
``AllBeta`` are component-base/featuregate's own.

This is the 1.35 line, not yet v1.37, the release the Pod API model follows: no copy of
v1.37's gates could be read whole here. kubernetes/kubernetes is stored only at the 1.35
development line; kubernetes/website (one page a gate,
content/en/docs/reference/command-line-tools-reference/feature-gates/) is over the size a
snapshot can be brought here at, and the newest whole copy of it that can be (the fork
Andygol/k8s-website, main at 5a52c384728e, 2026-01-22) documents no release past 1.35.
Read at 1.35 by scripts/gates_from_website.py, that copy agrees with this table on all but
21 gates, where the pages lag the code (five gates' pages still at an older stage or
default, such as SupplementalGroupsPolicy and SystemdWatchdog as beta; seven pages of gates
the code no longer registers not marked removed; nine gates the code registers, client-go's
CBOR and informer gates among them, with no page), so this table keeps kube_features.go's
reading; the same script derives the v1.37 table
from a kubernetes/website copy that reaches it (``--version 1.37 --diff``).

One gate a line: ``Name default stage [locked] [kubelet]``. ``kubelet`` marks a gate that
changes what a kubelet does; the others select behaviour of the API server, the scheduler,
the controllers, kube-proxy or Windows nodes, and upstream's kubelet accepts them and does
nothing with either value (so does this one). actors.app.config.feature_gates reads this.
"""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import Struct


class GateSpec(Struct, frozen=True):
    """One gate as upstream registers it."""

    default: bool
    stage: str  # ALPHA, BETA, GA, DEPRECATED
    locked: bool  # LockToDefault: the other value is refused
    kubelet: bool  # it changes what a kubelet does


_TABLE = """
AllAlpha false ALPHA
AllBeta false BETA
AllowDNSOnlyNodeCSR false DEPRECATED kubelet
AllowInsecureKubeletCertificateSigningRequests false DEPRECATED
AllowOverwriteTerminationGracePeriodSeconds false DEPRECATED locked kubelet
AnyVolumeDataSource true GA locked
AuthorizeNodeWithSelectors true GA locked
AuthorizePodWebsocketUpgradeCreatePermission true BETA
CustomCPUCFSQuotaPeriod false ALPHA kubelet
CPUManagerPolicyAlphaOptions false ALPHA kubelet
CPUManagerPolicyBetaOptions true BETA kubelet
CPUManagerPolicyOptions true GA locked kubelet
CSIMigrationPortworx true GA locked kubelet
CSIServiceAccountTokenSecrets true BETA kubelet
CSIVolumeHealth false ALPHA kubelet
ChangeContainerStatusOnKubeletRestart false DEPRECATED kubelet
ClearingNominatedNodeNameAfterBinding true BETA
ClusterTrustBundle false BETA kubelet
ClusterTrustBundleProjection false BETA kubelet
ContainerCheckpoint true BETA kubelet
ContainerRestartRules true BETA kubelet
ContainerStopSignals false ALPHA kubelet
CoordinatedLeaderElection false BETA
CrossNamespaceVolumeDataSource false ALPHA
DRAAdminAccess true BETA
DRAConsumableCapacity false ALPHA
DRADeviceBindingConditions false ALPHA
DRADeviceTaintRules false ALPHA
DRADeviceTaints false ALPHA
DRAExtendedResource false ALPHA kubelet
DRAPartitionableDevices false ALPHA
DRAPrioritizedList true BETA
DRAResourceClaimDeviceStatus true BETA
DRASchedulerFilterTimeout true BETA
DeploymentReplicaSetTerminatingReplicas true BETA
DisableAllocatorDualWrite true GA locked
DisableCPUQuotaWithExclusiveCPUs true BETA kubelet
DisableNodeKubeProxyVersion true DEPRECATED kubelet
DynamicResourceAllocation true GA locked kubelet
EnvFiles true BETA kubelet
EventedPLEG false ALPHA kubelet
ExecProbeTimeout true GA locked kubelet
ExternalServiceAccountTokenSigner true BETA
GangScheduling false ALPHA
GenericWorkload false ALPHA
GitRepoVolumeDriver false DEPRECATED kubelet
GracefulNodeShutdown true BETA kubelet
GracefulNodeShutdownBasedOnPodPriority true BETA kubelet
HPAConfigurableTolerance true BETA
HPAScaleToZero false ALPHA
HonorPVReclaimPolicy true GA locked
HostnameOverride true BETA kubelet
ImageMaximumGCAge true GA locked kubelet
ImageVolume true BETA kubelet
ImageVolumeWithDigest false ALPHA kubelet
InPlacePodLevelResourcesVerticalScaling false ALPHA kubelet
InPlacePodVerticalScaling true GA locked kubelet
InPlacePodVerticalScalingAllocatedStatus false DEPRECATED kubelet
InPlacePodVerticalScalingExclusiveCPUs false ALPHA kubelet
InPlacePodVerticalScalingExclusiveMemory false ALPHA kubelet
InTreePluginPortworxUnregister false ALPHA kubelet
JobBackoffLimitPerIndex true GA locked
JobManagedBy true GA locked
JobPodReplacementPolicy true GA locked
JobSuccessPolicy true GA locked
KubeletCgroupDriverFromCRI true GA locked kubelet
KubeletCrashLoopBackOffMax true BETA kubelet
KubeletEnsureSecretPulledImages true BETA kubelet
KubeletFineGrainedAuthz true BETA kubelet
KubeletInUserNamespace false ALPHA kubelet
KubeletPSI true BETA kubelet
KubeletPodResourcesDynamicResources true BETA kubelet
KubeletPodResourcesGet true BETA kubelet
KubeletPodResourcesListUseActivePods true DEPRECATED kubelet
KubeletRegistrationGetOnExistsOnly false DEPRECATED kubelet
KubeletSeparateDiskGC true BETA kubelet
KubeletServiceAccountTokenForCredentialProviders true BETA kubelet
KubeletTracing true GA locked kubelet
LocalStorageCapacityIsolationFSQuotaMonitoring false BETA kubelet
LogarithmicScaleDown true GA locked
MatchLabelKeysInPodAffinity true GA locked
MatchLabelKeysInPodTopologySpread true BETA
MatchLabelKeysInPodTopologySpreadSelectorMerge true BETA
MaxUnavailableStatefulSet true BETA
MemoryManager true GA locked kubelet
MemoryQoS false ALPHA kubelet
MultiCIDRServiceAllocator true GA locked
MutableCSINodeAllocatableCount true BETA kubelet
MutablePVNodeAffinity false ALPHA
MutablePodResourcesForSuspendedJobs false ALPHA
MutableSchedulingDirectivesForSuspendedJobs false ALPHA
NFTablesProxyMode true GA locked
NodeDeclaredFeatures false ALPHA kubelet
NodeInclusionPolicyInPodTopologySpread true GA locked
NodeLogQuery false BETA kubelet
NodeSwap true GA locked kubelet
NominatedNodeNameForExpectation true BETA
OpportunisticBatching true BETA
OrderedNamespaceDeletion true GA locked
PodAndContainerStatsFromCRI false ALPHA kubelet
PodCertificateRequest false BETA kubelet
PodDeletionCost true BETA
PodLevelResources true BETA kubelet
PodLifecycleSleepAction true GA locked kubelet
PodLifecycleSleepActionAllowZero true GA locked kubelet
PodLogsQuerySplitStreams false ALPHA kubelet
PodObservedGenerationTracking true GA locked kubelet
PodReadyToStartContainersCondition true BETA kubelet
PodSchedulingReadiness true GA locked
PodTopologyLabelsAdmission true BETA
PortForwardWebsockets true BETA
PreferSameTrafficDistribution true GA locked
PreventStaticPodAPIReferences true BETA kubelet
ProcMountType true BETA kubelet
QOSReserved false ALPHA kubelet
RecoverVolumeExpansionFailure true GA locked
RecursiveReadOnlyMounts true GA locked kubelet
ReduceDefaultCrashLoopBackOffDecay false ALPHA kubelet
RelaxedDNSSearchValidation true GA locked
RelaxedEnvironmentVariableValidation true GA locked
RelaxedServiceNameValidation false ALPHA
ReloadKubeletServerCertificateFile true BETA kubelet
ResourceHealthStatus false ALPHA kubelet
RestartAllContainersOnContainerExits false ALPHA kubelet
RotateKubeletServerCertificate true BETA kubelet
RuntimeClassInImageCriAPI false ALPHA kubelet
SELinuxChangePolicy true BETA kubelet
SELinuxMount false BETA kubelet
SELinuxMountReadWriteOncePod true BETA kubelet
SchedulerAsyncAPICalls false BETA
SchedulerAsyncPreemption true BETA
SchedulerPopFromBackoffQ true BETA
SchedulerQueueingHints true GA locked
SeparateTaintEvictionController true GA locked
ServiceAccountNodeAudienceRestriction true BETA
ServiceAccountTokenJTI true GA locked
ServiceAccountTokenNodeBinding true GA locked
ServiceAccountTokenNodeBindingValidation true GA locked
ServiceAccountTokenPodNodeInfo true GA locked
ServiceTrafficDistribution true GA locked
SidecarContainers true GA locked kubelet
StatefulSetSemanticRevisionComparison true BETA
StorageCapacityScoring false ALPHA
StorageNamespaceIndex true DEPRECATED
StorageVersionMigrator false BETA
StreamingCollectionEncodingToJSON true GA locked
StreamingCollectionEncodingToProtobuf true GA locked
StrictIPCIDRValidation false ALPHA
SupplementalGroupsPolicy true GA locked kubelet
SystemdWatchdog true GA locked kubelet
TaintTolerationComparisonOperators false ALPHA kubelet
TopologyAwareHints true GA locked
TopologyManagerPolicyAlphaOptions false ALPHA kubelet
TopologyManagerPolicyBetaOptions true BETA kubelet
TopologyManagerPolicyOptions true GA kubelet
TranslateStreamCloseWebsocketRequests true BETA
UserNamespacesHostNetworkSupport false ALPHA kubelet
UserNamespacesSupport true BETA kubelet
VolumeAttributesClass true GA locked
VolumeLimitScaling false ALPHA
WinDSR true GA locked
WinOverlay true GA locked
WindowsCPUAndMemoryAffinity false ALPHA
WindowsGracefulNodeShutdown true BETA
WindowsHostNetwork false DEPRECATED
CRDObservedGenerationTracking false BETA
CRDValidationRatcheting true GA locked
CustomResourceFieldSelectors true GA locked
APIResponseCompression true BETA
APIServerIdentity true BETA
APIServerTracing true GA locked
APIServingWithRoutine false ALPHA
AggregatedDiscoveryRemoveBetaType true DEPRECATED locked
AllowParsingUserUIDFromCertAuth true BETA
AllowUnsafeMalformedObjectDeletion false ALPHA
AnonymousAuthConfigurableEndpoints true GA locked
AuthorizeWithSelectors true GA locked
BtreeWatchCache true GA locked
CBORServingAndStorage false ALPHA
ConcurrentWatchObjectDecode false BETA
ConsistentListFromCache true GA locked
ConstrainedImpersonation false ALPHA
DeclarativeValidation true BETA
DeclarativeValidationTakeover false BETA
DetectCacheInconsistency true BETA
KMSv1 false DEPRECATED
ListFromCacheSnapshot true BETA
MutatingAdmissionPolicy false BETA
OpenAPIEnums true BETA
RemoteRequestHeaderUID true BETA
ResilientWatchCacheInitialization true GA locked
RetryGenerateName true GA locked
SeparateCacheWatchRPC false DEPRECATED
SizeBasedListCostEstimate true BETA
StorageVersionAPI false ALPHA
StorageVersionHash true BETA
StructuredAuthenticationConfiguration true GA locked
StructuredAuthenticationConfigurationEgressSelector true BETA
StructuredAuthenticationConfigurationJWKSMetrics true BETA
StructuredAuthorizationConfiguration true GA locked
TokenRequestServiceAccountUIDValidation true BETA
UnauthenticatedHTTP2DOSMitigation true BETA
UnknownVersionInteroperabilityProxy false ALPHA
WatchCacheInitializationPostStartHook false BETA
WatchFromStorageWithoutResourceVersion false DEPRECATED locked
WatchList true BETA
CloudControllerManagerWatchBasedRoutesReconciliation false ALPHA
CloudControllerManagerWebhook false ALPHA
ComponentFlagz false ALPHA kubelet
ComponentStatusz false ALPHA kubelet
ClientsAllowCBOR false ALPHA kubelet
ClientsPreferCBOR false ALPHA kubelet
InOrderInformers true BETA kubelet
InOrderInformersBatchProcess true BETA kubelet
InformerResourceVersion true GA kubelet
WatchListClient true BETA kubelet
ContextualLogging true BETA
LoggingAlphaOptions false ALPHA
LoggingBetaOptions true BETA
"""


def _parse(table: str) -> dict[str, GateSpec]:
    gates: dict[str, GateSpec] = {}
    for line in filter(None, (raw.strip() for raw in table.splitlines())):
        name, default, stage, *marks = line.split()
        if name in gates or default not in ("true", "false") or stage not in (
                "ALPHA", "BETA", "GA", "DEPRECATED") or set(marks) - {"locked", "kubelet"}:
            raise ValueError(f"upstream gate table: bad line {line!r}")
        gates[name] = GateSpec(default=default == "true", stage=stage,
                               locked="locked" in marks, kubelet="kubelet" in marks)
    return gates


UPSTREAM_GATES: Mapping[str, GateSpec] = _parse(_TABLE)
"""Every upstream gate the kubelet registers, by name."""
