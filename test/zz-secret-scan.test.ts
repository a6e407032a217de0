import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { ARCHIVE_ENV, archiveDir, readArchivedHistories, readWorldSecrets } from './helpers/history-archive.js';
import { describeFinding, scanHistory, type Finding } from './helpers/secret-scan.js';

/**
 * Runs last (the runner runs it after every tier: test/runner/tiers.ts FINALLY): scans every event of every workflow history
 * the suite produced, archived by each Temporal server before it stopped (SKEWLESS_HISTORY_ARCHIVE,
 * set by `npm test`), for private-key material, kubeconfig secrets and the test worlds' actual keys.
 * A run that archived too little fails too, so the scan cannot pass by scanning nothing.
 */

// What a full run must at least have archived. Measured file by file (2026-11-30): about 160 histories
// from about 19 servers (e2e/upgrade 23, cluster-upgrade-runs 32, cluster-upgrade 19, skip-abort 17,
// operator 13, live-cluster-cli 10, …) and a dozen simulated clusters; the floor is well below that, so
// only a run that lost whole test files' histories fails it.
const MIN_HISTORIES = 100;
const MIN_SERVERS = 12;
const MIN_WORLDS = 6;
const MUST_HAVE_TYPES = ['clusterUpgradeWorkflow', 'nodeUpgradeWorkflow', 'planClusterWorkflow'];

it('no workflow history of this test run holds a secret', { timeout: 600_000 }, (t) => {
  const dir = archiveDir();
  if (!dir) {
    t.skip(`${ARCHIVE_ENV} is not set: run through \`npm test\`, which archives every history of the run`);
    return;
  }
  const known = readWorldSecrets(dir);
  const worlds = new Set([...known.values()].map((source) => source.split(': ')[0]));
  const servers = (() => {
    try {
      return readdirSync(join(dir, 'servers')).length;
    } catch {
      return 0;
    }
  })();

  const findings: Finding[] = [];
  const totals = { histories: 0, events: 0, payloads: 0, encrypted: 0, strings: 0 };
  const types = new Map<string, number>();
  for (const h of readArchivedHistories(dir)) {
    const { findings: found, stats } = scanHistory(h, known);
    findings.push(...found.map((f) => ({ ...f, workflowId: `${h.label}/${f.workflowId}` })));
    totals.histories++;
    totals.events += stats.events;
    totals.payloads += stats.payloads;
    totals.encrypted += stats.encrypted;
    totals.strings += stats.strings;
    types.set(h.workflowType, (types.get(h.workflowType) ?? 0) + 1);
  }
  t.diagnostic(
    `scanned ${totals.histories} histories from ${servers} servers: ${totals.events} events, ${totals.payloads} payloads ` +
      `(${totals.encrypted} encrypted, unreadable here), ${totals.strings} strings; ${known.size} secret fingerprints of ${worlds.size} test worlds`,
  );
  t.diagnostic(`workflow types: ${[...types].map(([type, n]) => `${type} ${n}`).join(', ')}`);

  assert.deepEqual(findings.slice(0, 50).map(describeFinding), [], `${findings.length} secret(s) in history (archive: ${dir})`);
  // Not vacuous: enough histories, servers and worlds, and real upgrades among them.
  assert.ok(
    totals.histories >= MIN_HISTORIES,
    `only ${totals.histories} histories archived (at least ${MIN_HISTORIES} expected from a full run) in ${dir}`,
  );
  assert.ok(servers >= MIN_SERVERS, `only ${servers} Temporal servers archived their histories (at least ${MIN_SERVERS} expected)`);
  assert.ok(worlds.size >= MIN_WORLDS, `secrets of only ${worlds.size} simulated clusters recorded (at least ${MIN_WORLDS} expected)`);
  for (const type of MUST_HAVE_TYPES) assert.ok(types.has(type), `no ${type} history archived`);
});
