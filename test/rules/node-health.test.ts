import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodeHealthProblems, type NodeHealthFacts } from '../../rules/index.js';

const policy = { daemonSets: true, conditions: ['KernelDeadlock', 'ReadonlyFilesystem'] };
const facts = (over: Partial<NodeHealthFacts>): NodeHealthFacts => ({ conditions: [], daemonSetPods: [], ...over });
const pod = (namespace: string, name: string, daemonSet: string, ready: boolean, phase = 'Running') => ({
  namespace,
  name,
  daemonSet,
  ready,
  phase,
});

describe("a node's health beyond Ready", () => {
  it('is healthy with every DaemonSet pod Ready and no listed condition True', () => {
    const f = facts({
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'KernelDeadlock', status: 'False', reason: 'KernelHasNoDeadlock' },
        { type: 'FrequentKubeletRestart', status: 'True' }, // not listed: not checked
      ],
      daemonSetPods: [pod('kube-system', 'kube-proxy-a', 'kube-proxy', true)],
    });
    assert.deepEqual(nodeHealthProblems(f, policy), []);
  });

  it('names each condition True and each DaemonSet pod not Ready, kube-system first', () => {
    const f = facts({
      conditions: [
        { type: 'ReadonlyFilesystem', status: 'True', reason: 'FilesystemIsReadOnly', message: 'Remounting filesystem read-only' },
      ],
      daemonSetPods: [pod('monitoring', 'agent-b', 'agent', false), pod('kube-system', 'cilium-c', 'cilium', false, 'Pending')],
    });
    assert.deepEqual(nodeHealthProblems(f, policy), [
      'condition ReadonlyFilesystem is True (FilesystemIsReadOnly: Remounting filesystem read-only)',
      "DaemonSet kube-system/cilium's pod cilium-c is not Ready (Pending)",
      "DaemonSet monitoring/agent's pod agent-b is not Ready (Running)",
    ]);
  });

  it('checks no DaemonSet pod when daemonSets is false, and no condition when the list is empty', () => {
    const f = facts({ conditions: [{ type: 'KernelDeadlock', status: 'True' }], daemonSetPods: [pod('kube-system', 'x', 'x', false)] });
    assert.deepEqual(nodeHealthProblems(f, { daemonSets: false, conditions: [] }), []);
  });
});
