import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { msToNumber } from '@temporalio/common/lib/time.js';
import type { ActivityOptions } from '@temporalio/workflow';
import { limitReason, PROFILE_SECONDS, SETTING_LIMITS, spokenSeconds, type ProfileName } from '../../contracts/time-limits.js';
import * as options from '../../workflows/activity-options.js';
import { parseClusterConfig } from '../../activities/cluster-config.js';
import { INT_BOUNDS } from '../../rules/index.js';

const startToCloseSeconds = (profile: ActivityOptions | undefined) => msToNumber(profile?.startToCloseTimeout ?? 0) / 1000;
const profileNamed = (name: ProfileName) => (options as unknown as Record<string, ActivityOptions | undefined>)[name];

describe('the one table of time limits', () => {
  it('is where every activity profile takes its start-to-close', () => {
    for (const [name, seconds] of Object.entries(PROFILE_SECONDS)) {
      assert.equal(startToCloseSeconds(profileNamed(name as ProfileName)), seconds, name);
    }
    const used = new Set(Object.values(options.PROFILE_OF).map((p) => startToCloseSeconds(p)));
    for (const seconds of used) assert.ok(Object.values(PROFILE_SECONDS).includes(seconds as never), `${seconds} s is in the table`);
  });

  it('keeps every maximum below the limit of the activity it feeds', () => {
    for (const [setting, { feeds, max }] of Object.entries(SETTING_LIMITS)) {
      assert.ok(Number.isInteger(max) && max > 0, setting);
      assert.ok(max < PROFILE_SECONDS[feeds], `${setting} (${max} s) is not below ${feeds} (${PROFILE_SECONDS[feeds]} s)`);
    }
    // createPoolMachines runs the provider's command and then waits for the join, in one activity.
    const { 'provisioning.joinTimeoutSeconds': join, 'provisioning.commandTimeoutSeconds': command } = SETTING_LIMITS;
    assert.ok(join.max + command.max < PROFILE_SECONDS.provisionMachines);
  });

  it('feeds each setting to the profile its activities run under', () => {
    const runs: Partial<Record<keyof typeof SETTING_LIMITS, (keyof typeof options.PROFILE_OF)[]>> = {
      drainTimeoutSeconds: ['drainNode'],
      'drain.timeoutSeconds': ['drainNode'],
      kubeletTimeoutSeconds: ['restartKubelet'],
      verifySeconds: ['checkNodeReady', 'checkWorkloads', 'checkPodsOnNode', 'checkControlPlane', 'checkApiserver'],
      'probes.timeoutSeconds': ['runProbes'],
      rebootTimeoutSeconds: ['rebootNode'],
      'timeouts.packageInstallSeconds': ['installPackages', 'downloadPackages'],
      'timeouts.kubeadmApplySeconds': ['kubeadmUpgradeApply'],
      'timeouts.kubeadmNodeSeconds': ['kubeadmUpgradeNode'],
      'maintenance.timeoutSeconds': ['runMaintenanceCommand'],
      'alerts.timeoutSeconds': ['checkAlerts'],
      'notify.timeoutSeconds': ['deliverNotification'],
      'hooks.timeoutSeconds': ['runChangeHook'],
      'provisioning.joinTimeoutSeconds': ['createPoolMachines'],
      'restore.stopTimeoutSeconds': ['stopStaticPods'],
      'restore.verifyTimeoutSeconds': ['verifyEtcdRestore', 'verifyRestoredApiserver'],
    };
    for (const [setting, activities] of Object.entries(runs)) {
      const { max } = SETTING_LIMITS[setting as keyof typeof SETTING_LIMITS];
      for (const a of activities) assert.ok(max < startToCloseSeconds(options.PROFILE_OF[a]), `${setting} in ${a}`);
    }
  });

  it('is what the policy and the cluster configuration refuse above', () => {
    for (const key of ['drainTimeoutSeconds', 'kubeletTimeoutSeconds', 'verifySeconds', 'rebootTimeoutSeconds'] as const)
      assert.equal(INT_BOUNDS[key].max, SETTING_LIMITS[key].max, key);
    const base = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';
    const config = (section: string, key: string, value: number) => {
      const [outer, inner] = key.split('.') as [string, string];
      if (outer === 'ssh')
        return `name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h, ${inner}: ${value}}\nsnapshots: {dir: /s}\n`;
      if (outer === 'probes') return `${base}probes:\n  - {name: p, url: 'http://127.0.0.1:1/', ${inner}: ${value}}\n`;
      if (outer === 'maintenance') return `${base}maintenance: {command: [apt-get, upgrade], ${inner}: ${value}}\n`;
      if (outer === 'alerts') return `${base}alerts: {prometheusUrl: 'http://127.0.0.1:9090', ${inner}: ${value}}\n`;
      return `${base}${section}: {${inner}: ${value}}\n`;
    };
    const configKeys = Object.keys(SETTING_LIMITS).filter((k) => /^(timeouts|drain|ssh|probes|maintenance|alerts)\./.test(k));
    assert.ok(configKeys.length >= 10);
    for (const key of configKeys) {
      const { max } = SETTING_LIMITS[key as keyof typeof SETTING_LIMITS];
      const section = key.split('.')[0] as string;
      assert.doesNotThrow(() => parseClusterConfig(config(section, key, max), 'lab.yaml'), key);
      assert.throws(() => parseClusterConfig(config(section, key, max + 1), 'lab.yaml'), new RegExp(`from 1 to ${max}`), key);
    }
  });

  it("is what the operator's guide says of each key of the cluster configuration", () => {
    const guide = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'real-cluster.md'), 'utf8');
    for (const [setting, { max }] of Object.entries(SETTING_LIMITS)) {
      if (!/^[a-z]+\./.test(setting) || setting.startsWith('restore.')) continue;
      const key = setting.replace(/^(probes|notify|hooks)\./, '$1[].');
      const row = guide.split('\n').find((l) => l.startsWith(`| \`${key}\` |`));
      assert.ok(row, `docs/real-cluster.md has a row for ${key}`);
      assert.match(row, new RegExp(`\\b${max}\\b`), `the row of ${key} says its maximum ${max}`);
    }
  });

  it('says a limit in the words of the help texts', () => {
    assert.equal(spokenSeconds(7_200), '2 hours');
    assert.equal(spokenSeconds(600), '10 minutes');
    assert.equal(spokenSeconds(3_600), '1 hour');
    assert.equal(spokenSeconds(90), '90 seconds');
    assert.equal(limitReason('kubeletTimeoutSeconds'), 'the kubelet restart activity ends at 10 minutes');
    assert.equal(limitReason('drainTimeoutSeconds'), 'the drain activity ends at 2 hours');
  });
});
