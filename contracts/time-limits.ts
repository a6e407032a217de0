/**
 * The one table of time limits. Each activity profile's start-to-close (workflows/activity-options.ts
 * builds its profiles from it), and each setting that runs inside one of those activities with its
 * maximum derived from that activity's limit: a value the activity could not honour is refused
 * before anything starts, and the activity reports its own timeout instead of being cut off by
 * Temporal ("Timeout (START_TO_CLOSE)", five times over). Policy bounds (rules/policy.ts), the
 * cluster configuration (activities/cluster-config.ts), the CLI's flags and help read their numbers
 * here; test/contracts/time-limits.test.ts holds every maximum below the limit of what it feeds.
 */

/** Start-to-close of each activity profile, in seconds. */
export const PROFILE_SECONDS = {
  quickRead: 30,
  notification: 40,
  changeHook: 330,
  kubeRead: 60,
  kubeWrite: 60,
  prometheusQuery: 60,
  readinessRead: 300,
  healthCheck: 300,
  hostCommand: 600,
  kubeletRestart: 600,
  kubeadmApply: 1_200,
  etcdSnapshot: 1_800,
  reboot: 1_800,
  maintenanceCommand: 3_600,
  drain: 7_200,
  provisionMachines: 14_400,
} as const;
export type ProfileName = keyof typeof PROFILE_SECONDS;

/** The largest value of a setting, and the profile of the activity that runs it. */
export interface SettingLimit {
  readonly feeds: ProfileName;
  readonly max: number;
}

/** `margin` seconds under the profile's limit: what the activity needs after its wait to report what it found. */
const reportingWithin = (feeds: ProfileName, margin: number): SettingLimit => ({ feeds, max: PROFILE_SECONDS[feeds] - margin });
/** A maximum of its own (a quick command, one HTTP request), well under the profile's limit. */
const within = (feeds: ProfileName, max: number): SettingLimit => ({ feeds, max });

/** Every setting that runs inside an activity, by the name the operator writes (seconds). */
export const SETTING_LIMITS = {
  // The policy of a rollout (rules/policy.ts): flags, fleet files, schedules.
  drainTimeoutSeconds: reportingWithin('drain', 300),
  kubeletTimeoutSeconds: reportingWithin('kubeletRestart', 60),
  /** Also every health check's waitSeconds (activities/health-poll.ts). */
  verifySeconds: reportingWithin('healthCheck', 60),
  rebootTimeoutSeconds: reportingWithin('reboot', 300),
  // The cluster configuration (activities/cluster-config.ts).
  'drain.timeoutSeconds': reportingWithin('drain', 300),
  'timeouts.commandSeconds': within('hostCommand', 300),
  'timeouts.packageInstallSeconds': reportingWithin('hostCommand', 60),
  'timeouts.kubeadmPlanSeconds': reportingWithin('hostCommand', 60),
  'timeouts.kubeadmApplySeconds': reportingWithin('kubeadmApply', 60),
  'timeouts.kubeadmNodeSeconds': reportingWithin('hostCommand', 60),
  'ssh.connectTimeoutSeconds': within('hostCommand', 300),
  /** A probe's attempt runs inside runProbes' health check, like a wait. */
  'probes.timeoutSeconds': reportingWithin('healthCheck', 60),
  'alerts.timeoutSeconds': within('prometheusQuery', 30),
  'notify.timeoutSeconds': within('notification', 30),
  'hooks.timeoutSeconds': within('changeHook', 300),
  'maintenance.timeoutSeconds': reportingWithin('maintenanceCommand', 300),
  /** Join and command run in one createPoolMachines: their sum stays under the limit too. */
  'provisioning.joinTimeoutSeconds': within('provisionMachines', 3_600),
  'provisioning.commandTimeoutSeconds': within('provisionMachines', 1_800),
  // `skewless restore`'s flags: waits of host steps (stopStaticPods, verifyEtcdRestore, verifyRestoredApiserver).
  'restore.stopTimeoutSeconds': reportingWithin('hostCommand', 60),
  'restore.verifyTimeoutSeconds': reportingWithin('hostCommand', 60),
} as const satisfies Record<string, SettingLimit>;
export type SettingName = keyof typeof SETTING_LIMITS;

/** `7200` → `2 hours`, `600` → `10 minutes`: a limit as help texts and refusals say it. */
export function spokenSeconds(seconds: number): string {
  const [n, unit] = seconds % 3600 === 0 ? [seconds / 3600, 'hour'] : seconds % 60 === 0 ? [seconds / 60, 'minute'] : [seconds, 'second'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** Why a setting stops at its maximum, for a refusal or a help text: `the kubelet restart activity ends at 10 minutes`. */
export function limitReason(setting: SettingName): string {
  const { feeds } = SETTING_LIMITS[setting];
  const words = feeds.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`);
  return `the ${words} activity ends at ${spokenSeconds(PROFILE_SECONDS[feeds])}`;
}
