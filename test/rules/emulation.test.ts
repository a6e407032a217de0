import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canEmulate, checkEmulationSkew, emulationRange, minCompatibilityOf, type EmulationInventory } from '../../rules/index.js';

// Compatibility versions (KEP-4330) and the skew policy under emulation (issue 36). The ranges are
// what the real binaries' --emulated-version accepts (docs/reversible-hops.md, measured).

describe('which minors a binary emulates (KEP-4330; measured on 1.32.13, 1.33.13, 1.34.4)', () => {
  const cases: { binary: string; emulated: string; ok: boolean; why: string }[] = [
    { binary: '1.33.13', emulated: '1.32', ok: true, why: '--help: kube=1.31..1.33' },
    { binary: '1.33.13', emulated: '1.31', ok: true, why: '--help: kube=1.31..1.33' },
    { binary: '1.33.13', emulated: '1.30', ok: false, why: 'real: "emulation version 1.30 is not between [1.31, 1.33.0]"' },
    { binary: '1.33.13', emulated: '1.34', ok: false, why: 'never newer than the binary' },
    { binary: '1.34.4', emulated: '1.33', ok: true, why: '--help: kube=1.31..1.34' },
    { binary: '1.34.4', emulated: '1.31', ok: true, why: 'three minors back (KEP-4330)' },
    { binary: '1.34.4', emulated: '1.35', ok: false, why: 'real: "emulation version 1.35 is not between [1.31, 1.34.0]"' },
    { binary: '1.35.0', emulated: '1.32', ok: true, why: 'three back' },
    { binary: '1.35.0', emulated: '1.31', ok: false, why: 'four back: past N-3 (KEP-4330)' },
    { binary: '1.32.13', emulated: '1.31', ok: false, why: '--help offers kube=1.32..1.32.13 only' },
    { binary: '1.32.13', emulated: '1.32', ok: true, why: 'its own minor' },
  ];
  for (const c of cases) {
    it(`${c.binary} emulating ${c.emulated}: ${c.ok ? 'accepted' : 'refused'} (${c.why})`, () => {
      assert.equal(canEmulate(c.binary, c.emulated), c.ok);
    });
  }
  it('names the range and the min-compatibility version (/version: minCompatibilityMinor = emulated − 1)', () => {
    assert.deepEqual(emulationRange('1.34.4'), { oldest: '1.31', newest: '1.34' });
    assert.deepEqual(emulationRange('1.32.13'), { oldest: '1.32', newest: '1.32' });
    assert.equal(minCompatibilityOf('1.32'), '1.31');
  });
});

describe('the skew policy under emulation (KEP-4330 "Version skew"; version-skew-policy)', () => {
  const cp = (node: string, version: string, emulated?: string) => ({ node, version, ...(emulated ? { emulated } : {}) });
  const cases: { name: string; inventory: EmulationInventory; kubeadm?: boolean; broken: string[] }[] = [
    {
      name: 'a trial: every control plane on 1.33 emulating 1.32, kubelets at 1.32',
      inventory: {
        apiservers: [cp('cp1', '1.33.13', '1.32'), cp('cp2', '1.33.13', '1.32')],
        controllerManagers: [cp('cp1', '1.33.13', '1.32'), cp('cp2', '1.33.13', '1.32')],
        schedulers: [cp('cp1', '1.33.13', '1.32'), cp('cp2', '1.33.13', '1.32')],
        kubelets: [cp('cp1', '1.32.13'), cp('w1', '1.32.13')],
      },
      broken: [],
    },
    {
      name: 'a trial half-way: one control plane still on 1.32 (HA skew within one minor on binaries)',
      inventory: {
        apiservers: [cp('cp1', '1.33.13', '1.32'), cp('cp2', '1.32.13')],
        controllerManagers: [cp('cp1', '1.33.13', '1.32'), cp('cp2', '1.32.13')],
        schedulers: [cp('cp1', '1.33.13', '1.32'), cp('cp2', '1.32.13')],
        kubelets: [cp('w1', '1.32.13')],
      },
      broken: [],
    },
    {
      name: 'a kubelet must not be newer than the emulated version, though the binary is 1.33',
      inventory: { apiservers: [cp('cp1', '1.33.13', '1.32')], kubelets: [cp('w1', '1.33.13')] },
      broken: ['kubelet/w1/node-newer-than-apiserver'],
    },
    {
      name: 'a controller-manager not emulating is newer than an emulating apiserver',
      inventory: { apiservers: [cp('cp1', '1.33.13', '1.32')], controllerManagers: [cp('cp1', '1.33.13')] },
      broken: ['controllerManager/cp1/control-plane-newer-than-apiserver'],
    },
    {
      name: "a scheduler at the apiserver's min-compatibility version (emulated − 1) is within range",
      inventory: { apiservers: [cp('cp1', '1.34.4', '1.33')], schedulers: [cp('cp1', '1.33.13', '1.32')] },
      kubeadm: true,
      broken: [],
    },
    {
      name: "a scheduler below the apiserver's min-compatibility version",
      inventory: { apiservers: [cp('cp1', '1.34.4', '1.33')], schedulers: [cp('cp1', '1.33.13', '1.31')] },
      kubeadm: true,
      broken: ['scheduler/cp1/control-plane-too-old'],
    },
    {
      name: 'a binary asked to emulate what it cannot (1.32 emulates nothing older)',
      inventory: { apiservers: [cp('cp1', '1.32.13', '1.31')] },
      broken: ['apiserver/cp1/emulation-unsupported'],
    },
    {
      name: 'a kubelet three minors behind the emulated version but four behind the binary: judged on binaries',
      inventory: { apiservers: [cp('cp1', '1.35.0', '1.34')], kubelets: [cp('w1', '1.31.4')] },
      broken: ['kubelet/w1/node-too-old'],
    },
    {
      name: 'apiservers whose binaries are two minors apart break HA skew even if emulating alike',
      inventory: { apiservers: [cp('cp1', '1.34.4', '1.32'), cp('cp2', '1.32.13')] },
      broken: ['apiserver/cp2/apiserver-ha-skew'],
    },
    {
      name: 'without emulation it is the plain policy',
      inventory: { apiservers: [cp('cp1', '1.33.13')], kubelets: [cp('w1', '1.33.2')] },
      broken: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const report = checkEmulationSkew(c.inventory, c.kubeadm ? { topology: 'kubeadm' } : {});
      assert.deepEqual(report.violations.map((v) => `${v.component}/${v.node}/${v.ruleId}`).sort(), [...c.broken].sort());
      assert.equal(report.compliant, c.broken.length === 0);
    });
  }
  it('a violation names the binary, what it emulates, and that the rule was read at emulated versions', () => {
    const [v] = checkEmulationSkew({ apiservers: [cp('cp1', '1.33.13', '1.32')], kubelets: [cp('w1', '1.33.13')] }).violations;
    assert.match(
      v?.rule ?? '',
      /kubelet must not be newer than the oldest kube-apiserver \(1\.32\) \(read at the emulated versions, KEP-4330\)/,
    );
    const [u] = checkEmulationSkew({ apiservers: [cp('cp1', '1.33.13', '1.30')] }).violations;
    assert.equal(u?.rule, 'kube-apiserver 1.33.13 cannot emulate 1.30: it accepts 1.31..1.33 (KEP-4330, its --emulated-version)');
    assert.equal(u?.version, '1.33.13');
    assert.equal(u?.emulated, '1.30');
  });
});
