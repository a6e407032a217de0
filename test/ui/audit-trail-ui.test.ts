import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import { mergePatch } from '../../sim/cluster/kube-clients.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { repoRoot } from '../helpers/run-cli.js';
import { startTestCluster, type TestCluster } from '../helpers/sim-cluster.js';
import { cliAsync } from '../helpers/spawn-cli.js';
import { startDevServerWithUi, uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { simWorker } from '../helpers/workers.js';
import { startTogether } from '../helpers/start-together.js';
import { nodeWorkflowId, upgradeWorkflowId } from '../../contracts/workflow-ids.js';

const CLUSTER = 'audit';
const LAB = `
name: ${CLUSTER}
version: 1.32.4
repository: [1.32.4, 1.33.7]
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {maxUnavailable: 1}}
  # Two replicas and minAvailable 2: the first drain of a node running one of its pods blocks.
  - {kind: Deployment, name: payments, replicas: 2, pdb: {minAvailable: 2}}
`;
const HOP = '1.33.7';
const NODES = ['cp-1', 'worker-1', 'worker-2', 'worker-3'];
const WORKFLOW_ID = upgradeWorkflowId(CLUSTER);
const APPROVER = { by: 'dana', comment: 'control plane healthy on 1.33.7, go ahead' };
const RESOLVER = { by: 'erin', comment: 'payments PDB relaxed to minAvailable 1 with the payments team' };
const CHROMIUM = process.env.SKEWLESS_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = join(repoRoot, 'test-output', 'ui');
const VIEWPORT = { width: 1760, height: 1200 };
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * The audit trail in the Temporal UI, seen in a real browser: an upgrade of a simulated 1+3 cluster
 * run through the real CLI against the dev server (with its Web UI) and a real worker, with a gate
 * approved and a blocked drain resolved by named operators; then headless Chromium (Debian's, driven
 * by playwright-core) opens the UI and finds every fact of the trail on screen, and `skewless history`
 * prints the same facts in the terminal. Screenshots land in test-output/ui/.
 */
describe('ui: the audit trail of an upgrade in the Temporal UI', () => {
  let env: TestWorkflowEnvironment;
  let uiUrl: string;
  let tc: TestCluster;
  let worker: Worker;
  let running: Promise<void>;
  let browser: Browser | undefined;
  let page: Page;
  const taskQueue = uniqueTaskQueue('ui');
  const cliEnv = () => ({ ...process.env, ...temporalVars(env), SKEWLESS_TASK_QUEUE: taskQueue, USER: 'ci' });
  const cli = (...args: string[]) => cliAsync(args, cliEnv());
  /** What the run did, for the assertions on what the UI and `history` show. */
  let finalStatus: UpgradeStatus;
  let gateName: string | undefined;
  let blockedNode: string | undefined;
  let parentRunId: string;

  before(async () => {
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    [{ env, uiUrl }, tc] = await startTogether([startDevServerWithUi(), startTestCluster(LAB)]);
    worker = await simWorker(env, tc.clustersDir, taskQueue);
    running = worker.run();
  });
  after(async () => {
    await browser?.close();
    worker?.shutdown();
    await running;
    await tc?.stop();
    await env?.teardown();
  });

  it('runs an upgrade through the CLI: a gate approved by dana, a drain blocked by a PDB resolved by erin, an etcd snapshot', async () => {
    const started = await cli(
      'upgrade',
      '--cluster',
      CLUSTER,
      '--to',
      '1.33',
      '--approve-workers',
      '--drain-timeout',
      '5',
      '--acknowledge',
      'default/payments',
      '--detach',
    );
    assert.equal(started.code, 0, started.stdout + started.stderr);
    const handle = env.client.workflow.getHandle(WORKFLOW_ID);
    const problems: string[] = [];
    // The operator: approves the gate when it waits; when a drain blocks, relaxes the PDB and retries.
    await waitFor(
      'the upgrade to end, gate approved and the blocked drain resolved',
      async () => {
        const s = await handle.query(statusQuery);
        const waiting = s.gates.find((g) => !g.approvedBy && !g.opensAt);
        if (waiting) {
          const r = await cli('approve', CLUSTER, '--gate', waiting.name, '--by', APPROVER.by, '--comment', APPROVER.comment);
          if (r.code !== 0) problems.push(`approve: ${r.stderr}`);
          gateName = waiting.name;
        }
        const blocked = Object.entries(s.nodes).find(([, n]) => n.phase === 'blocked');
        if (blocked) {
          // Once the PDB is relaxed no other drain may block: a second block fails the test, not the wait.
          if (blockedNode !== undefined)
            problems.push(`${blocked[0]} blocked after ${blockedNode}'s block was resolved: ${JSON.stringify(blocked[1].blocked)}`);
          if (blocked[1].blocked?.kind !== 'DrainBlocked') problems.push(`${blocked[0]} blocked on ${JSON.stringify(blocked[1].blocked)}`);
          if (problems.length) return true;
          blockedNode = blocked[0];
          await tc.kube.policy.patchNamespacedPodDisruptionBudget(
            { name: 'payments', namespace: 'default', body: { spec: { minAvailable: 1 } } },
            mergePatch,
          );
          await waitFor(
            'the PDB allows one disruption',
            async () =>
              ((await tc.kube.policy.readNamespacedPodDisruptionBudget({ name: 'payments', namespace: 'default' })).status
                ?.disruptionsAllowed ?? 0) >= 1,
            30_000,
            100,
          );
          const r = await cli(
            'resolve',
            CLUSTER,
            '--node',
            blockedNode,
            '--action',
            'retry',
            '--by',
            RESOLVER.by,
            '--comment',
            RESOLVER.comment,
          );
          if (r.code !== 0) problems.push(`resolve: ${r.stderr}`);
          // The node tells the parent it moves again: until then status still says blocked.
          await waitFor(
            `${blockedNode} moving again`,
            async () => (await handle.query(statusQuery)).nodes[blockedNode as string]?.phase !== 'blocked',
            60_000,
            250,
          );
        }
        return problems.length > 0 || ['done', 'failed', 'aborted'].includes(s.phase);
      },
      600_000,
      500,
    );
    assert.deepEqual(problems, []);
    finalStatus = await handle.result();
    parentRunId = (await handle.describe()).runId;
    assert.equal(finalStatus.phase, 'done', finalStatus.events.join('\n'));
    assert.equal(gateName, `workers-${HOP}`);
    assert.ok(blockedNode, 'a drain was blocked by the payments PDB');
    assert.equal(finalStatus.snapshots.length, 1);
    assert.match(finalStatus.snapshots[0]?.sha256 ?? '', /^[0-9a-f]{64}$/);
    assert.deepEqual(
      Object.entries(finalStatus.nodes)
        .map(([n, s]) => `${n} ${s.phase} ${s.version}`)
        .sort(),
      NODES.map((n) => `${n} done ${HOP}`),
    );
  });

  // The browser: Debian's chromium, headless, a fresh profile (playwright's own temporary one) per run.
  const openBrowser = async () => {
    if (browser) return;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await browser.newPage({ viewport: VIEWPORT });
  };
  const ns = () => `${uiUrl}/namespaces/default`;
  const workflowUrl = (workflowId: string, runId: string, tail = 'history') =>
    `${ns()}/workflows/${encodeURIComponent(workflowId)}/${runId}/${tail}`;
  const open = async (url: string) => {
    await page.setViewportSize(VIEWPORT);
    await page.goto(url);
  };
  /**
   * Waits until the single-page app shows every one of `needles` (it renders after its API calls);
   * fails naming the ones it never showed.
   */
  const expectVisible = async (what: string, needles: string[]) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const text = await page
        .locator('body')
        .innerText()
        .catch(() => '');
      const missing = needles.filter((n) => !text.includes(n));
      if (missing.length === 0) return;
      if (Date.now() > deadline) assert.fail(`${what}: the UI does not show ${JSON.stringify(missing)}`);
      await page.waitForTimeout(250);
    }
  };
  /** A screenshot of the whole page: the app scrolls inside its own frame, so the viewport grows to its content first. */
  const shoot = async (name: string, grow = true) => {
    const height = !grow
      ? VIEWPORT.height
      : await page.evaluate<number>(
          'Math.max(innerHeight, ...[...document.querySelectorAll("*")].filter((e) => e.clientHeight >= innerHeight * 0.7).map((e) => e.scrollHeight))',
        );
    await page.setViewportSize({ width: VIEWPORT.width, height: Math.min(height, 12_000) });
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  };
  const compactView = async () => {
    await page.getByRole('button', { name: 'Compact', exact: true }).click();
  };

  it('the list view finds the upgrade by its search attributes and shows them as columns, and lists its node workflows', async () => {
    await openBrowser();
    await open(`${ns()}/workflows?query=${encodeURIComponent(`SkewlessCluster="${CLUSTER}" AND SkewlessPhase="done"`)}`);
    await expectVisible('the list filtered by SkewlessCluster', [WORKFLOW_ID, 'clusterUpgradeWorkflow', '1 Completed']);
    // The custom search attributes as columns (the table's own configuration drawer).
    await page.getByTestId('workflows-summary-table-configuration-button').click();
    for (const column of ['SkewlessCluster', 'SkewlessFromVersion', 'SkewlessTargetVersion', 'SkewlessPhase']) {
      await page.getByTestId(`orderable-list-item-${column}-add-button`).click();
    }
    // Room for them on screen: the run id and end time go, the saved views fold away.
    for (const column of ['Run ID', 'End']) await page.getByTestId(`orderable-list-item-${column}-remove-button`).click();
    await page.getByTestId('drawer-close-button').click();
    await page.getByRole('button', { name: 'Collapse saved views' }).click();
    await expectVisible('the search attribute columns', ['SkewlessFromVersion', 'SkewlessTargetVersion']);
    const row = page.locator('tr', { hasText: WORKFLOW_ID });
    await row.waitFor();
    const cells = (await row.innerText()).split(/\s+/);
    for (const value of [CLUSTER, '1.32.4', HOP, 'done']) assert.ok(cells.includes(value), `${value} in the row: ${cells.join(' ')}`);
    await shoot('01-list-upgrade-found-by-SkewlessCluster-with-search-attribute-columns', false);

    await open(`${ns()}/workflows?query=${encodeURIComponent(`WorkflowId STARTS_WITH "${WORKFLOW_ID}/"`)}`);
    await expectVisible(
      'the node workflows in the list',
      NODES.map((n) => `${WORKFLOW_ID}/${HOP}/${n}`),
    );
    await shoot('02-list-node-workflows-upgrade-cluster-hop-node', false);
  });

  it("the upgrade's page: input and result, the event history with runbook summaries, gates, resolutions and children", async () => {
    await open(workflowUrl(WORKFLOW_ID, parentRunId));
    await expectVisible('the upgrade page', [WORKFLOW_ID, 'Completed', 'clusterUpgradeWorkflow', 'Event History']);
    await compactView();
    await expectVisible('the compact history', [
      `etcd snapshot on cp-1 before v${HOP}`,
      `install kubeadm v${HOP} on cp-1`,
      `kubeadm upgrade plan v${HOP} on cp-1`,
      'label 4 nodes with their stage',
      `control plane of cp-1 to v${HOP}`,
      ...['cp-1', 'worker-1', 'worker-2', 'worker-3'].map((n) => `${n}: drain, kubelet v${HOP}, uncordon`),
      'check workloads of audit',
      'clear stage labels',
      'Workflow Update',
      'approve',
      `"approvedBy":"${APPROVER.by}"`,
      'resolveDrain',
      'drainResolution',
      nodeWorkflowId(WORKFLOW_ID, String(blockedNode), HOP),
    ]);
    await shoot('03-upgrade-page-compact-history-with-activity-summaries');

    await open(workflowUrl(WORKFLOW_ID, parentRunId, 'metadata'));
    // The memo and the search attributes, as the UI prints their JSON.
    await expectVisible('memo and search attributes', [
      'Memo',
      `"hop": "${HOP}"`,
      '"phase": "done"',
      '"progress": "4/4 node upgrades"',
      '"from": "1.32.4"',
      `"SkewlessCluster": "${CLUSTER}"`,
      '"SkewlessFromVersion": "1.32.4"',
      `"SkewlessTargetVersion": "${HOP}"`,
      '"SkewlessPhase": "done"',
    ]);
    await shoot('04-upgrade-memo-hop-phase-progress-and-search-attributes');

    await open(workflowUrl(WORKFLOW_ID, parentRunId, 'relationships'));
    await expectVisible('the child workflows', ['Child Count', ...NODES.map((n) => `${WORKFLOW_ID}/${HOP}/${n}`)]);
    await shoot('05-upgrade-relationships-one-child-workflow-per-node-and-step');
  });

  it('event by event: the approval and the resolution with who and why, the etcd snapshot with its path and sha256', async () => {
    const events = (await env.client.workflow.getHandle(WORKFLOW_ID, parentRunId).fetchHistory()).events ?? [];
    const updateEvent = (name: string) =>
      String(events.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === name)?.eventId);
    const snapshotEvent = String(
      events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'snapshotEtcd')?.eventId,
    );
    const snapshot = finalStatus.snapshots[0] as UpgradeStatus['snapshots'][number];

    await open(workflowUrl(WORKFLOW_ID, parentRunId, `history/events/${updateEvent('approve')}`));
    await expectVisible('the approval', [
      'Workflow Execution Update Accepted',
      '"name": "approve"',
      `"gate": "workers-${HOP}"`,
      `"by": "${APPROVER.by}"`,
      `"comment": "${APPROVER.comment}"`,
      'Workflow Execution Update Completed',
      `"approvedBy": "${APPROVER.by}"`,
    ]);
    await shoot('06-approval-gate-workers-approved-by-dana-with-comment');

    await open(workflowUrl(WORKFLOW_ID, parentRunId, `history/events/${updateEvent('resolveDrain')}`));
    await expectVisible('the resolution', [
      'Workflow Execution Update Accepted',
      '"name": "resolveDrain"',
      `"node": "${blockedNode}"`,
      '"action": "retry"',
      `"by": "${RESOLVER.by}"`,
      `"comment": "${RESOLVER.comment}"`,
      '"kind": "DrainBlocked"',
      '(PDB payments)',
    ]);
    await shoot('07-drain-resolution-retry-by-erin-with-why-and-the-pdb-block');

    await open(workflowUrl(WORKFLOW_ID, parentRunId, `history/events/${snapshotEvent}`));
    await expectVisible('the etcd snapshot', [
      'Activity Task Scheduled',
      `etcd snapshot on cp-1 before v${HOP}`,
      'Activity Task Completed',
      `"localPath": "${snapshot.localPath}"`,
      `"remotePath": "${snapshot.remotePath}"`,
      `"sha256": "${snapshot.sha256}"`,
      `"revision": ${snapshot.revision}`,
    ]);
    await shoot('08-etcd-snapshot-activity-path-and-sha256');
  });

  it("the node workflows: the blocked node's drains and the operator's answer, the control plane's kubeadm steps", async () => {
    const children = ((await env.client.workflow.getHandle(WORKFLOW_ID, parentRunId).fetchHistory()).events ?? []).flatMap((e) => {
      const x = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
      return x?.workflowId && x.runId ? [{ workflowId: x.workflowId, runId: x.runId }] : [];
    });
    const blocked = children.find((c) => c.workflowId === `${WORKFLOW_ID}/${HOP}/${blockedNode}`) as { workflowId: string; runId: string };
    const node = blockedNode as string;
    await open(workflowUrl(blocked.workflowId, blocked.runId));
    await expectVisible("the blocked node's page", [blocked.workflowId, 'nodeUpgradeWorkflow']);
    await compactView();
    await expectVisible("the blocked node's steps", [
      `cordon ${node}`,
      `drain ${node}`,
      'nodeBlocked',
      'drainResolution',
      `"by":"${RESOLVER.by}"`,
      `install kubeadm v${HOP} on ${node}`,
      `kubeadm upgrade node on ${node} (v${HOP})`,
      `install kubelet, kubectl v${HOP} on ${node}`,
      `restart kubelet on ${node} at v${HOP}`,
      `wait for ${node} Ready at v${HOP}`,
      `uncordon ${node}`,
    ]);
    const drains = await page.locator('tr', { hasText: `drain ${node}` }).count();
    assert.equal(drains, 2, 'the blocked drain and the one after the retry');
    await shoot(`09-node-${node}-history-drain-blocked-resolved-by-erin-then-upgraded`);

    const nodeEvents = (await env.client.workflow.getHandle(blocked.workflowId, blocked.runId).fetchHistory()).events ?? [];
    const firstDrain = String(nodeEvents.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'drainNode')?.eventId);
    await open(workflowUrl(blocked.workflowId, blocked.runId, `history/events/${firstDrain}`));
    await expectVisible('the blocked drain', [
      `drain ${node}`,
      'Activity Task Failed',
      'DrainBlocked',
      `drain of ${node} did not finish within 5 s`,
      '(PDB payments)',
    ]);
    await shoot(`10-node-${node}-first-drain-failed-blocked-by-pdb-payments`);

    const cp = children.find((c) => c.workflowId === `${WORKFLOW_ID}/${HOP}/cp-1`) as { workflowId: string; runId: string }; // its first step: the control plane
    await open(workflowUrl(cp.workflowId, cp.runId));
    await expectVisible("the control plane's page", [cp.workflowId, 'nodeUpgradeWorkflow']);
    await compactView();
    await expectVisible("the control plane's steps", [
      `kubeadm upgrade apply v${HOP} on cp-1`,
      `check the control plane on cp-1 at v${HOP}`,
    ]);
    await shoot('11-node-cp-1-control-plane-kubeadm-upgrade-apply');
  });

  it('`skewless history` prints the same audit trail in the terminal', async () => {
    const r = await cli('history', CLUSTER);
    assert.equal(r.code, 0, r.stderr);
    const node = blockedNode as string;
    const snapshot = finalStatus.snapshots[0] as UpgradeStatus['snapshots'][number];
    const lines = r.stdout.split('\n');
    const line = (what: string, re: RegExp) => {
      const found = lines.filter((l) => re.test(l));
      assert.ok(found.length > 0, `${what}: no line matches ${re}\n${r.stdout}`);
      return found;
    };
    assert.match(lines[0] ?? '', new RegExp(`^${WORKFLOW_ID}: 1 run, 5 node workflows$`));
    line('the approval', new RegExp(`- +gate workers-${esc(HOP)} approved by ${APPROVER.by} \\("${esc(APPROVER.comment)}"\\)$`));
    line('the resolution', new RegExp(`${node} +drain of ${node} resolved by ${RESOLVER.by}: retry \\("${esc(RESOLVER.comment)}"\\)$`));
    line('the block', new RegExp(`${node} +drain blocked: drain of ${node} did not finish within 5 s; .*\\(PDB payments\\)`));
    line(
      'the snapshot',
      new RegExp(`cp-1 +etcd snapshot ${esc(snapshot.localPath)} sha256 ${snapshot.sha256} revision ${snapshot.revision}$`),
    );
    assert.equal(line('the drains', new RegExp(`${node} +drainNode: drain ${node} `)).length, 2);
    line('kubeadm apply', new RegExp(`cp-1 +kubeadmUpgradeApply: kubeadm upgrade apply v${esc(HOP)} on cp-1 `));
    for (const n of NODES) line(`${n}'s node upgrade`, new RegExp(`${n} +node upgrade to ${esc(HOP)}: done`));
    line('the end', new RegExp(`- +${WORKFLOW_ID} completed: upgraded to ${esc(HOP)}$`));
  });
});
