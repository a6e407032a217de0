import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { nodeWorkflowId } from '../../contracts/workflow-ids.js';
import { cliAsync } from '../helpers/spawn-cli.js';
import { commandsOutsideForms, judgeSimulation } from '../helpers/upgrade-evidence.js';
import { simWorld } from '../helpers/sim-world.js';

const DOCKER = 'deb [arch=amd64 signed-by=/etc/apt/keyrings/docker.asc] https://download.docker.com/linux/debian bookworm stable';
const CRIO = 'deb [signed-by=/etc/apt/keyrings/cri-o-apt-keyring.gpg] https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.33/deb/ /';
const LAB = `
name: everyhop
version: 1.32.4
repository: [1.32.4, 1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
  # Ordinary hosts (issue 35): worker-1's Docker source is stale (404), worker-2's is served, beside CRI-O's addon repository.
  - name: worker-1
    role: worker
    sources: [{file: docker.list, text: "${DOCKER}", broken: true}]
  - name: worker-2
    role: worker
    sources: [{file: docker.list, text: "${DOCKER}"}, {file: cri-o.list, text: "${CRIO}"}]
workloads:
  - {kind: Deployment, name: web, replicas: 2, pdb: {maxUnavailable: 1}}
`;
const WORKERS = ['worker-1', 'worker-2'];
const SOURCES_DIR = '/etc/apt/sources.list.d';

interface PlanJson {
  workerHops: Record<string, string[]>;
  runbook: {
    version: string;
    moves: { controlPlanes: string[]; workers: string[]; workersStay: { version: string; nodes: string[] }[] };
  }[];
}

/**
 * Workers move once by default (issue 22); `--workers-every-hop` keeps the plan of before: every worker
 * drained at every hop. Through the real CLI, worker and simulated cluster: the plan says which, and the
 * run does what the plan said.
 */
describe('e2e: --workers-every-hop drains every worker at every hop, as before', () => {
  const world = simWorld(LAB, 'everyhop');
  const cli = (...args: string[]) => cliAsync(args, world.cliEnv());
  const planOf = async (...more: string[]) => {
    const r = await cli('plan', '--cluster', 'everyhop', '--to', '1.34', '--output', 'json', ...more);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return JSON.parse(r.stdout) as PlanJson;
  };

  it('plan shows the workers staying at 1.32.4 through 1.33 by default, and moving at both hops with the flag', async () => {
    const once = await planOf();
    assert.deepEqual(once.workerHops, { 'worker-1': ['1.34.2'], 'worker-2': ['1.34.2'] });
    assert.deepEqual(once.runbook[0]?.moves, {
      hop: '1.33.7',
      controlPlanes: ['cp-1'],
      workers: [],
      workersStay: [{ version: '1.32.4', nodes: WORKERS }],
    });
    const every = await planOf('--workers-every-hop');
    assert.deepEqual(
      every.runbook.map((h) => h.moves.workers),
      [WORKERS, WORKERS],
    );
    const text = await cli('plan', '--cluster', 'everyhop', '--to', '1.34');
    assert.equal(text.code, 0, 'a broken neighbour source is a warning, never a hold');
    assert.match(text.stdout, /^ {2}moves: control planes cp-1; workers stay at 1\.32\.4$/m);
    // worker-1's stale Docker source is named, by file and URL; worker-2's served sources are not.
    assert.match(
      text.stdout,
      /^ {2}WARN other-source before 1\.33(\.7)? on worker-1: \/etc\/apt\/sources\.list\.d\/docker\.list \(https:\/\/download\.docker\.com\/linux\/debian bookworm\) fails to refresh \(404\)/m,
    );
    assert.deepEqual((text.stdout.match(/^ {2}WARN other-source .*$/gm) ?? []).length, 1, text.stdout);
    assert.match(text.stdout, /^ {2}moves: control planes cp-1; workers to 1\.34\.2: worker-1, worker-2$/m);
  });

  it('upgrade --workers-every-hop: each worker drained and moved at 1.33 and at 1.34, the skew policy held in every state', async () => {
    const onHost = (node: string, path: string) => readFileSync(join(world.tc.sim.stateDir, 'hosts', node, 'root', path), 'utf8');
    const neighbours = () => ['docker.list', 'cri-o.list'].map((f) => onHost('worker-2', `${SOURCES_DIR}/${f}`));
    const before = neighbours();
    const run = await cli('upgrade', '--cluster', 'everyhop', '--to', '1.34', '--workers-every-hop');
    assert.equal(run.code, 0, run.stdout + run.stderr);
    // The neighbours' files, byte for byte as they were; kubernetes.list at the last hop's minor.
    assert.deepEqual(neighbours(), before);
    assert.match(onHost('worker-2', `${SOURCES_DIR}/kubernetes.list`), /\/core:\/stable:\/v1\.34\/deb\/ \/\n$/);
    for (const node of WORKERS) {
      // Every refresh as root named kubernetes.list alone, and succeeded (worker-1's Docker source answers 404).
      const refreshes = world.tc.sim.hosts.commandLog(node).filter((e) => /^sudo -n .*apt-get update/.test(e.command));
      assert.ok(refreshes.length >= 2, `${node}: a refresh per hop`);
      for (const r of refreshes) {
        assert.match(
          r.command,
          / -o Dir::Etc::SourceList=\/etc\/apt\/sources\.list\.d\/kubernetes\.list -o Dir::Etc::SourceParts=- -o APT::Get::List-Cleanup=0 /,
          r.command,
        );
        assert.equal(r.exitCode, 0, `${node}: ${r.command}`);
      }
    }
    const verdict = await judgeSimulation(world.tc.sim);
    assert.deepEqual(verdict.problems, []);
    for (const node of WORKERS) {
      assert.deepEqual(verdict.versionsSeen[`kubelets ${node}`], ['1.32.4', '1.33.7', '1.34.2'], node);
      for (const hop of ['1.33.7', '1.34.2']) {
        const child = await world.env.client.workflow.getHandle(nodeWorkflowId('upgrade/everyhop', node, hop)).describe();
        assert.equal(child.status.name, 'COMPLETED', `${node} at ${hop}`);
      }
      const upgrades = world.tc.sim.hosts.commandLog(node).filter((e) => /kubeadm upgrade node$/.test(e.command) && e.exitCode === 0);
      assert.equal(upgrades.length, 2, `${node}: kubeadm upgrade node once per hop`);
    }
    // Every command the hosts ran (plan's readiness, the hops on apt) is a form `sim fault` knows skewless sends.
    assert.deepEqual(commandsOutsideForms(world.tc.sim), []);
  });
});
