import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseClusterConfig } from '../../activities/cluster-config.js';

const BASE = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';
const parse = (extra: string) => parseClusterConfig(`${BASE}${extra}`, 'lab.yaml');
const refuse = (extra: string, message: RegExp) =>
  assert.throws(
    () => parse(extra),
    (err: Error) => message.test(err.message) && !err.message.includes('\n'),
  );

describe('cluster configuration: auditLog (the clients of removed APIs, issue 21)', () => {
  it('absent: not read; present: the path on the control-plane nodes', () => {
    assert.equal(parse('').auditLog, undefined);
    assert.deepEqual(parse('auditLog: {path: /var/log/kubernetes/audit/audit.log}\n').auditLog, {
      path: '/var/log/kubernetes/audit/audit.log',
    });
  });
  it('refuses a relative path, a way up, shell syntax, an unknown key, in one line', () => {
    const notAPath = /^lab\.yaml: auditLog\.path must be an absolute path on the control-plane nodes/;
    refuse('auditLog: {path: audit.log}\n', notAPath);
    refuse('auditLog: {path: /var/log/../../etc/shadow}\n', notAPath);
    refuse('auditLog: {path: "/var/log/a;reboot"}\n', notAPath);
    refuse('auditLog: {path: "/var/log/a b"}\n', notAPath);
    refuse('auditLog: {path: /a, pth: /b}\n', /unknown key auditLog\.pth \(known: path\)/);
    refuse('auditLog: {}\n', /auditLog\.path/);
  });
});
