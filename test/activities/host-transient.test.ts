import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { HOST_TIMEOUT_LIMITS, parseClusterConfig } from '../../activities/cluster-config.js';
import { isTransientApiError } from '../../activities/drain-eviction.js';
import { commandFailed } from '../../activities/host-commands.js';
import { isTransientFailure } from '../../activities/host-transient.js';
import { parseDpkgAudit } from '../../activities/parsers/dpkg-audit.js';
import { PROFILE_OF } from '../../workflows/activity-options.js';

const fixture = (name: string): string =>
  readFileSync(join(import.meta.dirname, '..', '..', '..', 'test', 'fixtures', 'tool-output', name), 'utf8')
    .split('\n')
    .filter((l) => !l.startsWith('# '))
    .join('\n');

/** `10 minutes` → 600000: the profiles' duration strings. */
function durationMs(d: unknown): number {
  const m = /^(\d+) (second|minute|hour)s?$/.exec(String(d));
  assert.ok(m, `unexpected duration ${String(d)}`);
  return Number(m[1]) * { second: 1000, minute: 60_000, hour: 3_600_000 }[m[2] as 'second' | 'minute' | 'hour'];
}

const APT_INSTALL = ['apt-get', 'install', '-y', 'kubelet=1.33.7-1.1'];
const KUBEADM_NODE = ['kubeadm', 'upgrade', 'node'];

describe('which failed host commands are retried (HostCommandTransient) and which go to the operator', () => {
  const cases: [string, readonly string[], number, string, boolean][] = [
    [
      'a mirror that cannot be resolved',
      APT_INSTALL,
      100,
      "E: Failed to fetch https://pkgs.k8s.io/core:/stable:/v1.33/deb/amd64/kubelet_1.33.7-1.1_amd64.deb  Temporary failure resolving 'pkgs.k8s.io'\nE: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?",
      true,
    ],
    [
      'the dpkg lock held by unattended-upgrades',
      APT_INSTALL,
      100,
      'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)\nE: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?',
      true,
    ],
    [
      'a mirror serving a half-synced index',
      ['apt-get', 'update', '-q'],
      100,
      'E: Failed to fetch https://pkgs.k8s.io/.../Packages.gz  Hash Sum mismatch\nE: Some index files failed to download.',
      true,
    ],
    [
      'the API server timing out under kubeadm',
      KUBEADM_NODE,
      1,
      "error execution phase control-plane: couldn't upgrade control plane: timed out waiting for the condition",
      true,
    ],
    ['etcd not answering kubeadm', KUBEADM_NODE, 1, 'error: etcdserver: request timed out', true],
    [
      "upgrade apply's health-check Job while the controller-manager lease passes on (seen in control-plane-trial.test.ts)",
      ['kubeadm', 'upgrade', 'apply', 'v1.33.13'],
      1,
      '\t[ERROR CreateJob]: Job "upgrade-health-check-1796419055013" in the namespace "kube-system" did not complete in 15s: no condition of type Complete',
      true,
    ],
    ['a version apt does not know', APT_INSTALL, 100, "E: Version '1.33.7-1.1' for 'kubelet' was not found", false],
    [
      'held packages without the flag',
      APT_INSTALL,
      100,
      'E: Held packages were changed and -y was used without --allow-change-held-packages.',
      false,
    ],
    [
      'dpkg interrupted (repaired in the activity, not by waiting)',
      APT_INSTALL,
      100,
      "E: dpkg was interrupted, you must manually run 'sudo dpkg --configure -a' to correct the problem.",
      false,
    ],
    [
      'kubeadm refusing the version skew',
      KUBEADM_NODE,
      1,
      '[upgrade/version] FATAL: the --version argument is invalid due to these errors: Specified version to upgrade to "v1.35.0" is too high',
      false,
    ],
    ['a missing command, whatever it printed', APT_INSTALL, 127, 'bash: apt-get: command not found; Temporary failure resolving', false],
    ['a network word from a tool we do not classify', ['systemctl', 'restart', 'kubelet'], 1, 'Connection timed out', false],
    ['a generic failure', APT_INSTALL, 1, "sim: injected failure of 'apt-get install'", false],
  ];
  for (const [what, argv, exitCode, stderr, transient] of cases) {
    it(`${what}: ${transient ? 'retried' : 'not retried'}`, () => {
      assert.equal(isTransientFailure(argv, { exitCode, stdout: '', stderr }), transient);
      const failure = commandFailed('worker-1', argv, { exitCode, stdout: '', stderr });
      assert.ok(failure instanceof ApplicationFailure);
      assert.equal(failure.type, transient ? 'HostCommandTransient' : 'HostCommandFailed');
      assert.equal(failure.nonRetryable, !transient);
    });
  }

  it('HostCommandTransient is retried by every profile that runs host commands; HostCommandFailed by none', () => {
    for (const activity of [
      'installPackages',
      'kubeadmUpgradeApply',
      'kubeadmUpgradeNode',
      'kubeadmUpgradePlan',
      'restartKubelet',
      'availableVersions',
    ] as const) {
      const nonRetryable = PROFILE_OF[activity].retry?.nonRetryableErrorTypes ?? [];
      assert.ok(!nonRetryable.includes('HostCommandTransient'), activity);
      assert.ok(nonRetryable.includes('HostCommandFailed'), activity);
      assert.ok((PROFILE_OF[activity].retry?.maximumAttempts ?? Infinity) > 1, activity);
    }
  });
});

