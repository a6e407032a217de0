import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { busiestRepeats, countWorkerRequests, longestStreak, peakOverlap, repeatKey } from '../../bench/api-requests.js';
import { commandKind, hostCommands } from '../../bench/host-commands.js';
import type { AuditEvent } from '../../sim/cluster/audit-log.js';
import { WORKER_USER } from '../../sim/cluster/pki.js';

const at = (s: number) => new Date(Date.UTC(2026, 11, 5, 7, 0, 0) + s * 1000).toISOString();
const req = (o: Partial<AuditEvent> & { from: number; to: number }): AuditEvent => ({
  verb: 'get',
  user: WORKER_USER,
  resource: 'nodes',
  apiGroup: '',
  uri: '/api/v1/nodes/worker-1',
  code: 200,
  received: at(o.from),
  time: at(o.to),
  ...o,
});

describe("the worker's API requests (bench/api-requests.ts)", () => {
  it('finds the most intervals open at once, one closing as another opens counting once', () => {
    assert.equal(peakOverlap([]), 0);
    assert.equal(
      peakOverlap([
        { from: 0, to: 10 },
        { from: 10, to: 20 },
      ]),
      1,
    );
    assert.equal(
      peakOverlap([
        { from: 0, to: 10 },
        { from: 2, to: 5 },
        { from: 4, to: 12 },
        { from: 11, to: 13 },
      ]),
      3,
    );
  });

  it('keys a repeated request by verb and URI, whatever resourceVersion it resumes from', () => {
    const a = req({
      from: 0,
      to: 0,
      verb: 'list',
      uri: '/api/v1/pods?fieldSelector=spec.nodeName%3Dworker-1&resourceVersion=10&limit=500',
    });
    const b = req({ from: 0, to: 0, verb: 'list', uri: '/api/v1/pods?fieldSelector=spec.nodeName%3Dworker-1&resourceVersion=99' });
    assert.equal(repeatKey(a), repeatKey(b));
    assert.equal(repeatKey(a), 'list /api/v1/pods?fieldSelector=spec.nodeName=worker-1');
    const create = (name: string) => req({ from: 0, to: 0, verb: 'create', name, uri: '/apis/coordination.k8s.io/v1/namespaces/d/leases' });
    assert.notEqual(repeatKey(create('pdb-a')), repeatKey(create('pdb-b')), "a create's object is in its key");
  });

  it('rates the request repeated most often within 10 s: a poll every 250 ms is 4/s, a look every 2 s is 0.5/s', () => {
    const poll = Array.from({ length: 40 }, (_, i) => req({ from: i * 0.25, to: i * 0.25 + 0.01, verb: 'list', uri: '/api/v1/pods?x=1' }));
    const slow = Array.from({ length: 10 }, (_, i) => req({ from: i * 2, to: i * 2 + 0.01 }));
    assert.deepEqual(busiestRepeats([...slow, ...poll], 2), [
      { request: 'list /api/v1/pods?x=1', perSecond: 4 },
      { request: 'get /api/v1/nodes/worker-1', perSecond: 0.5 },
    ]);
  });

  it('finds the longest streak of one request repeated under a second apart: a poll is long, scattered reads are short', () => {
    const poll = Array.from({ length: 12 }, (_, i) =>
      req({ from: 5 + i * 0.25, to: 5 + i * 0.25 + 0.01, verb: 'list', uri: '/api/v1/pods?x=1' }),
    );
    const reads = [0, 0.5, 3, 3.2, 3.4, 9].map((t) => req({ from: t, to: t + 0.01 }));
    assert.deepEqual(longestStreak([...reads, ...poll]), {
      request: 'list /api/v1/pods?x=1',
      count: 12,
      meanGapSeconds: 0.25,
      spanSeconds: 2.75,
      from: at(5),
    });
    assert.deepEqual(longestStreak(reads)?.count, 3);
    assert.equal(longestStreak([req({ from: 0, to: 0 }), req({ from: 2, to: 2 })]), undefined);
    // A batch's ten nodes reading one ConfigMap at once: long by count, over in half a second; a slower poll lasts longer.
    const burst = Array.from({ length: 10 }, (_, i) =>
      req({ from: 20 + i * 0.05, to: 20 + i * 0.05 + 0.01, uri: '/api/v1/namespaces/k/configmaps/c' }),
    );
    const slowPoll = Array.from({ length: 6 }, (_, i) =>
      req({ from: 30 + i * 0.8, to: 30 + i * 0.8 + 0.01, uri: '/api/v1/nodes/worker-2' }),
    );
    assert.equal(longestStreak([...burst, ...slowPoll])?.request, 'get /api/v1/namespaces/k/configmaps/c');
    const lasting = longestStreak([...burst, ...slowPoll], 1000, 'span');
    assert.deepEqual([lasting?.request, lasting?.count, lasting?.spanSeconds], ['get /api/v1/nodes/worker-2', 6, 4]);
  });

  it("counts only the worker's requests: per evicted pod, per node·hop, beyond 2 per pod, in flight, watches apart", () => {
    const events = [
      req({ from: 0, to: 1, verb: 'create', resource: 'pods/eviction', code: 201, uri: '/api/v1/namespaces/d/pods/a/eviction' }),
      req({ from: 0.5, to: 1.5, verb: 'create', resource: 'pods/eviction', code: 429, uri: '/api/v1/namespaces/d/pods/b/eviction' }),
      req({ from: 0.2, to: 0.6 }),
      req({ from: 0.1, to: 30, verb: 'watch', resource: 'pods', uri: '/api/v1/pods?watch=true' }),
      req({ from: 0.3, to: 0.4, user: 'system:kube-scheduler' }),
    ];
    const r = countWorkerRequests(events, 2);
    assert.equal(r.total, 4);
    assert.equal(r.evictions, 1);
    assert.equal(r.perEvictedPod, 4);
    assert.equal(r.perNodeHop, 2);
    assert.equal(r.beyondTwoPerEvictionPerNodeHop, 1);
    assert.equal(r.peakInFlight, 3, 'the two evictions and the get overlap; the watch is apart');
    assert.equal(r.peakWatches, 1);
    assert.deepEqual(r.byKind, { 'create pods/eviction': 2, 'get nodes': 1, 'watch pods': 1 });
  });
});

