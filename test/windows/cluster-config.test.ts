import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApplicationFailure } from '@temporalio/activity';
import { parseClusterConfig } from '../../activities/cluster-config.js';

describe('maintenanceWindows in the cluster configuration', () => {
  const base = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /id, knownHostsPath: /kh}\nsnapshots: {dir: /s}\n';

  it('reads the windows, times unquoted or quoted; none written is none', () => {
    const config = parseClusterConfig(
      `${base}maintenanceWindows:
  - days: [Sat, sunday]
    start: 02:00
    end: "06:30:15"
    timeZone: Europe/Berlin
  - {days: [Wed], start: "22:00", end: "01:00", timeZone: UTC}
`,
      'lab.yaml',
    );
    assert.deepEqual(config.maintenanceWindows, [
      { days: ['Sat', 'Sun'], start: '02:00', end: '06:30:15', timeZone: 'Europe/Berlin' },
      { days: ['Wed'], start: '22:00', end: '01:00', timeZone: 'UTC' },
    ]);
    assert.equal(parseClusterConfig(base, 'lab.yaml').maintenanceWindows, undefined);
    assert.equal(
      parseClusterConfig(`${base}maintenanceWindows: []\n`, 'lab.yaml').maintenanceWindows,
      undefined,
      'an empty list is no windows',
    );
  });

  it('refuses a bad window with one line naming the file and the window; unknown keys stay refused', () => {
    const refuse = (yaml: string, message: RegExp) =>
      assert.throws(
        () => parseClusterConfig(`${base}${yaml}`, 'lab.yaml'),
        (e: ApplicationFailure) => {
          assert.equal(e.type, 'ClusterConfigInvalid');
          assert.equal(e.nonRetryable, true);
          assert.match(e.message, message);
          assert.ok(!e.message.includes('\n'), e.message);
          return true;
        },
      );
    refuse(
      'maintenanceWindows:\n  - {days: [Caturday], start: "02:00", end: "04:00", timeZone: UTC}\n',
      /^lab\.yaml: maintenanceWindows\[0\]: unknown day "Caturday" \(Mon, Tue, Wed, Thu, Fri, Sat, Sun\)$/,
    );
    refuse(
      'maintenanceWindows:\n  - {days: [Sat], start: "2am", end: "04:00", timeZone: UTC}\n',
      /^lab\.yaml: maintenanceWindows\[0\] start: bad time "2am"/,
    );
    refuse(
      'maintenanceWindows:\n  - {days: [Sat], start: "02:00", end: "04:00", timeZone: Mars/Olympus}\n',
      /^lab\.yaml: maintenanceWindows\[0\]: unknown time zone "Mars\/Olympus"/,
    );
    refuse(
      'maintenanceWindows:\n  - {days: [], start: "02:00", end: "04:00", timeZone: UTC}\n',
      /^lab\.yaml: maintenanceWindows\[0\]: empty window: days is an empty list$/,
    );
    refuse(
      'maintenanceWindows:\n  - {days: [Sat], start: "02:00", end: "02:00", timeZone: UTC}\n',
      /empty window: start and end are both 02:00$/,
    );
    refuse('maintenanceWindows: {days: [Sat]}\n', /^lab\.yaml: maintenanceWindows: must be a list of windows$/);
    refuse(
      'maintenanceWindow:\n  - {days: [Sat], start: "02:00", end: "04:00", timeZone: UTC}\n',
      /^lab\.yaml: unknown key maintenanceWindow \(known: .*\bmaintenanceWindows\b.*\)$/,
    );
  });
});
