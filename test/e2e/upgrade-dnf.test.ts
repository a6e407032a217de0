import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { readVersionHistory } from '../../sim/cluster/version-recorder.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { planClusterWorkflow } from '../../workflows/plan-cluster-workflow.js';
import { abortSignal, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { uniqueTaskQueue } from '../helpers/temporal-env.js';
import { commandsOutsideForms, failureChain, judgeVersionHistory } from '../helpers/upgrade-evidence.js';
import { sshExec } from '../helpers/ssh-exec.js';
import { untilStatus } from '../helpers/status-polling.js';
import { simWorker } from '../helpers/workers.js';
import { startClusterWorld } from '../helpers/sim-world.js';

const DOCKER_REPO =
  '[docker-ce-stable]\\nname=Docker CE Stable\\nbaseurl=https://download.docker.com/linux/rhel/9/x86_64/stable\\nenabled=1\\ngpgcheck=1\\n';
const CRIO_REPO = '[cri-o]\\nname=CRI-O\\nbaseurl=https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.33/rpm/\\nenabled=1\\n';
// A company mirror withdrawn since: every metadata download of it answers 404 (worker-1 only).
const COMPANY_REPO = '[company-extras]\\nname=Company extras\\nbaseurl=http://mirror.example.invalid/rhel/9/extras/\\nenabled=1\\n';
const NEIGHBOURS = ['docker-ce.repo', 'cri-o.repo'];

// RHEL-family nodes set up by kubernetes.io's guide: kubernetes.repo at v1.32, its exclude= as the hold.
const LAB = `
name: rhel
version: 1.32.4
packageManager: dnf
repository: [1.32.4, 1.33.0, 1.33.7, 1.34.2]
# Ordinary hosts (issue 35): Docker's repository and CRI-O's addon repository beside Kubernetes', both served.
sources:
  - {file: docker-ce.repo, text: "${DOCKER_REPO}"}
  - {file: cri-o.repo, text: "${CRIO_REPO}"}
nodes:
  - {name: cp, role: control-plane, count: 2}
  # worker-1 also has a broken neighbour: dnf loads every enabled repository, so the hop's lists and installs must not trip on it.
  - name: worker-1
    role: worker
    sources:
      - {file: docker-ce.repo, text: "${DOCKER_REPO}"}
      - {file: cri-o.repo, text: "${CRIO_REPO}"}
      - {file: company.repo, text: "${COMPANY_REPO}", broken: true}
  - {name: worker-2, role: worker}
  - {name: worker-3, role: worker}
workloads:
  - {kind: Deployment, name: web, replicas: 3, pdb: {minAvailable: 2}}
`;

describe("e2e: a dnf-based cluster 1.32 → 1.33, each node's kubernetes.repo switched to the hop's minor", () => {
  let env: TestWorkflowEnvironment;
  let tc: TestCluster;
  before(async () => {
    [env, tc] = await startClusterWorld(LAB);
  });
  after(async () => {
    await tc?.stop();
    await env?.teardown();
  });

  it('upgrades every node with dnf, the skew policy held in every state, every .repo at v1.33 with its exclude kept', async () => {
    const onHost = (node: string, file: string) =>
      readFileSync(join(tc.sim.stateDir, 'hosts', node, 'root', '/etc/yum.repos.d', file), 'utf8');
    const neighbours = (node: string) => NEIGHBOURS.map((f) => onHost(node, f));
    const before = Object.fromEntries(['cp-1', 'worker-1'].map((n) => [n, neighbours(n)]));
    const company = onHost('worker-1', 'company.repo');
    const taskQueue = uniqueTaskQueue('rhel');
    const worker = await simWorker(env, tc.clustersDir, taskQueue);
    const [plan, status] = await worker
      .runUntil(
        async () =>
          [
            await env.client.workflow.execute(planClusterWorkflow, {
              taskQueue,
              workflowId: `plan/rhel-${taskQueue}`,
              args: [{ cluster: 'rhel', to: '1.33' }],
            }),
            await env.client.workflow.execute(clusterUpgradeWorkflow, {
              taskQueue,
              workflowId: `upgrade/rhel-${taskQueue}`,
              args: [{ cluster: 'rhel', to: '1.33', policy: { canary: 1, batchSize: 2, maxUnavailable: 1, verifySeconds: 5 } }],
            }),
          ] as const,
      )
      .catch((err: unknown) => assert.fail(failureChain(err)));
    // plan warns about worker-1's broken company.repo by node and file, as a warning that holds nothing.
    const warned = (plan.readiness?.findings ?? []).filter((f) => f.check === 'other-source');
    assert.deepEqual(
      warned.map((f) => [f.severity, f.node, f.ack]),
      [['warn', 'worker-1', 'other-source:worker-1:/etc/yum.repos.d/company.repo']],
      JSON.stringify(plan.readiness),
    );
    assert.match(warned[0]!.what, /repository 'company-extras' .*fails to refresh \(404\)/);
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.ok(
      status.events.some((e) => /readiness: \/etc\/yum\.repos\.d\/company\.repo .*fails to refresh/.test(e)),
      status.events.join('\n'),
    );
    assert.deepEqual(status.hops, ['1.33.7']);

    await tc.sim.versionHistorySettled();
    assert.deepEqual(judgeVersionHistory(readVersionHistory(tc.sim.stateDir)).problems, []);
    const nodes = (await tc.kube.core.listNode()).items;
    assert.ok(
      nodes.every((n) => n.status?.nodeInfo?.kubeletVersion === 'v1.33.7'),
      nodes.map((n) => `${n.metadata?.name} ${n.status?.nodeInfo?.kubeletVersion}`).join(', '),
    );

    for (const node of ['cp-1', 'cp-2', 'worker-1', 'worker-2', 'worker-3']) {
      const repo = readFileSync(join(tc.sim.stateDir, 'hosts', node, 'root', '/etc/yum.repos.d/kubernetes.repo'), 'utf8');
      assert.match(repo, /^baseurl=https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.33\/rpm\/$/m, `${node}: ${repo}`);
      assert.match(repo, /^exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni$/m, `${node} keeps the guide's hold`);
      assert.deepEqual(tc.sim.hosts.state(node).packages, {
        kubeadm: '1.33.7-150500.1.1',
        kubelet: '1.33.7-150500.1.1',
        kubectl: '1.33.7-150500.1.1',
      });
      const commands = tc.sim.hosts.commandLog(node).map((e) => e.command);
      assert.deepEqual(
        commands.filter((c) => /\bapt|dpkg/.test(c)),
        [],
        `${node}: no apt on a dnf node`,
      );
      const installs = commands.filter((c) => /dnf install/.test(c));
      assert.ok(installs.length >= 1 && installs.every((c) => c.includes('--disableexcludes=kubernetes')), installs.join('\n'));
      // The switch comes before the first install of the hop.
      const sed = commands.findIndex((c) =>
        c.includes('sed -i s,/core:/stable:/v1.32/,/core:/stable:/v1.33/,g /etc/yum.repos.d/kubernetes.repo'),
      );
      assert.ok(sed >= 0 && sed < commands.findIndex((c) => /dnf install/.test(c)), `${node}: ${commands.join('\n')}`);
      // The hop's refresh fetched the kubernetes repository alone.
      const refreshes = commands.filter((c) => /^sudo -n dnf makecache/.test(c));
      assert.ok(refreshes.length >= 1 && refreshes.every((c) => c.endsWith(' --repo=kubernetes')), refreshes.join('\n'));
    }
    for (const node of ['cp-1', 'worker-1'])
      assert.deepEqual(neighbours(node), before[node], `${node}: the neighbours' .repo files as they were`);
    assert.equal(onHost('worker-1', 'company.repo'), company, "worker-1's broken company.repo as it was");
    // On worker-1 the listings read the kubernetes repository alone, the installs skip the broken neighbour.
    const ran = tc.sim.hosts.commandLog('worker-1').map((e) => e.command);
    const lists = ran.filter((c) => /^dnf list /.test(c) && !c.includes('reposdir='));
    assert.ok(lists.length >= 1 && lists.every((c) => c.includes(' --repo=kubernetes ')), lists.join('\n'));
    const installs = ran.filter((c) => c.includes('dnf install'));
    assert.ok(
      installs.length >= 1 &&
        installs.every((c) => c.includes(" '--setopt=*.skip_if_unavailable=True' --setopt=kubernetes.skip_if_unavailable=False ")),
      installs.join('\n'),
    );
    // Every command the hosts ran is a form `sim fault` knows skewless sends (rules/host-command-forms.ts).
    assert.deepEqual(commandsOutsideForms(tc.sim), []);
  });
  it("an abort while a failed kubelet install waits leaves every kubernetes.repo's exclude= as before the run (read through the host)", async () => {
    const nodes = ['cp-1', 'cp-2', 'worker-1', 'worker-2', 'worker-3'];
    const excludes = async () =>
      Object.fromEntries(
        await Promise.all(
          nodes.map(async (n) => {
            const repo = (await sshExec(tc.sim.endpoints, n, 'cat /etc/yum.repos.d/kubernetes.repo')).stdout;
            return [n, repo.split('\n').filter((l) => /^exclude\s*=/.test(l))];
          }),
        ),
      );
    const before = await excludes();
    for (const [n, lines] of Object.entries(before))
      assert.deepEqual(lines, ['exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni'], n);
    // Whichever worker is the canary, its kubelet install fails in the rpm transaction.
    for (const w of ['worker-1', 'worker-2', 'worker-3'])
      tc.sim.hosts.setFault(w, {
        kind: 'fail',
        command:
          "dnf install -y -q --disableexcludes=kubernetes '--setopt=*.skip_if_unavailable=True' --setopt=kubernetes.skip_if_unavailable=False kubelet-1.34.2-150500.1.1",
        stderr: 'Error: Transaction test error:\n  file /usr/bin/kubelet conflicts between attempted installs',
      });
    const taskQueue = uniqueTaskQueue('rhel-abort');
    const worker = await simWorker(env, tc.clustersDir, taskQueue);
    const status = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: `upgrade/rhel-abort-${taskQueue}`,
        args: [{ cluster: 'rhel', to: '1.34', policy: { canary: 1, batchSize: 2, maxUnavailable: 1, verifySeconds: 5 } }],
      });
      const blocked = (s: UpgradeStatus) => Object.entries(s.nodes).find(([, n]) => n.phase === 'blocked');
      const s = await untilStatus(handle, 'a worker blocked on its kubelet install', (st) => blocked(st) !== undefined, 300_000);
      const [node, state] = blocked(s) as [string, UpgradeStatus['nodes'][string]];
      assert.match(state.blocked?.message ?? '', /kubelet conflicts between attempted installs/);
      assert.deepEqual(await excludes(), before, `${node} waits with its hold in place`);
      await handle.signal(abortSignal, { by: 'ops', reason: 'rpm conflict' });
      return { node, result: await handle.result() };
    });
    assert.equal(status.result.phase, 'aborted', status.result.events.join('\n'));
    assert.deepEqual(await excludes(), before, "every node's exclude= as before the run");
    assert.ok(
      status.result.outcome?.includes(
        `; kubernetes.repo on ${status.node} points at v1.34, ahead of its kubelet 1.33.7 (held: kubeadm kubelet kubectl); finish with: `,
      ),
      status.result.outcome,
    );
    assert.doesNotMatch(status.result.outcome ?? '', /holds put back/, 'dnf lifts exclude= for its one command: nothing to put back');
  });
});
