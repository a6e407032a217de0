import type { CoreV1Api } from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createDrainActivities, type DrainResult } from '../../activities/drain.js';
import { createClusterResolver } from '../../activities/host-address.js';

/**
 * One worker process's drain, for tests that need two real processes (each with its own PdbGate, as
 * two `skewless worker`s have): `node drain-process.js <clustersDir> <cluster> <node> <holdMs>` runs
 * drainNode with the worker's code and identity and prints, as its last line, the drain's result and
 * every eviction request it sent: when sent and when answered (by this machine's clock, which both
 * processes share), each answer held `holdMs` after the server gave it (a slow way back).
 */

export interface EvictionRecord {
  pod: string;
  sentAt: number;
  /** When the server's answer came, before the hold. */
  serverAnsweredAt: number;
  /** When the drain got the answer, after the hold. */
  answeredAt: number;
  /** 201, or the HTTP status of the refusal. */
  code: number;
}

export interface DrainProcessOutput {
  result: DrainResult;
  /** When drainNode started and returned. */
  startedAt: number;
  endedAt: number;
  evictions: EvictionRecord[];
  pid: number;
}

async function main(): Promise<void> {
  const [clustersDir, cluster, node, hold] = process.argv.slice(2);
  if (!clustersDir || !cluster || !node) throw new Error('usage: drain-process <clustersDir> <cluster> <node> [holdMs]');
  const holdMs = Number(hold ?? 0);
  const evictions: EvictionRecord[] = [];
  const resolve = createClusterResolver(clustersDir);
  const recording = (core: CoreV1Api): CoreV1Api =>
    new Proxy(core, {
      get(target, prop, receiver) {
        if (prop !== 'createNamespacedPodEviction') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<CoreV1Api['createNamespacedPodEviction']>) => {
          const record: EvictionRecord = { pod: args[0].name, sentAt: Date.now(), serverAnsweredAt: 0, answeredAt: 0, code: 201 };
          evictions.push(record);
          try {
            return await target.createNamespacedPodEviction(...args);
          } catch (err) {
            record.code = typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 0;
            throw err;
          } finally {
            record.serverAnsweredAt = Date.now();
            await new Promise((r) => setTimeout(r, holdMs));
            record.answeredAt = Date.now();
          }
        };
      },
    });
  const drains = createDrainActivities({
    clusters: (name) => {
      const access = resolve(name);
      return { ...access, kube: { ...access.kube, core: recording(access.kube.core) } };
    },
  });
  const startedAt = Date.now();
  const result = (await new MockActivityEnvironment({ heartbeatTimeoutMs: 120_000 }).run(drains.drainNode, {
    cluster,
    node,
    timeoutSeconds: 90,
  })) as DrainResult;
  process.stdout.write(
    `${JSON.stringify({ result, startedAt, endedAt: Date.now(), evictions, pid: process.pid } satisfies DrainProcessOutput)}\n`,
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error)?.message ?? String(err)}\n`);
    process.exit(1);
  },
);