describe('API errors a drain rides through', () => {
  const refused = Object.assign(
    new Error(
      'request to https://127.0.0.1:6443/api/v1/namespaces/default/pods/web-1/eviction failed, reason: connect ECONNREFUSED 127.0.0.1:6443',
    ),
    { type: 'system', code: 'ECONNREFUSED' },
  );
  const cases: [string, unknown, boolean][] = [
    ['connection refused (apiserver restarting)', refused, true],
    ['connection reset', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), true],
    ['503 from the apiserver', { code: 503, body: '{"message":"the server is currently unable to handle the request"}' }, true],
    ['500 from an etcd timeout', { code: 500, body: '{"message":"etcdserver: request timed out"}' }, true],
    [
      '500 about several PDBs (an eviction refusal)',
      { code: 500, body: '{"message":"This pod has more than one PodDisruptionBudget"}' },
      false,
    ],
    ['403 forbidden', { code: 403, body: '{"message":"forbidden"}' }, false],
    ['a bug', new TypeError('x is undefined'), false],
  ];
  for (const [what, err, transient] of cases)
    it(`${what}: ${transient ? 'waited out' : 'not'}`, () => assert.equal(isTransientApiError(err), transient));
});

describe('parseDpkgAudit (dpkg --audit / -C)', () => {
  it('lists every package in every problem section, architecture dropped', () => {
    const audit = parseDpkgAudit(fixture('dpkg-audit.unpacked-and-half-configured.txt'));
    assert.deepEqual(audit.packages, ['kubelet', 'kubectl', 'initramfs-tools']);
    assert.deepEqual(audit.problems, [
      'The following packages have been unpacked but not yet configured.',
      'The following packages are only half configured, probably due to problems',
    ]);
  });
  it('a healthy host prints nothing', () => assert.deepEqual(parseDpkgAudit(''), { packages: [], problems: [] }));
});

describe('timeouts: in the cluster configuration', () => {
  const base = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /id, knownHostsPath: /kh}\nsnapshots: {dir: /s}\n';
  it("defaults to the former constants and takes the operator's values", () => {
    assert.deepEqual(parseClusterConfig(base, 'lab.yaml').timeouts, {
      commandSeconds: 60,
      packageInstallSeconds: 480,
      kubeadmPlanSeconds: 300,
      kubeadmApplySeconds: 1080,
      kubeadmNodeSeconds: 540,
    });
    const slowMirror = parseClusterConfig(`${base}timeouts: {packageInstallSeconds: 540, commandSeconds: 5}\n`, 'lab.yaml').timeouts;
    assert.equal(slowMirror.packageInstallSeconds, 540);
    assert.equal(slowMirror.commandSeconds, 5);
  });
  it('refuses unknown names, non-integers and values above what the activity profile allows', () => {
    const refuse = (yaml: string, message: RegExp) =>
      assert.throws(
        () => parseClusterConfig(`${base}${yaml}`, 'lab.yaml'),
        (e: ApplicationFailure) => e.type === 'ClusterConfigInvalid' && message.test(e.message),
      );
    refuse('timeouts: {install: 5}\n', /^lab\.yaml: unknown key timeouts\.install \(known: commandSeconds, /);
    refuse('timeouts: {toString: 5}\n', /unknown key timeouts\.toString /);
    refuse('timeouts: {packageInstallSeconds: 541}\n', /timeouts\.packageInstallSeconds must be an integer from 1 to 540/);
    refuse('timeouts: {kubeadmApplySeconds: 0}\n', /from 1 to 1140/);
    refuse('timeouts: {commandSeconds: "60"}\n', /commandSeconds must be an integer/);
    refuse('timeouts: [60]\n', /timeouts must be a mapping/);
  });
  it('every maximum leaves the activity that runs the command time to report the timeout itself', () => {
    const startToClose = (a: keyof typeof PROFILE_OF) => durationMs(PROFILE_OF[a].startToCloseTimeout);
    const runs: Record<keyof typeof HOST_TIMEOUT_LIMITS, (keyof typeof PROFILE_OF)[]> = {
      commandSeconds: ['installPackages', 'restartKubelet', 'rebootNode', 'availableVersions'],
      packageInstallSeconds: ['installPackages'],
      kubeadmPlanSeconds: ['kubeadmUpgradePlan'],
      kubeadmApplySeconds: ['kubeadmUpgradeApply'],
      kubeadmNodeSeconds: ['kubeadmUpgradeNode'],
    };
    for (const [timeout, activities] of Object.entries(runs)) {
      const limit = HOST_TIMEOUT_LIMITS[timeout as keyof typeof HOST_TIMEOUT_LIMITS];
      assert.ok(limit.default <= limit.max, timeout);
      for (const a of activities)
        assert.ok(limit.max * 1000 < startToClose(a), `${timeout} max ${limit.max} s is not below ${a}'s startToClose`);
    }
  });
});