describe('host commands by kind (bench/host-commands.ts)', () => {
  it('names a command by its program and subcommand, sudo and values aside, and a chain by its steps', () => {
    assert.equal(commandKind('sudo apt-get install -y kubeadm=1.33.7-1.1'), 'apt-get install');
    assert.equal(commandKind('sudo systemctl restart kubelet'), 'systemctl restart');
    assert.equal(commandKind('cat /etc/apt/sources.list.d/kubernetes.list'), 'cat');
    assert.equal(commandKind('sudo -n apt-cache -o Dir::Etc::SourceList=/tmp/p/sources.list policy kubeadm'), 'apt-cache policy');
    assert.equal(commandKind('sudo -n -u root kubelet --version'), 'kubelet');
    assert.equal(
      commandKind('sudo DEBIAN_FRONTEND=noninteractive apt-mark hold kubelet && sudo kubeadm upgrade node'),
      'apt-mark hold && kubeadm upgrade',
    );
  });

  it('counts per node·hop, by kind, most first', () => {
    const h = hostCommands(['sudo apt-get update', 'sudo apt-get update', 'sudo kubeadm upgrade node', 'dpkg-query -W kubelet'], 2);
    assert.equal(h.perNodeHop, 2);
    assert.deepEqual(Object.entries(h.byKind), [
      ['apt-get update', 1],
      ['dpkg-query', 0.5],
      ['kubeadm upgrade', 0.5],
    ]);
  });
});
