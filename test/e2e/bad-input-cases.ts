import { appendFileSync, chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { mergePatch, type KubeClients } from '../../sim/cluster/kube-clients.js';

const KUBERNETES_LIST = '/etc/apt/sources.list.d/kubernetes.list';

/**
 * The bad-input table of test/e2e/bad-input.test.ts: what an operator (or a script) gets wrong, and
 * the one line and exit code skewless answers with. Exit 2: the request is invalid (refused by the
 * CLI before Temporal, or by the worker as an unknown cluster, a broken configuration, a version the
 * repository does not offer); 1: the cluster as it is refuses (skew, unreadable inventory, blocking
 * PDB, host key, unreachable apiserver, nothing to upgrade); 3: Temporal unreachable.
 */
export interface BadInput {
  name: string;
  args: string[];
  exit: 1 | 2 | 3;
  /** The one stderr line, after "skewless: ". */
  stderr: RegExp;
  /** Cluster state for this case (through the admin client: never audited as the worker's). */
  setup?: () => Promise<void>;
  cleanup?: () => Promise<void>;
}

export interface CaseContext {
  /** The simulated cluster's name; its configuration is the worker's `<cluster>.yaml`. */
  cluster: string;
  kube: KubeClients;
  /** A file that exists but is not JSON or a key (for --inventory and the like). */
  someFile: string;
  /** Clusters directories the `skewless worker` command must refuse to start with. */
  badWorkerDirs: { missing: string; garbageKey: string; missingKnownHosts: string };
  taskQueue: string;
  address: string;
  /** Where a file of a simulated host lives on this machine (`cp-1`, `/etc/…` → its path under the host's root). */
  hostFile: (node: string, path: string) => string;
}

const upgrade = (cluster: string, to: string, ...more: string[]) => ['upgrade', '--cluster', cluster, '--to', to, ...more];

/** Client-side refusals: the CLI checks these before it contacts Temporal. */
export function cliCases({ cluster, someFile }: CaseContext): BadInput[] {
  const to = (
    version: string,
    stderr = /^skewless: invalid target .*expected a version such as 1\.34\.2, a minor such as 1\.34, latest-patch or next-minor$/,
  ) => ({ name: `version ${JSON.stringify(version)}`, args: upgrade(cluster, version), exit: 2 as const, stderr });
  const flag = (name: string, args: string[], stderr: RegExp) => ({ name, args, exit: 2 as const, stderr });
  return [
    to('1.33.x'),
    to('1.33.07'),
    to('latest'),
    to('next-major'),
    to('latest-patch;reboot'),
    to(' 1.33.7'),
    to('1.33.7.1'),
    to('1.33.7;reboot'),
    to('$(id)'),
    to('`reboot`'),
    to('1.33.7\nreboot'),
    to('1.33.7 && curl evil|sh'),
    to('', /^skewless: --to is required$/),
    flag('cluster name with path traversal', upgrade('../x', '1.32.6'), /^skewless: invalid cluster name "\.\.\/x": a DNS label$/),
    flag('cluster name with a slash and capitals', ['status', 'Prod/EU'], /invalid cluster name "Prod\/EU"/),
    flag('cluster name with shell metacharacters', ['abort', 'bad;reboot'], /invalid cluster name "bad;reboot"/),
    flag('no --cluster', ['upgrade', '--to', '1.32.6'], /^skewless: --cluster \(the cluster\) is required$/),
    flag('unknown flag', upgrade(cluster, '1.32.6', '--yes-really'), /^skewless: Unknown option '--yes-really'/),
    flag('a flag without its value', ['upgrade', '--cluster', cluster, '--to'], /^skewless: Option '--to <value>' argument missing$/),
    flag(
      'negative --drain-timeout',
      upgrade(cluster, '1.32.6', '--drain-timeout', '-5'),
      /^skewless: --drain-timeout needs a value; a value that starts with "-" is written --drain-timeout=VALUE$/,
    ),
    flag(
      'negative --drain-timeout, spelled with =',
      upgrade(cluster, '1.32.6', '--drain-timeout=-5'),
      /--drain-timeout must be an integer ≥ 1, got "-5"/,
    ),
    flag(
      'an unknown --on-drain-timeout',
      upgrade(cluster, '1.32.6', '--on-drain-timeout', 'foo'),
      /^skewless: --on-drain-timeout must be "wait" or "quarantine", got "foo"$/,
    ),
    flag('zero --drain-timeout', upgrade(cluster, '1.32.6', '--drain-timeout', '0'), /--drain-timeout must be an integer ≥ 1, got "0"/),
    flag(
      'non-numeric --drain-timeout',
      upgrade(cluster, '1.32.6', '--drain-timeout', '10m'),
      /--drain-timeout must be an integer ≥ 1, got "10m"/,
    ),
    flag(
      '--host-retry over a day',
      upgrade(cluster, '1.32.6', '--host-retry', '100000'),
      /--host-retry must be an integer from 0 to 86400 \(a day\), got 100000/,
    ),
    flag(
      "--drain-timeout past the drain activity's own limit",
      upgrade(cluster, '1.32.6', '--drain-timeout', '9000'),
      /^skewless: --drain-timeout must be an integer from 1 to 6900 \(the drain activity ends at 2 hours\), got 9000$/,
    ),
    flag('zero --batch-size', upgrade(cluster, '1.32.6', '--batch-size', '0'), /--batch-size must be an integer ≥ 1, got "0"/),
    flag('fractional --canary', upgrade(cluster, '1.32.6', '--canary', '1.5'), /--canary must be an integer ≥ 0, got "1\.5"/),
    flag(
      'zero --max-unavailable',
      upgrade(cluster, '1.32.6', '--max-unavailable', '0'),
      /--max-unavailable must be a count ≥ 1 or a percentage from 1% to 100%, got "0"/,
    ),
    flag('--max-unavailable over 100%', upgrade(cluster, '1.32.6', '--max-unavailable', '150%'), /--max-unavailable must be .* got "150%"/),
    flag(
      '--max-unavailable that is not a number, on plan --cluster',
      ['plan', '--cluster', cluster, '--to', '1.32.6', '--max-unavailable', 'half'],
      /--max-unavailable must be .* got "half"/,
    ),
    flag(
      'conflicting --approve-canary and --soak',
      upgrade(cluster, '1.32.6', '--approve-canary', '--soak', '60'),
      /--soak waits after the canary when no approval is asked: leave it out with --approve-canary/,
    ),
    flag(
      'conflicting --canary 0 and --approve-canary',
      upgrade(cluster, '1.32.6', '--canary', '0', '--approve-canary'),
      /--canary 0 means no canary: --approve-canary would never apply/,
    ),
    flag(
      'conflicting plan --cluster and --inventory',
      ['plan', '--cluster', cluster, '--to', '1.32.6', '--inventory', someFile],
      /--cluster reads the live cluster: leave out --inventory and --available/,
    ),
    flag(
      '--acknowledge that is not NAMESPACE/PDB',
      upgrade(cluster, '1.32.6', '--acknowledge', 'solo'),
      /--acknowledge takes NAMESPACE\/PDB, got "solo"/,
    ),
    flag(
      '--acknowledge of a readiness check that does not exist',
      upgrade(cluster, '1.32.6', '--acknowledge', 'alarm:NodeDown'),
      /unknown acknowledgement "alarm:NodeDown": expected <check>:<subject> with check one of removed-api, .*alert, probe/,
    ),
    flag(
      '--acknowledge of a readiness check without a subject',
      upgrade(cluster, '1.32.6', '--acknowledge', 'alert:'),
      /unknown acknowledgement "alert:": expected <check>:<subject>/,
    ),
    flag(
      '--first-control-plane that is not a node name',
      ['plan', '--cluster', cluster, '--to', '1.32.6', '--first-control-plane', 'cp-1 && reboot'],
      /--first-control-plane must be a node name/,
    ),
    // Issue 40: the batch-by keys of upgrade, plan, maintain and schedule create, judged by the one policy.
    flag(
      '--batch-by that is not a label key',
      upgrade(cluster, '1.32.6', '--batch-by', 'zone name'),
      /^skewless: --batch-by must be a label key \(\[prefix\/\]name, as topology\.kubernetes\.io\/zone\), got "zone name"$/,
    ),
    flag(
      '--batch-order without --batch-by',
      ['plan', '--cluster', cluster, '--to', '1.32.6', '--batch-order', 'a,b'],
      /^skewless: --batch-order orders the values of --batch-by: give --batch-by too$/,
    ),
    flag(
      '--batch-order naming a value twice',
      upgrade(cluster, '1.32.6', '--batch-by', 'topology.kubernetes.io/zone', '--batch-order', 'a,b,a'),
      /^skewless: --batch-order names "a" twice$/,
    ),
    flag(
      'maintain --batch-order with a value no label can have',
      ['maintain', '--cluster', cluster, '--node', 'worker-1', '--batch-by', 'zone', '--batch-order', 'a,B!'],
      /^skewless: --batch-order \[1\] must be a label value .*got "B!"$/,
    ),
    flag(
      '--rebalance given a value',
      upgrade(cluster, '1.32.6', '--rebalance=yes'),
      /^skewless: Option '--rebalance' does not take an argument$/,
    ),
    flag(
      'malformed --task-queue',
      upgrade(cluster, '1.32.6', '--task-queue', 'queue with spaces'),
      /^skewless: invalid task queue "queue with spaces"$/,
    ),
    flag(
      '--address without a port',
      upgrade(cluster, '1.32.6', '--address', 'temporal.example'),
      /the Temporal address must be HOST:PORT, got "temporal\.example"/,
    ),
    flag(
      '--address with a port out of range',
      upgrade(cluster, '1.32.6', '--address', '127.0.0.1:99999'),
      /the Temporal address must be HOST:PORT, got "127\.0\.0\.1:99999"/,
    ),
    flag('malformed --namespace', upgrade(cluster, '1.32.6', '--namespace', 'a namespace'), /invalid Temporal namespace "a namespace"/),
    flag(
      'a namespace the server does not have',
      upgrade(cluster, '1.32.6', '--namespace', 'no-such-namespace'),
      /^skewless: Namespace not found: 'no-such-namespace' \(--namespace or TEMPORAL_NAMESPACE\)$/,
    ),
    {
      name: 'Temporal unreachable',
      args: upgrade(cluster, '1.32.6', '--address', '127.0.0.1:1'),
      exit: 3,
      stderr: /^skewless: cannot reach Temporal at 127\.0\.0\.1:1: /,
    },
    flag(
      '--tls=false with a TLS file',
      upgrade(cluster, '1.32.6', '--tls=false', '--tls-ca-path', someFile),
      /TLS is off \(--tls=false\) but --tls-ca-path is set/,
    ),
    flag('unknown --output format', ['status', cluster, '--output', 'yaml'], /^skewless: --output must be "json" or "text", got "yaml"$/),
    flag('unknown command', ['upgarde', '--cluster', cluster], /^skewless: unknown command "upgarde"; run "skewless --help" for the list$/),
    flag('the cluster as a positional argument of upgrade', ['upgrade', cluster, '--to', '1.32.6'], /Unexpected argument 'bad'/),
    flag(
      'an extra positional argument',
      ['status', cluster, 'now'],
      /^skewless: unexpected argument "now": the command takes one cluster NAME$/,
    ),
    flag(
      'resolve with an action that does not exist',
      ['resolve', cluster, '--node', 'worker-1', '--action', 'delete'],
      /--action must be retry, skip, force or abort, got "delete"/,
    ),
    flag(
      'resolve force without pods',
      ['resolve', cluster, '--node', 'worker-1', '--action', 'force'],
      /--action force needs the pods to delete, each with --pod NAMESPACE\/NAME/,
    ),
    flag(
      'resolve with pods but not force',
      ['resolve', cluster, '--node', 'worker-1', '--action', 'retry', '--pod', 'default/web-1'],
      /--pod names the pods --action force deletes; --action retry takes none/,
    ),
    flag(
      'resolve force with a malformed pod',
      ['resolve', cluster, '--node', 'worker-1', '--action', 'force', '--pod', 'web-1'],
      /--pod takes NAMESPACE\/NAME, got "web-1"/,
    ),
    flag(
      'resolve skip without --node',
      ['resolve', cluster, '--action', 'skip'],
      /^skewless: --action skip needs --node \(without it, resolve answers a halted rollout: retry or abort\)$/,
    ),
    flag(
      'resolve a node name with shell metacharacters',
      ['resolve', cluster, '--node', 'worker-1;reboot', '--action', 'retry'],
      /--node must be a node name .*got "worker-1;reboot"/,
    ),
    flag('approve without --gate', ['approve', cluster], /^skewless: --gate is required$/),
    flag(
      'schedule create with a cron of four fields',
      ['schedule', 'create', '--cluster', cluster, '--to', 'latest-patch', '--cron', '0 3 * *'],
      /^skewless: --cron takes five fields .*got "0 3 \* \*"$/,
    ),
    flag(
      'schedule create with a target expression that does not exist',
      ['schedule', 'create', '--cluster', cluster, '--to', 'latest-minor', '--every', '1h'],
      /^skewless: invalid target "latest-minor": expected .*latest-patch or next-minor$/,
    ),
    flag(
      'schedule create without a time',
      ['schedule', 'create', '--cluster', cluster, '--to', 'latest-patch'],
      /^skewless: a schedule needs --cron "EXPR", --calendar "Sat 02:00" or --every DURATION$/,
    ),
    flag(
      'schedule create with a calendar day that does not exist',
      ['schedule', 'create', '--cluster', cluster, '--to', '1.32.6', '--calendar', 'Someday 02:00'],
      /^skewless: --calendar takes "\[DAYS\] HH:MM"/,
    ),
    flag(
      'approve a malformed gate',
      ['approve', cluster, '--gate', '$(id)'],
      /--gate must be a gate name such as workers-1\.33\.7, got "\$\(id\)"/,
    ),
    flag(
      'maintain without nodes',
      ['maintain', '--cluster', cluster],
      /^skewless: name the nodes with --selector SELECTOR or with --node NODE \(repeated\), one of the two$/,
    ),
    flag(
      'maintain with a selector and nodes',
      ['maintain', '--cluster', cluster, '--selector', 'pool=blue', '--node', 'worker-1'],
      /one of the two$/,
    ),
    flag(
      'maintain with shell text as a selector',
      ['maintain', '--cluster', cluster, '--selector', 'pool=blue;reboot'],
      /^skewless: --selector must be a label selector such as 'pool=blue' or 'pool in \(a,b\)', got "pool=blue;reboot"$/,
    ),
    flag(
      'maintain a node name with shell metacharacters',
      ['maintain', '--cluster', cluster, '--node', 'worker-1$(id)'],
      /--node must be a node name .*got "worker-1\$\(id\)"/,
    ),
    flag(
      'maintain the same node twice',
      ['maintain', '--cluster', cluster, '--node', 'worker-1', '--node', 'worker-1'],
      /^skewless: --node worker-1 is given twice$/,
    ),
    flag(
      'maintain --force-pod that is not NAMESPACE/NAME',
      ['maintain', '--cluster', cluster, '--node', 'worker-1', '--force-pod', 'pet'],
      /--force-pod takes NAMESPACE\/NAME, got "pet"/,
    ),
    flag(
      'maintain --reboot-timeout over 25 minutes',
      ['maintain', '--cluster', cluster, '--node', 'worker-1', '--reboot-timeout', '7200'],
      /--reboot-timeout must be an integer from 1 to 1500 \(the reboot activity ends at 30 minutes\), got 7200/,
    ),
    flag(
      '--workflow that is none of upgrade, maintain, restore, bluegreen',
      ['status', cluster, '--workflow', 'fleet'],
      /^skewless: --workflow must be upgrade, maintain, restore or bluegreen, got "fleet"$/,
    ),
    flag(
      'watch --workflow restore (a restore is followed with restore --watch)',
      ['watch', cluster, '--workflow', 'restore'],
      /^skewless: --workflow must be upgrade, maintain or bluegreen, got "restore"$/,
    ),
    flag(
      'bluegreen without a blue pool',
      ['bluegreen', '--cluster', cluster, '--to-pool', 'green', '--to', '1.32.4'],
      /^skewless: --from is required$/,
    ),
    flag(
      'bluegreen from a pool to itself',
      ['bluegreen', '--cluster', cluster, '--from', 'blue', '--to-pool', 'blue', '--to', '1.32.4'],
      /^skewless: --from and --to-pool name the same pool blue: green must be another pool$/,
    ),
    flag(
      'bluegreen to a target expression',
      ['bluegreen', '--cluster', cluster, '--from', 'blue', '--to-pool', 'green', '--to', 'latest-patch'],
      /^skewless: --to must be an exact version such as 1\.34\.2 \(the green kubelets' version\), got "latest-patch"$/,
    ),
    flag(
      'bluegreen with shell text as a pool',
      ['bluegreen', '--cluster', cluster, '--from', 'blue;reboot', '--to-pool', 'green', '--to', '1.32.4'],
      /^skewless: --from must be a pool name of the cluster configuration .*got "blue;reboot"$/,
    ),
    flag(
      'bluegreen of no machines',
      ['bluegreen', '--cluster', cluster, '--from', 'blue', '--to-pool', 'green', '--to', '1.32.4', '--count', '0'],
      /^skewless: --count must be an integer ≥ 1, got "0"$/,
    ),
    flag(
      'resolve of a restore',
      ['resolve', cluster, '--workflow', 'restore', '--action', 'retry'],
      /^skewless: a restore has nothing to resolve: approve its gate, or abort it$/,
    ),
    flag(
      'restore without a snapshot',
      ['restore', '--cluster', cluster],
      /^skewless: name the snapshot: --hop VERSION \(the one the upgrade took before that hop\), --snapshot PATH, or both$/,
    ),
    flag(
      'restore a hop that is no version',
      ['restore', '--cluster', cluster, '--hop', 'latest'],
      /^skewless: --hop must be the version of an upgrade hop such as 1\.33\.7, got "latest"$/,
    ),
    flag(
      'restore a snapshot path that climbs',
      ['restore', '--cluster', cluster, '--snapshot', '/var/lib/../../etc/shadow'],
      /^skewless: --snapshot must be an absolute path on the control planes/,
    ),
    flag(
      'history --timeline in a folder that does not exist',
      ['history', cluster, '--timeline', `${someFile}.d/timeline.svg`],
      /^skewless: --timeline: no folder \/.*\/not-a-key\.txt\.d$/,
    ),
  ];
}

/** An operator's controls on a cluster that has no upgrade. */
export function noUpgradeCases(): BadInput[] {
  const none = (verb: string, ...more: string[]) => ({
    name: `${verb} of a cluster with no upgrade`,
    args: [verb, 'ghost', ...more],
    exit: 2 as const,
    stderr: /^skewless: no running upgrade of ghost$/,
  });
  return [
    none('status'),
    none('approve', '--gate', 'workers-1.32.6'),
    none('abort'),
    none('pause'),
    none('resume'),
    none('resolve', '--node', 'worker-1', '--action', 'retry'),
    {
      name: 'abort of a cluster with no restore',
      args: ['abort', 'ghost', '--workflow', 'restore'],
      exit: 2,
      stderr: /^skewless: no running restore of ghost$/,
    },
    {
      name: 'approve of a restore-… gate (the restore implied) of a cluster with no restore',
      args: ['approve', 'ghost', '--gate', 'restore-1.33.7'],
      exit: 2,
      stderr: /^skewless: no running restore of ghost$/,
    },
    {
      name: 'restore --watch of a cluster with no restore',
      args: ['restore', '--cluster', 'ghost', '--watch'],
      exit: 2,
      stderr: /^skewless: no restore of ghost found$/,
    },
    {
      name: 'schedule trigger of a cluster with no schedule',
      args: ['schedule', 'trigger', '--cluster', 'ghost'],
      exit: 2,
      stderr: /^skewless: no schedule upgrade-schedule\/ghost$/,
    },
    { name: 'watch of a cluster with no upgrade', args: ['watch', 'ghost'], exit: 2, stderr: /^skewless: no upgrade of ghost found$/ },
    {
      name: 'status of a cluster with no maintenance',
      args: ['status', 'ghost', '--workflow', 'maintain'],
      exit: 2,
      stderr: /^skewless: no running maintenance of ghost$/,
    },
    {
      name: 'watch of a cluster with no maintenance',
      args: ['watch', 'ghost', '--workflow', 'maintain'],
      exit: 2,
      stderr: /^skewless: no maintenance of ghost found$/,
    },
    { name: 'history of a cluster with no upgrade', args: ['history', 'ghost'], exit: 2, stderr: /^skewless: no upgrade of ghost found$/ },
    {
      name: 'status of a cluster with no blue/green run',
      args: ['status', 'ghost', '--workflow', 'bluegreen'],
      exit: 2,
      stderr: /^skewless: no running blue\/green run of ghost$/,
    },
    {
      name: 'abort (the rollback) of a cluster with no blue/green run',
      args: ['abort', 'ghost', '--workflow', 'bluegreen'],
      exit: 2,
      stderr: /^skewless: no running blue\/green run of ghost$/,
    },
    {
      name: 'approve of the remove-blue gate (the blue/green run implied) of a cluster with none',
      args: ['approve', 'ghost', '--gate', 'remove-blue'],
      exit: 2,
      stderr: /^skewless: no running blue\/green run of ghost$/,
    },
  ];
}

/** The worker refuses: the plan's rules on the live cluster, or the worker's lookup of the cluster. */
export function workerCases({ cluster, kube, hostFile }: CaseContext): BadInput[] {
  const failed = (name: string, to: string, exit: 1 | 2, stderr: RegExp, more: Partial<BadInput> = {}) => ({
    name,
    args: upgrade(cluster, to),
    exit,
    stderr,
    ...more,
  });
  const kubelet = (node: string, version: string) =>
    kube.core
      .patchNodeStatus({ name: node, body: { status: { nodeInfo: { kubeletVersion: version } } } }, mergePatch)
      .then(() => undefined);
  const pdb = { metadata: { name: 'solo' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'solo' } } } };
  return [
    {
      name: 'an unknown cluster',
      args: upgrade('nosuch', '1.32.6'),
      exit: 2,
      stderr: /^skewless: upgrade of nosuch failed: no configuration for cluster nosuch \(looked for .*nosuch\.yaml\)$/,
    },
    {
      name: 'a restore from a hop that has no snapshot',
      args: ['restore', '--cluster', cluster, '--hop', '1.31.0'],
      exit: 1,
      stderr: /^skewless: restore of bad failed: no verified etcd snapshot of bad for hop 1\.31\.0 in /,
    },
    {
      name: 'bluegreen from a pool the configuration does not have',
      args: ['bluegreen', '--cluster', cluster, '--from', 'purple', '--to-pool', 'green', '--to', '1.32.4'],
      exit: 2,
      stderr: /^skewless: blue\/green run of bad failed: cluster bad has no (pool purple|provisioning) in its configuration/,
    },
    {
      name: 'an unknown cluster, with plan --cluster',
      args: ['plan', '--cluster', 'nosuch', '--to', '1.32.6'],
      exit: 2,
      stderr: /^skewless: plan of nosuch failed: no configuration for cluster nosuch/,
    },
    failed(
      'a downgrade',
      '1.31',
      2,
      /^skewless: upgrade of bad failed: refusing to downgrade 1\.32\.4 → 1\.31: the control plane never goes back/,
    ),
    failed(
      'a target already reached',
      '1.32.4',
      1,
      /^skewless: upgrade of bad failed: refusing to start: nothing to upgrade: the control plane and every node are already at 1\.32\.4 \(target 1\.32\.4\)$/,
    ),
    failed(
      'a target that skips a minor the repository has no package for',
      '1.34',
      2,
      /^skewless: upgrade of bad failed: no 1\.33\.x release is available: the mirror of \/etc\/apt\/sources\.list\.d\/kubernetes\.list on cp-1 has no v1\.33 repository \(404\), and minors cannot be skipped \(1\.32 → 1\.34\); nothing was installed$/,
    ),
    failed(
      'the next minor, which the mirror does not have',
      '1.33',
      2,
      /^skewless: upgrade of bad failed: no 1\.33\.x release is available: the mirror of \/etc\/apt\/sources\.list\.d\/kubernetes\.list on cp-1 has no v1\.33 repository \(404\); nothing was installed$/,
    ),
    failed(
      'a repository file of a layout skewless does not rewrite, which does not offer the target',
      '1.34',
      1,
      /^skewless: upgrade of bad failed: cp-1: \/etc\/apt\/sources\.list\.d\/kubernetes\.list offers no 1\.34\.x and skewless does not rewrite it: it has 2 source line\(s\); the install guide's has exactly one deb line; point it at v1\.34 yourself/,
      {
        setup: async () => appendFileSync(hostFile('cp-1', KUBERNETES_LIST), 'deb https://mirror.example.invalid/debian bookworm main\n'),
        cleanup: async () =>
          writeFileSync(hostFile('cp-1', KUBERNETES_LIST), readFileSync(hostFile('cp-1', KUBERNETES_LIST), 'utf8').split('\n')[0] + '\n'),
      },
    ),
    failed(
      'a repository file the SSH user cannot read',
      '1.32.6',
      1,
      /^skewless: upgrade of bad failed: cannot read \/etc\/apt\/sources\.list\.d\/kubernetes\.list on cp-1 as skewless: Permission denied/,
      {
        setup: async () => chmodSync(hostFile('cp-1', KUBERNETES_LIST), 0o600),
        cleanup: async () => chmodSync(hostFile('cp-1', KUBERNETES_LIST), 0o644),
      },
    ),
    failed('the same, exact', '1.34.2', 2, /no 1\.33\.x release is available: .*, and minors cannot be skipped/),
    {
      name: 'the same, with plan --cluster',
      args: ['plan', '--cluster', cluster, '--to', '1.34'],
      exit: 2,
      stderr: /^skewless: plan of bad failed: no 1\.33\.x release is available/,
    },
    {
      name: 'a first control plane that is a worker',
      args: upgrade(cluster, '1.32.6', '--first-control-plane', 'worker-1'),
      exit: 2,
      stderr: /^skewless: upgrade of bad failed: firstControlPlane worker-1 is not a control-plane node$/,
    },
    failed(
      'a patch the repository does not offer',
      '1.32.5',
      2,
      /^skewless: upgrade of bad failed: 1\.32\.5 is not among the available versions$/,
    ),
    failed('a pre-release the repository does not offer', '1.32.7-rc.0', 2, /1\.32\.7-rc\.0 is not among the available versions/),
    failed('another major version', '2.0', 2, /cannot upgrade across major versions \(1\.32\.4 → 2\.0\)/),
    failed(
      'a cluster already out of skew (a kubelet newer than the apiserver)',
      '1.32.6',
      1,
      /^skewless: upgrade of bad failed: refusing to start: the cluster as it is breaks the skew policy: kubelet on worker-2 at 1\.33\.0/,
      {
        setup: () => kubelet('worker-2', 'v1.33.0'),
        cleanup: () => kubelet('worker-2', 'v1.32.4'),
      },
    ),
    failed(
      'a kubelet version the inventory cannot read',
      '1.32.6',
      1,
      /^skewless: upgrade of bad failed: refusing to start: the inventory cannot read the cluster fully: node worker-1 reports kubelet version "v1\.33\.0-dirty\+abc", not a Kubernetes version$/,
      {
        setup: () => kubelet('worker-1', 'v1.33.0-dirty+abc'),
        cleanup: () => kubelet('worker-1', 'v1.32.4'),
      },
    ),
    failed(
      'a PDB that blocks every drain, not acknowledged',
      '1.32.6',
      1,
      /^skewless: upgrade of bad failed: refusing to start: .*default\/solo.*\(acknowledge with --acknowledge default\/solo\)$/,
      {
        setup: () => kube.policy.createNamespacedPodDisruptionBudget({ namespace: 'default', body: pdb }).then(() => undefined),
        cleanup: () => kube.policy.deleteNamespacedPodDisruptionBudget({ name: 'solo', namespace: 'default' }).then(() => undefined),
      },
    ),
  ];
}

