import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { APPLY_PHASES_SINCE, compareVersions, parseVersion, SKIP_KUBE_PROXY_PHASE } from '../../rules/index.js';
import { KUBE_RELEASES, releaseProgram } from '../../sim/cluster/kube-releases.js';

// The flag `kubeadmUpgradeApply` adds where the cluster has no kube-proxy (rules/kube-proxy-addon.ts), held
// against each real kubeadm the per-node worlds run: `upgrade apply` takes --skip-phases and has the phase.
describe("kubeadm's own `upgrade apply` knows the kube-proxy phase skewless skips", () => {
  const [flag, phase] = SKIP_KUBE_PROXY_PHASE.replace(/^--/, '').split('=') as [string, string];
  const [group, addon] = phase.split('/') as [string, string];
  for (const version of KUBE_RELEASES) {
    it(`kubeadm ${version}`, () => {
      assert.ok(compareVersions(parseVersion(version), parseVersion(APPLY_PHASES_SINCE)) >= 0, 'every release built takes phases');
      const kubeadm = releaseProgram(version, 'kubeadm');
      const help = (...args: string[]) => execFileSync(kubeadm, ['upgrade', 'apply', ...args, '--help'], { encoding: 'utf8' });
      assert.match(help(), new RegExp(`--${flag} strings`));
      assert.match(help('phase'), new RegExp(`^\\s+${group}\\s`, 'm'));
      assert.match(help('phase', group), new RegExp(`^\\s+${addon}\\s+Upgrade the kube-proxy addon`, 'm'));
    });
  }
});
