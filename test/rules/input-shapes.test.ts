import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  boolean,
  dnsLabel,
  FieldError,
  FieldPath,
  integer,
  isDnsLabel,
  isNamespacedName,
  isNodeName,
  listOf,
  mapping,
  nodeName,
  oneOf,
  withDefault,
} from '../../rules/input-shapes.js';

describe('input shapes: the names every layer checks', () => {
  const cases: [string, (v: unknown) => boolean, unknown, boolean][] = [
    ['a DNS label', isDnsLabel, 'lab-1', true],
    ['a label of 63', isDnsLabel, 'a'.repeat(63), true],
    ['a label of 64', isDnsLabel, 'a'.repeat(64), false],
    ['a label with a dot', isDnsLabel, 'lab.eu', false],
    ['a label with a capital', isDnsLabel, 'Lab', false],
    ['a label ending in -', isDnsLabel, 'lab-', false],
    ['a label that is not text', isDnsLabel, 7, false],
    ['a node name with dots', isNodeName, 'worker-1.eu.example', true],
    ['a node name of 253', isNodeName, `${'a'.repeat(63)}.`.repeat(3) + 'a'.repeat(61), true],
    ['a node name of 254', isNodeName, 'a'.repeat(254), false],
    // the looser patterns some activities had took these
    ['a node name with two dots in a row', isNodeName, 'a..b', false],
    ['a node name with a label ending in -', isNodeName, 'a-.b', false],
    ['a node name with a shell word', isNodeName, 'worker-1;reboot', false],
    ['namespace/name', isNamespacedName, 'kube-system/coredns.v1', true],
    ['a name alone', isNamespacedName, 'coredns', false],
    ['two slashes', isNamespacedName, 'a/b/c', false],
    ['a namespace with a dot', isNamespacedName, 'kube.system/coredns', false],
  ];
  for (const [name, is, value, expected] of cases) it(name, () => assert.equal(is(value), expected));
});

describe('input shapes: refusals name the key (field paths)', () => {
  const root = FieldPath.root('stages').index(1).child('clusters').index(0);
  const refusal = (fn: () => unknown, field: string, detail: RegExp) =>
    assert.throws(fn, (err: unknown) => {
      assert.ok(err instanceof FieldError);
      assert.equal(err.field, field);
      assert.match(err.detail, detail);
      assert.equal(err.message, `${field} ${err.detail}`);
      return true;
    });

  it('builds the path of a nested key', () => assert.equal(root.child('to').text, 'stages[1].clusters[0].to'));

  it('bounds integers, with why the maximum', () => {
    const port = integer({ min: 1, max: 65535 });
    assert.equal(port(22, root), 22);
    refusal(() => port(0, FieldPath.root('ssh.port')), 'ssh.port', /^must be an integer from 1 to 65535, got 0$/);
    refusal(() => port('22', FieldPath.root('ssh.port')), 'ssh.port', /^must be an integer from 1 to 65535, got "22"$/);
    refusal(() => integer({ min: 0 })(1.5, FieldPath.root('soak')), 'soak', /^must be an integer ≥ 0, got 1\.5$/);
    refusal(
      () => integer({ min: 1, max: 6900, why: 'the drain activity ends at 2 hours' })(9000, FieldPath.root('d')),
      'd',
      /\(the drain activity ends at 2 hours\), got 9000$/,
    );
  });

  it('reads names, words and lists, an item by its index', () => {
    refusal(() => dnsLabel('prod/eu', FieldPath.root('name')), 'name', /^must be a DNS label .*got "prod\/eu"$/);
    refusal(() => listOf(nodeName, 'node names')(['w-1', 'W_2'], FieldPath.root('canaryNodes')), 'canaryNodes[1]', /node name/);
    refusal(() => listOf(nodeName, 'node names')('w-1', FieldPath.root('canaryNodes')), 'canaryNodes', /^must be a list of node names$/);
    refusal(() => oneOf('wait', 'quarantine')('stop', FieldPath.root('o')), 'o', /^must be "wait" or "quarantine", got "stop"$/);
    refusal(() => boolean('yes', FieldPath.root('sudo')), 'sudo', /^must be true or false, got "yes"$/);
  });

  it('reads a mapping described by its keys: defaults filled in, an unknown key refused', () => {
    const ssh = mapping({ port: withDefault(integer({ min: 1, max: 65535 }), 22), sudo: withDefault(boolean, true) });
    assert.deepEqual(ssh({ port: 2222 }, FieldPath.root('ssh')), { port: 2222, sudo: true });
    assert.deepEqual(ssh(undefined, FieldPath.root('ssh')), { port: 22, sudo: true });
    refusal(() => ssh({ prot: 22 }, FieldPath.root('ssh')), 'ssh', /^unknown key "prot" \(expected port, sudo\)$/);
    refusal(() => ssh({ port: 0 }, FieldPath.root('ssh')), 'ssh.port', /from 1 to 65535/);
    refusal(() => ssh([22], FieldPath.root('ssh')), 'ssh', /^must be a mapping$/);
  });
});