/** Broken variants of the cluster's configuration, as `<name>.yaml` text made from the good one. */
export const BROKEN_CONFIGS: {
  name: string;
  exit: 1 | 2;
  stderr: RegExp;
  edit: (yaml: string, paths: { dir: string; someFile: string; publicKey: string }) => string;
}[] = [
  {
    name: 'no-user',
    exit: 2,
    stderr: /no-user\.yaml: ssh\.user must be a non-empty string$/,
    edit: (y) => y.replace(/^ {2}user: .*\n/m, ''),
  },
  {
    name: 'no-kubeconfig',
    exit: 2,
    stderr: /no-kubeconfig\.yaml: kubeconfig must be a non-empty string$/,
    edit: (y) => y.replace(/^kubeconfig: .*\n/m, ''),
  },
  {
    name: 'wrong-type',
    exit: 2,
    stderr: /wrong-type\.yaml: ssh\.connectTimeoutSeconds must be an integer from 1 to 300, got "five"$/,
    edit: (y) => y.replace(/connectTimeoutSeconds: \d+/, 'connectTimeoutSeconds: five'),
  },
  {
    name: 'wrong-type-mapping',
    exit: 2,
    stderr: /wrong-type-mapping\.yaml: drain must be a mapping$/,
    edit: (y) => y.replace(/^drain:\n {2}timeoutSeconds: \d+/m, 'drain: 300'),
  },
  {
    name: 'unknown-key',
    exit: 2,
    stderr: /unknown-key\.yaml: unknown key drian \(known: name, kubeconfig, /,
    edit: (y) => y.replace(/^drain:/m, 'drian:'),
  },
  {
    name: 'unknown-nested-key',
    exit: 2,
    stderr: /unknown-nested-key\.yaml: unknown key ssh\.privateKey \(known: user, /,
    edit: (y) => y.replace(/^ {2}sudo: true$/m, '  sudo: true\n  privateKey: inline'),
  },
  {
    name: 'relative-path',
    exit: 2,
    stderr: /relative-path\.yaml: kubeconfig must be an absolute path, got "cluster\/worker\.kubeconfig"$/,
    edit: (y) => y.replace(/^kubeconfig: .*$/m, 'kubeconfig: cluster/worker.kubeconfig'),
  },
  {
    name: 'window-unknown-day',
    exit: 2,
    stderr: /window-unknown-day\.yaml: maintenanceWindows\[0\]: unknown day "Caturday" \(Mon, Tue, Wed, Thu, Fri, Sat, Sun\)$/,
    edit: (y) => `${y}maintenanceWindows:\n  - {days: [Sat, Caturday], start: "02:00", end: "04:00", timeZone: UTC}\n`,
  },
  {
    name: 'window-unknown-zone',
    exit: 2,
    stderr:
      /window-unknown-zone\.yaml: maintenanceWindows\[1\]: unknown time zone "Europe\/Atlantis" \(an IANA name such as Europe\/Berlin or UTC\)$/,
    edit: (y) =>
      `${y}maintenanceWindows:\n  - {days: [Sat], start: "02:00", end: "04:00", timeZone: UTC}\n  - {days: [Sun], start: "02:00", end: "04:00", timeZone: Europe/Atlantis}\n`,
  },
  {
    name: 'alerts-bad-matcher',
    exit: 2,
    stderr: /alerts-bad-matcher\.yaml: alerts\.matchers\[0\] .*not a regex/,
    edit: (y) => `${y}alerts: {prometheusUrl: "http://127.0.0.1:9", matchers: ['alertname=~"(Node"']}\n`,
  },
  {
    name: 'alerts-not-a-mapping',
    exit: 2,
    stderr: /alerts-not-a-mapping\.yaml: alerts must be a mapping$/,
    edit: (y) => `${y}alerts: http://127.0.0.1:9\n`,
  },
  {
    name: 'alerts-unreachable',
    exit: 1,
    // Port 2 on loopback: below 1024 and in no fetch's bad-port list, so nothing listens there in the test
    // world and the request is made (port 9, discard, is refused by fetch itself: "bad port").
    stderr:
      /^skewless: upgrade of alerts-unreachable failed: refusing to start: alerts: Prometheus at http:\/\/127\.0\.0\.1:2\/ is unreachable: ECONNREFUSED$/,
    edit: (y) => `${y}alerts: {prometheusUrl: "http://127.0.0.1:2", matchers: ['severity="page"']}\n`,
  },
  {
    // The etcd patch step's target (--fix-prerequisites) must stay on 3.5, at or past 3.5.26: 3.6 is kubeadm's own step.
    name: 'etcd-patch-tag',
    exit: 2,
    stderr:
      /etcd-patch-tag\.yaml: etcd\.patchImageTag "3\.6\.5-0": expected an etcd 3\.5 image tag at or past 3\.5\.26 \(e\.g\. 3\.5\.26-0\)$/,
    edit: (y) => `${y}etcd: {patchImageTag: "3.6.5-0"}\n`,
  },
  {
    name: 'notify-unknown-event',
    exit: 2,
    stderr: /notify-unknown-event\.yaml: notify\[0\]\.events\[1\]: unknown event "run\.begun" \(run\.started, run\.waiting, /,
    edit: (y) => `${y}notify:\n  - {name: ops, type: webhook, url: "http://127.0.0.1:9/", events: [run.started, run.begun]}\n`,
  },
  {
    name: 'notify-insecure',
    exit: 2,
    stderr: /notify-insecure\.yaml: notify\[0\]\.url is http:\/\/ to hooks\.example, not loopback: use https, or allowInsecure: true$/,
    edit: (y) => `${y}notify:\n  - {name: ops, type: slack, url: "http://hooks.example/T0/B0/x"}\n`,
  },
  {
    name: 'hook-not-words',
    exit: 2,
    stderr: /hook-not-words\.yaml: hooks\[0\]\.command must be a list of words, run without a shell /,
    edit: (y) => `${y}hooks:\n  - {name: ticket, at: [beforeRun], command: "/usr/local/bin/ticket open"}\n`,
  },
  {
    name: 'exclusion-backwards',
    exit: 2,
    stderr: /exclusion-backwards\.yaml: exclusions\[0\]\.to 2026-12-20 is not after from 2027-01-05$/,
    edit: (y) => `${y}exclusions:\n  - {from: "2027-01-05", to: "2026-12-20", timeZone: Europe/Berlin}\n`,
  },
  {
    name: 'drain-rule-two',
    exit: 2,
    stderr: /drain-rule-two\.yaml: drainRules\[0\] must have exactly one of order, skip or waitCompleted, got order and skip$/,
    edit: (y) => `${y}drainRules:\n  - {namespace: rook-ceph, order: 10, skip: true}\n`,
  },
  {
    name: 'drain-rule-order',
    exit: 2,
    stderr: /drain-rule-order\.yaml: drainRules\[1\]\.order must be an integer from -10000 to 10000, got "last"$/,
    edit: (y) => `${y}drainRules:\n  - {labels: {app: agent}, skip: true}\n  - {labels: {app: osd}, order: last}\n`,
  },
  {
    name: 'drain-rule-wide',
    exit: 2,
    stderr: /drain-rule-wide\.yaml: drainRules\[0\] must select pods by namespace, labels or both /,
    edit: (y) => `${y}drainRules:\n  - {waitCompleted: true}\n`,
  },
  {
    name: 'drain-rule-wait',
    exit: 2,
    stderr: /drain-rule-wait\.yaml: drainRules\[0\]\.waitCompleted must be true or false, got "yes"$/,
    edit: (y) => `${y}drainRules:\n  - {namespace: batch, waitCompleted: "yes"}\n`,
  },
  {
    name: 'node-health-condition',
    exit: 2,
    stderr:
      /node-health-condition\.yaml: nodeHealth\.conditions\[0\] must be a node condition type such as KernelDeadlock, got "Kernel Deadlock"$/,
    edit: (y) => `${y}nodeHealth: {conditions: [Kernel Deadlock]}\n`,
  },
  {
    name: 'node-health-daemonsets',
    exit: 2,
    stderr: /node-health-daemonsets\.yaml: nodeHealth\.daemonSets must be true or false, got "no"$/,
    edit: (y) => `${y}nodeHealth: {daemonSets: "no"}\n`,
  },
  {
    name: 'node-health-wait',
    exit: 2,
    stderr:
      /node-health-wait\.yaml: nodeHealth\.waitSeconds must be an integer from 0 to \d+ \(the longest wait of a health check\), got -1$/,
    edit: (y) => `${y}nodeHealth: {waitSeconds: -1}\n`,
  },
  {
    name: 'addons-kube-proxy',
    exit: 2,
    stderr: /addons-kube-proxy\.yaml: addons\.kubeProxy must be "auto", "absent", "present", got "removed"$/,
    edit: (y) => `${y}addons: {kubeProxy: removed}\n`,
  },
  { name: 'not-yaml', exit: 2, stderr: /not-yaml\.yaml: not valid YAML: /, edit: (y) => y.replace(/^ssh:$/m, 'ssh: [') },
  {
    name: 'node-name-path',
    exit: 2,
    stderr:
      /node-name-path\.yaml: nodes: "\.\.\/worker-1" is not a node name \(lowercase letters, digits, '-' and '\.', at most 253 characters\)$/,
    edit: (y) => y.replace(/^nodes:\n/m, 'nodes:\n  ../worker-1: {port: 2201}\n'),
  },
  {
    name: 'node-name-newline',
    exit: 2,
    stderr: /node-name-newline\.yaml: nodes: "worker-1\\nreboot" is not a node name/,
    edit: (y) => y.replace(/^nodes:\n/m, 'nodes:\n  "worker-1\\nreboot": {port: 2201}\n'),
  },
  {
    name: 'other-name',
    exit: 2,
    stderr: /other-name\.yaml: name is someone-else, expected other-name$/,
    edit: (y) => y.replace(/^name: .*$/m, 'name: someone-else'),
  },
  {
    name: 'key-unreadable',
    exit: 2,
    stderr: /key-unreadable\.yaml: ssh\.privateKeyPath .* is not readable: not a regular file$/,
    edit: (y, p) => y.replace(/privateKeyPath: .*/, `privateKeyPath: ${p.dir}`),
  },
  {
    name: 'key-missing',
    exit: 2,
    stderr: /key-missing\.yaml: ssh\.privateKeyPath .*no-such-key is not readable: ENOENT$/,
    edit: (y, p) => y.replace(/privateKeyPath: .*/, `privateKeyPath: ${p.dir}/no-such-key`),
  },
  {
    name: 'key-garbage',
    exit: 2,
    stderr: /key-garbage\.yaml: ssh\.privateKeyPath .* is not an unencrypted private key \(Unsupported key format\)$/,
    edit: (y, p) => y.replace(/privateKeyPath: .*/, `privateKeyPath: ${p.someFile}`),
  },
  {
    name: 'key-public',
    exit: 2,
    stderr: /key-public\.yaml: ssh\.privateKeyPath .*\.pub is not an unencrypted private key$/,
    edit: (y, p) => y.replace(/privateKeyPath: .*/, `privateKeyPath: ${p.publicKey}`),
  },
  {
    name: 'known-hosts-missing',
    exit: 2,
    stderr: /known-hosts-missing\.yaml: ssh\.knownHostsPath .*no-such-known-hosts is not readable: ENOENT$/,
    edit: (y, p) => y.replace(/knownHostsPath: .*/, `knownHostsPath: ${p.dir}/no-such-known-hosts`),
  },
  {
    name: 'known-hosts-empty',
    exit: 1,
    stderr:
      /^skewless: upgrade of known-hosts-empty failed: host cp-1 \(\[127\.0\.0\.1\]:\d+\) presented host key SHA256:\S+, which is not in .*empty-known-hosts; refusing to connect$/,
    edit: (y, p) => y.replace(/knownHostsPath: .*/, `knownHostsPath: ${p.dir}/empty-known-hosts`),
  },
];

/** `skewless worker` itself: a clusters directory it must refuse before it polls. */
export function workerStartCases({ badWorkerDirs, taskQueue, address }: CaseContext): BadInput[] {
  const start = (dir: string) => ['worker', '--clusters-dir', dir, '--task-queue', `${taskQueue}-refused`, '--address', address];
  return [
    {
      name: 'worker: a clusters directory that does not exist',
      args: start(badWorkerDirs.missing),
      exit: 2,
      stderr: /^skewless: cannot read clusters directory .*: ENOENT$/,
    },
    {
      name: 'worker: a configuration whose SSH key is not a key',
      args: start(badWorkerDirs.garbageKey),
      exit: 2,
      stderr: /^skewless: .*\.yaml: ssh\.privateKeyPath .* is not an unencrypted private key/,
    },
    {
      name: 'worker: a configuration whose known_hosts is missing',
      args: start(badWorkerDirs.missingKnownHosts),
      exit: 2,
      stderr: /^skewless: .*\.yaml: ssh\.knownHostsPath .* is not readable: ENOENT$/,
    },
    // Metrics and tracing settings are checked before the directory.
    {
      name: 'worker: a metrics address with a host name (the SDK binds addresses)',
      args: [...start(badWorkerDirs.missing), '--metrics-address', 'localhost:9464'],
      exit: 2,
      stderr: /^skewless: --metrics-address must be IP:PORT to listen on .*got "localhost:9464"$/,
    },
    {
      name: 'worker: an OTLP endpoint that is not an http(s) URL',
      args: [...start(badWorkerDirs.missing), '--otlp-endpoint', 'grpc://collector:4317'],
      exit: 2,
      stderr: /^skewless: --otlp-endpoint must be the http\(s\) URL of an OTLP\/HTTP traces endpoint/,
    },
  ];
}
