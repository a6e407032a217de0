import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { productionNodeOptions } from '../../bench/production-heap.js';
import { RESULT_SCHEMA, type BenchResult } from '../../bench/report.js';
import { repoRoot } from '../helpers/run-cli.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * `npm run bench -- --quick`: one 3-worker cluster, one hop, every tool, and a 30-pod drain, on the
 * real simulation, dev server, worker, kubectl and OpenSSH. Checks that the result is well formed
 * and complete, never how fast anything was (timings are for the benchmark, not for a test).
 */

const RUN = fileURLToPath(new URL('../../bench/run.js', import.meta.url));
const out = tempDir('bench-test');
after(() => rmSync(out, { recursive: true, force: true }));

function bench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RUN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

const positive = (n: unknown, what: string) => assert.ok(typeof n === 'number' && Number.isFinite(n) && n > 0, `${what}: ${String(n)}`);

describe("npm run bench (the suite's small version)", () => {
  it('refuses bad input in one line, exit 2, starting nothing', async () => {
    const r = await bench(['--sizes', '7x7', '--out', join(out, 'never')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr.trim(), /^bench: --sizes: unknown size "7x7"/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.ok(!existsSync(join(out, 'never')));
  });

  it('--quick writes a well-formed JSON result, the Markdown table and a timeline per run', { timeout: 900_000 }, async () => {
    const r = await bench(['--quick', '--out', out]);
    assert.equal(r.code, 0, r.stderr.split('\n').slice(-15).join('\n'));
    const result = JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')) as BenchResult;
    assert.equal(result.schema, RESULT_SCHEMA);
    assert.ok(Date.parse(result.finishedAt) >= Date.parse(result.startedAt));
    for (const [k, v] of Object.entries(result.simulated.latenciesMs)) positive(v, `latency ${k}`);
    assert.deepEqual(
      result.runs.map((x) => `${x.hops}:${x.tool}/${x.batchSize}${x.workersEveryHop ? '/every-hop' : ''}`),
      ['1:baseline/1', '1:skewless/1', '1:skewless/2', '2:skewless/2', '2:skewless/2/every-hop'],
    );
    for (const run of result.runs) {
      positive(run.wallSeconds, `${run.id} wall`);
      positive(run.lowerBoundSeconds, `${run.id} bound`);
      positive(run.nominalLowerBoundSeconds, `${run.id} nominal bound`);
      assert.equal(run.ratioToLowerBound, Math.round((run.wallSeconds / run.lowerBoundSeconds) * 1000) / 1000);
      assert.equal(run.workers, 3);
      assert.equal(run.pods, 12);
      const svg = readFileSync(join(out, run.timeline as string), 'utf8');
      assert.match(svg, /^<svg[\s>]/);
      for (const node of ['cp-1', 'worker-1', 'worker-2', 'worker-3']) assert.ok(svg.includes(`>${node}<`), `${run.id}: lane ${node}`);
      if (run.tool === 'skewless') {
        positive(run.events?.parent, `${run.id} parent events`);
        positive(run.events?.nodeWorkflowEvents, `${run.id} node workflow events`);
        // A node workflow per node that moves and one for the control plane's kubeadm step, per hop: at two
        // hops the workers move once (at the last) unless --workers-every-hop.
        const expected = run.hops === 1 ? 5 : run.workersEveryHop ? 10 : 7;
        assert.equal(run.events?.nodeWorkflows, expected, `${run.id}: node workflows`);
        positive(run.worker?.peakRssMiB, `${run.id} worker RSS`);
        assert.equal(
          run.worker?.nodeOptions,
          productionNodeOptions(join(repoRoot, 'Dockerfile')),
          `${run.id}: the worker ran with the production heap`,
        );
        const cordoned = run.nodes?.cordoned;
        // A window per node drained (the control plane at every hop), each closed by its uncordon.
        const windows = run.hops === 1 ? 4 : run.workersEveryHop ? 8 : 5;
        assert.deepEqual([cordoned?.nodes, cordoned?.open], [windows, 0], `${run.id}: every drained node cordoned and uncordoned`);
        positive(cordoned?.medianSeconds, `${run.id} cordoned median`);
        assert.ok((cordoned?.maxSeconds ?? 0) >= (cordoned?.medianSeconds ?? Infinity), `${run.id}: max ≥ median`);
        assert.ok((run.worker?.cpuSeconds ?? -1) >= 0);
        // The worker's API requests from the audit log: evictions counted, and the pods of a drain seen gone by a watch.
        const api = run.apiRequests;
        positive(api?.evictions, `${run.id} evictions in the audit log`);
        assert.equal(api?.perEvictedPod, Math.round(((api?.total ?? 0) / (api?.evictions ?? 1)) * 10) / 10);
        positive(api?.byKind['watch pods'], `${run.id}: drains watch their node's pods`);
        positive(api?.peakInFlight, `${run.id}: requests in flight, from the audit log's receive and complete times`);
        assert.ok((api?.busiestRepeats?.length ?? 0) > 0, `${run.id}: the busiest repeated request`);
        // Temporal's cost from the histories: every run read (the parent's and each node workflow's), each started once.
        const t = run.temporal;
        assert.equal(t?.workflowRuns, (run.events?.parentRuns ?? 0) + (run.events?.nodeWorkflows ?? 0), `${run.id}: runs read`);
        assert.equal(t?.actions.byKind['workflow started'], t?.workflowRuns, `${run.id}: a start action per run`);
        assert.equal(
          t?.actions.byKind['child workflow start initiated'],
          run.events?.nodeWorkflows,
          `${run.id}: a child start per node workflow`,
        );
        assert.ok(
          (t?.activityTasks ?? 0) >= (t?.actions.byKind['activity scheduled'] ?? Infinity),
          `${run.id}: an attempt per activity at least`,
        );
        assert.ok((t?.workflowTasks ?? 0) > (t?.workflowRuns ?? Infinity), `${run.id}: more than one workflow task per run`);
        assert.equal(
          t?.actions.total,
          Object.values(t?.actions.byKind ?? {}).reduce((a, b) => a + b, 0),
        );
        positive(t?.statusQueries, `${run.id}: the bench's status queries`);
        positive(t?.serverActions?.total, `${run.id}: the dev server's action counter over the run`);
        // Every node workflow in some wave; a batch is one wave at most its size; the parent's parts are its span, within the wall.
        const p = run.phases;
        assert.equal(Math.round((p?.nodesMean ?? 0) * (p?.waves ?? 0)), expected, `${run.id}: waves hold every node workflow`);
        assert.equal(p?.nodesMax, run.batchSize, `${run.id}: the largest wave is a batch`);
        assert.equal(p?.overlapping, false, `${run.id}: batches in lockstep`);
        const parts = (p?.beforeSeconds ?? 0) + (p?.wavesTotalSeconds ?? 0) + (p?.betweenTotalSeconds ?? 0) + (p?.afterSeconds ?? 0);
        assert.ok(parts > 0 && parts <= run.wallSeconds + 0.01, `${run.id}: parent ${parts} s within the wall ${run.wallSeconds} s`);
      } else {
        assert.equal(run.events, undefined);
      }
    }
    const handshakes = (tool: string) => result.runs.filter((x) => x.tool === tool).map((x) => x.sshHandshakesPerNode ?? NaN);
    for (const n of [...handshakes('baseline'), ...handshakes('skewless')]) positive(n, 'SSH handshakes per node and hop');
    assert.ok(
      Math.max(...handshakes('skewless')) < Math.min(...handshakes('baseline')),
      `the worker reuses its connections, OpenSSH in the baseline does not: ${JSON.stringify(result.runs.map((x) => [x.id, x.sshHandshakesPerNode]))}`,
    );
    for (const run of result.runs) {
      positive(run.hostCommandsPerNode, `${run.id} host commands per node and hop`);
      assert.equal(run.hostCommands?.perNodeHop, run.hostCommandsPerNode, `${run.id}: the commands by kind are the commands counted`);
      const byKind = Object.values(run.hostCommands?.byKind ?? {}).reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(byKind - (run.hostCommandsPerNode ?? 0)) < 0.05 * Object.keys(run.hostCommands?.byKind ?? {}).length + 0.1);
    }
    assert.equal(result.comparisons.length, 2);
    const c = result.comparisons.find((x) => x.hops === 1);
    assert.equal(c?.sequentialRatio, Math.round(((c?.skewlessSequentialSeconds ?? 0) / (c?.baselineSeconds ?? 1)) * 1000) / 1000);
    assert.equal(c?.batchSize, 2);
    assert.deepEqual(result.drain?.measurements.map((m) => m.tool).sort(), ['kubectl', 'kubectl', 'skewless', 'skewless']);
    for (const m of result.drain?.measurements ?? []) {
      assert.equal(m.evicted, 29);
      positive(m.evictionsPerSecond, `${m.tool} evictions/s`);
    }
    assert.deepEqual(result.failures, []);
    const twoHops = result.comparisons.find((x) => x.hops === 2);
    assert.equal(
      twoHops?.workersOnceRatio,
      Math.round(((twoHops?.skewlessBatchedSeconds ?? 0) / (twoHops?.everyHopSeconds ?? 1)) * 1000) / 1000,
      'workers once ÷ every hop, from the same invocation',
    );
    assert.equal(result.goals.length, 11, "issue 9's goals and issue 22's");
    assert.equal(result.issue41Goals?.length, 3, "issue 41's: requests, loops, host commands");
    for (const g of result.issue41Goals ?? []) assert.ok(typeof g.met === 'boolean', `${g.goal}: judged on the skewless runs`);
    for (const g of result.goals) assert.ok(g.met === null || typeof g.met === 'boolean', g.goal);
    const window = result.goals.find((g) => /cordoned window/.test(g.goal));
    assert.ok(
      window?.met !== null && /\+\d/.test(window?.measured ?? ''),
      `the cordoned windows are judged even on 3 workers: ${window?.measured}`,
    );
    const md = readFileSync(join(out, 'bench.md'), 'utf8');
    assert.equal(r.stdout, md, 'the table is printed as written');
    for (const run of result.runs) assert.ok(md.includes(`| ${run.id} |`), run.id);
    assert.match(md, /\| goal \| measured \| met \|/);
  });
});
