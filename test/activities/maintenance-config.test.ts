import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { msToNumber } from '@temporalio/common/lib/time.js';
import { MAINTENANCE_TIMEOUT, parseClusterConfig } from '../../activities/cluster-config.js';
import { PROFILE_OF } from '../../workflows/activity-options.js';

const BASE = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';
const parse = (extra: string) => parseClusterConfig(`${BASE}${extra}`, 'lab.yaml');
const refuse = (extra: string, message: RegExp) =>
  assert.throws(
    () => parse(extra),
    (err: Error) => message.test(err.message) && !err.message.includes('\n'),
  );

describe('cluster configuration: maintenance (skewless maintain)', () => {
  it('absent: no maintenance; present: the command as words, the timeout and the reboot form', () => {
    assert.equal(parse('').maintenance, undefined);
    assert.deepEqual(parse('maintenance: {command: [apt-get, -y, dist-upgrade]}\n').maintenance, {
      command: ['apt-get', '-y', 'dist-upgrade'],
      timeoutSeconds: MAINTENANCE_TIMEOUT.default,
    });
    assert.deepEqual(
      parse(
        'maintenance: {command: [sh, -c, "apt-get update; apt-get -y upgrade"], timeoutSeconds: 600, rebootCommand: [systemctl, reboot]}\n',
      ).maintenance,
      { command: ['sh', '-c', 'apt-get update; apt-get -y upgrade'], timeoutSeconds: 600, rebootCommand: ['systemctl', 'reboot'] },
    );
  });
  it('refuses a command that is not a list of words, line breaks, unknown keys, a reboot form not allowed, a timeout out of range', () => {
    refuse(
      'maintenance: {command: "apt-get -y dist-upgrade"}\n',
      /^lab\.yaml: maintenance\.command must be a list of 1 to 64 non-empty words/,
    );
    refuse('maintenance: {command: []}\n', /maintenance\.command must be a list/);
    refuse('maintenance: {command: [apt-get, ""]}\n', /maintenance\.command must be a list/);
    refuse('maintenance: {command: ["apt-get\\nreboot"]}\n', /without line breaks/);
    refuse(
      'maintenance: {command: [uptime], comand: [x]}\n',
      /unknown key maintenance\.comand \(known: command, timeoutSeconds, rebootCommand\)/,
    );
    refuse('maintenance: {command: [uptime], rebootCommand: [rm, -rf, /]}\n', /maintenance\.rebootCommand must be one of \[reboot\]/);
    refuse(
      `maintenance: {command: [uptime], timeoutSeconds: ${MAINTENANCE_TIMEOUT.max + 1}}\n`,
      /maintenance\.timeoutSeconds must be an integer from 1 to 3300/,
    );
    refuse('maintenance: [uptime]\n', /maintenance must be a mapping/);
  });
  it('the longest command leaves its activity time to report the timeout itself', () => {
    assert.ok(MAINTENANCE_TIMEOUT.max * 1000 < msToNumber(PROFILE_OF.runMaintenanceCommand.startToCloseTimeout ?? 0));
  });
});
