import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildRunbook, planRollout, skipsKubeProxyPhase, SKIP_KUBE_PROXY_PHASE, type KubeProxyMode } from '../../rules/index.js';

describe("kubeadm's kube-proxy addon phase", () => {
  const cases: [KubeProxyMode, boolean, string, boolean][] = [
    ['auto', true, '1.33.7', false],
    ['auto', false, '1.33.7', true],
    ['auto', false, '1.32.0', true],
    ['auto', false, '1.31.9', false], // no phases in `upgrade apply` before 1.32
    ['absent', true, '1.34.2', true],
    ['present', false, '1.34.2', false],
  ];
  for (const [mode, daemonSet, version, skips] of cases) {
    it(`${mode}, DaemonSet ${daemonSet ? 'present' : 'absent'}, kubeadm ${version}: ${skips ? 'skipped' : 'applied'}`, () => {
      assert.equal(skipsKubeProxyPhase(mode, daemonSet, version), skips);
    });
  }

  it('the plan shows the skip on the apply command and says why', () => {
    const rollout = planRollout([
      { name: 'cp1', role: 'control-plane' },
      { name: 'w1', role: 'worker' },
    ]);
    const apply = (kubeProxy?: { mode: KubeProxyMode; daemonSet: boolean }) =>
      buildRunbook(['1.33.7'], rollout, 'apt', undefined, undefined, undefined, kubeProxy).find((s) => s.apply);
    const without = apply({ mode: 'auto', daemonSet: false });
    assert.ok(without?.command?.endsWith(`kubeadm upgrade apply v1.33.7 --yes ${SKIP_KUBE_PROXY_PHASE}`), without?.command);
    assert.match(without?.detail ?? '', /kube-proxy phase skipped: the cluster runs without it/);
    assert.ok(apply({ mode: 'auto', daemonSet: true })?.command?.endsWith('kubeadm upgrade apply v1.33.7 --yes'));
    assert.ok(apply()?.command?.endsWith('kubeadm upgrade apply v1.33.7 --yes'));
  });

  it("an HA plan skips it on every control plane's kubeadm too: the last one's `upgrade node` moves the addons", () => {
    const rollout = planRollout([
      { name: 'cp1', role: 'control-plane' },
      { name: 'cp2', role: 'control-plane' },
      { name: 'cp3', role: 'control-plane' },
      { name: 'w1', role: 'worker' },
    ]);
    const kubeadm = (daemonSet: boolean) =>
      buildRunbook(['1.33.7'], rollout, 'apt', undefined, undefined, undefined, { mode: 'auto', daemonSet })
        .filter((s) => s.action === 'upgrade-control-plane')
        .map((s) => (s.command ?? '').replace(/^.* && /, ''));
    assert.deepEqual(kubeadm(false), [
      `kubeadm upgrade apply v1.33.7 --yes ${SKIP_KUBE_PROXY_PHASE}`,
      `kubeadm upgrade node ${SKIP_KUBE_PROXY_PHASE}`,
      `kubeadm upgrade node ${SKIP_KUBE_PROXY_PHASE}`,
    ]);
    assert.deepEqual(kubeadm(true), ['kubeadm upgrade apply v1.33.7 --yes', 'kubeadm upgrade node', 'kubeadm upgrade node']);
  });
});
