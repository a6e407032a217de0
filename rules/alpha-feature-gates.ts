import { minorOf, parseVersion } from './version.js';

/**
 * The kube feature gates that are alpha at each minor, as the binaries this project builds list them
 * (`kube-apiserver`, `kube-controller-manager` and `kube-scheduler --help` of 1.32.13, 1.33.13 and
 * 1.34.4: `(ALPHA - default=false)`; test/rules/alpha-feature-gates.test.ts compares this table with
 * the cached binaries). KEP-4330 emulates beta and GA features only: an alpha gate turned on during a
 * trial keeps no N behaviour to go back to, so such a hop cannot be reversible (rules/hop-reversibility.ts).
 */
export const ALPHA_FEATURE_GATES: Readonly<Record<string, string>> = {
  '1.32':
    'APIServingWithRoutine AllAlpha AllowUnsafeMalformedObjectDeletion CBORServingAndStorage CPUManagerPolicyAlphaOptions CSIVolumeHealth ClientsAllowCBOR ClientsPreferCBOR CloudControllerManagerWebhook ClusterTrustBundle ClusterTrustBundleProjection ComponentFlagz ComponentStatusz CoordinatedLeaderElection CrossNamespaceVolumeDataSource CustomCPUCFSQuotaPeriod DRAAdminAccess DRAResourceClaimDeviceStatus DisableAllocatorDualWrite EventedPLEG ExternalServiceAccountTokenSigner HPAScaleToZero ImageVolume InPlacePodVerticalScaling InPlacePodVerticalScalingAllocatedStatus InPlacePodVerticalScalingExclusiveCPUs InTreePluginPortworxUnregister InformerResourceVersion KubeletCrashLoopBackOffMax KubeletFineGrainedAuthz KubeletInUserNamespace KubeletPodResourcesDynamicResources KubeletPodResourcesGet LoggingAlphaOptions MaxUnavailableStatefulSet MemoryQoS MutatingAdmissionPolicy PodAndContainerStatsFromCRI PodLevelResources PodLifecycleSleepActionAllowZero PodLogsQuerySplitStreams QOSReserved RelaxedDNSSearchValidation RemoteRequestHeaderUID ResourceHealthStatus RuntimeClassInImageCriApi SELinuxChangePolicy SELinuxMount SchedulerAsyncPreemption StorageVersionAPI StorageVersionMigrator SupplementalGroupsPolicy TopologyManagerPolicyAlphaOptions UnknownVersionInteroperabilityProxy UserNamespacesPodSecurityStandards VolumeCapacityPriority WinDSR WindowsCPUAndMemoryAffinity WindowsGracefulNodeShutdown WindowsHostNetwork',
  '1.33':
    'APIServingWithRoutine AllAlpha AllowUnsafeMalformedObjectDeletion CBORServingAndStorage CPUManagerPolicyAlphaOptions CSIVolumeHealth ClientsAllowCBOR ClientsPreferCBOR CloudControllerManagerWebhook ComponentFlagz ComponentStatusz ContainerStopSignals CrossNamespaceVolumeDataSource CustomCPUCFSQuotaPeriod DRAAdminAccess DRADeviceTaints DRAPartitionableDevices DRAPrioritizedList DeploymentReplicaSetTerminatingReplicas EventedPLEG ExternalServiceAccountTokenSigner HPAConfigurableTolerance HPAScaleToZero InPlacePodVerticalScalingExclusiveCPUs InTreePluginPortworxUnregister InformerResourceVersion KubeletCrashLoopBackOffMax KubeletEnsureSecretPulledImages KubeletInUserNamespace KubeletPSI KubeletPodResourcesDynamicResources KubeletPodResourcesGet KubeletServiceAccountTokenForCredentialProviders ListFromCacheSnapshot LoggingAlphaOptions MaxUnavailableStatefulSet MemoryQoS MutableCSINodeAllocatableCount MutatingAdmissionPolicy PodAndContainerStatsFromCRI PodLevelResources PodLogsQuerySplitStreams PodObservedGenerationTracking PodTopologyLabelsAdmission PreferSameTrafficDistribution QOSReserved ReduceDefaultCrashLoopBackOffDecay ResourceHealthStatus RuntimeClassInImageCriApi StorageCapacityScoring StorageVersionAPI StorageVersionMigrator StrictIPCIDRValidation TopologyManagerPolicyAlphaOptions UnknownVersionInteroperabilityProxy UserNamespacesPodSecurityStandards WindowsCPUAndMemoryAffinity WindowsGracefulNodeShutdown',
  '1.34':
    'APIServingWithRoutine AllAlpha AllowUnsafeMalformedObjectDeletion CBORServingAndStorage CPUManagerPolicyAlphaOptions CSIVolumeHealth ClearingNominatedNodeNameAfterBinding ClientsAllowCBOR ClientsPreferCBOR CloudControllerManagerWebhook ComponentFlagz ComponentStatusz ContainerRestartRules ContainerStopSignals CrossNamespaceVolumeDataSource CustomCPUCFSQuotaPeriod DRAConsumableCapacity DRADeviceBindingConditions DRADeviceTaints DRAExtendedResource DRAPartitionableDevices DeploymentReplicaSetTerminatingReplicas EnvFiles EventedPLEG HPAConfigurableTolerance HPAScaleToZero HostnameOverride InPlacePodVerticalScalingExclusiveCPUs InPlacePodVerticalScalingExclusiveMemory InTreePluginPortworxUnregister InformerResourceVersion KubeletCrashLoopBackOffMax KubeletEnsureSecretPulledImages KubeletInUserNamespace LoggingAlphaOptions MaxUnavailableStatefulSet MemoryQoS NominatedNodeNameForExpectation PodAndContainerStatsFromCRI PodCertificateRequest PodLogsQuerySplitStreams PodTopologyLabelsAdmission QOSReserved ReduceDefaultCrashLoopBackOffDecay RelaxedServiceNameValidation ResourceHealthStatus RuntimeClassInImageCriApi StorageCapacityScoring StorageVersionAPI StorageVersionMigrator StrictIPCIDRValidation TopologyManagerPolicyAlphaOptions UnknownVersionInteroperabilityProxy UserNamespacesPodSecurityStandards WindowsCPUAndMemoryAffinity',
};

/**
 * The alpha gates among `--feature-gates` values (`A=true,kube:B=true,C=false`, one flag value per
 * component) at the cluster's version, sorted; undefined for a minor this table does not know (an
 * unknown fact is not held against a hop). `AllAlpha=true` is named as itself.
 */
export function alphaGatesOn(featureGates: readonly string[], version: string): string[] | undefined {
  const table = ALPHA_FEATURE_GATES[minorOf(parseVersion(version))];
  if (table === undefined) return undefined;
  const alpha = new Set(table.split(' '));
  const on = new Set<string>();
  for (const value of featureGates)
    for (const pair of value.split(',')) {
      const [key, setting] = pair.trim().split('=');
      const name = key?.replace(/^kube:/, '');
      if (name && setting?.trim().toLowerCase() === 'true' && alpha.has(name)) on.add(name);
    }
  return [...on].sort();
}
