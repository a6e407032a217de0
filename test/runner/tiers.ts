/**
 * The suite's tiers: every test file is in exactly one (test/runner/tiers.test.ts checks it), and
 * `npm test` runs them all, in this order, then FINALLY.
 *
 * - unit: the pure rules, parsers, CLI input checks, saved histories, lint: no server, no Go binary,
 *   no Chromium, no simulated cluster (tiers.test.ts checks their imports).
 * - integration: activities against the simulated hosts and cluster; workflows (mocked activities too)
 *   and the CLI on a real dev server.
 * - e2e: the real CLI, worker, dev server and simulated cluster together; the fault harness, the UI,
 *   the demo, the benchmark's small version.
 *
 * `temporal`: the tier's files share one dev server (a namespace each) started by the runner.
 * `concurrency`: how many files run side by side on the 2 cores, set by the cores a tier uses (the
 * runner prints them). Measured in whole runs: at three files at a time the integration tier used
 * 1.04 cores, at four 1.34 (354 → 330 s); the e2e tier at four 1.19-1.25 (its files mostly wait on
 * simulated latencies, reboots and maintenance windows: 714-802 s at three, 686 s at four); the unit
 * tier is CPU-bound at two (1.4 cores).
 */
export const TIER_NAMES = ['unit', 'integration', 'e2e'] as const;
export type TierName = (typeof TIER_NAMES)[number];

export interface Tier {
  temporal: boolean;
  concurrency: number;
  files: readonly string[];
}

export const TIERS: Record<TierName, Tier> = {
  unit: {
    temporal: false,
    concurrency: 2,
    files: [
      // the slowest first (measured), so that no long file ends the tier alone
      'test/client/cli-contract.test.ts',
      'test/client/fleet-cli.test.ts',
      'test/activities/drain-outage.test.ts',
      'test/security/command-fuzz.test.ts',
      'test/lint.test.ts',
      'test/lint-boundaries.test.ts',
      'test/replay/replay.test.ts',
      'test/demo/operator.test.ts',
      // the rest
      'test/activities/etcd-manifest.test.ts',
      'test/activities/host-transient.test.ts',
      'test/activities/maintenance-config.test.ts',
      'test/activities/audit-log-config.test.ts',
      'test/activities/alerts-config.test.ts',
      'test/activities/parsers.test.ts',
      'test/activities/readiness-parsers.test.ts',
      'test/activities/kubernetes-repository-parser.test.ts',
      'test/sim/free-port.test.ts',
      'test/sim/description.test.ts',
      'test/activities/pool-config.test.ts',
      'test/bench/lower-bound.test.ts',
      'test/bench/node-breakdown.test.ts',
      'test/client/audit-trail.test.ts',
      'test/contracts/workflow-ids.test.ts',
      'test/client/connection-options.test.ts',
      'test/client/plan-target-expression.test.ts',
      'test/client/readiness-render.test.ts',
      'test/client/start-and-follow.test.ts',
      'test/client/rehearse-description.test.ts',
      'test/client/rehearse-report.test.ts',
      'test/client/timeline.test.ts',
      'test/deploy/compose.test.ts',
      'test/deploy/stack-versions.test.ts',
      'test/stack/postgres-access.test.ts',
      'test/deploy/docs-commands.test.ts',
      'test/deploy/workflow-bundle.test.ts',
      'test/metrics/telemetry-config.test.ts',
      'test/rules/drain-filters.test.ts',
      'test/rules/fleet-spec.test.ts',
      'test/rules/readiness-finding.test.ts',
      'test/rules/removed-apis.test.ts',
      'test/rules/hop-prerequisites.test.ts',
      'test/rules/drain-predictions.test.ts',
      'test/rules/operator-signals.test.ts',
      'test/rules/hop-plan.test.ts',
      'test/rules/maintenance-window.test.ts',
      'test/rules/pdb-audit.test.ts',
      'test/rules/rollout-plan.test.ts',
      'test/rules/skew-policy.test.ts',
      'test/rules/target-expression.test.ts',
      'test/rules/upgrade-plan.test.ts',
      'test/rules/finish-left-behind.test.ts',
      'test/rules/policy.test.ts',
      'test/rules/version.test.ts',
      'test/runner/tiers.test.ts',
      'test/helpers/start-together.test.ts',
      'test/security/insecure-transport-lint.test.ts',
      'test/sim/hosts/command-line.test.ts',
      'test/windows/cluster-config.test.ts',
      'test/workflows/host-retry-budget.test.ts',
    ],
  },
  integration: {
    temporal: true,
    concurrency: 4,
    files: [
      // the slowest first (measured), so that no long file ends the tier alone
      'test/workflows/fleet-upgrade.test.ts',
      'test/client/worker-cli.test.ts',
      'test/workflows/maintain.test.ts',
      'test/windows/carried-windows.test.ts',
      'test/workflows/step-blocks.test.ts',
      'test/client/output-json.test.ts',
      'test/workflows/node-upgrade.test.ts',
      'test/workflows/cluster-upgrade-runs.test.ts',
      'test/activities/pool-provisioning.test.ts',
      'test/activities/etcd-restore.test.ts',
      'test/client/maintain-cli.test.ts',
      'test/client/bluegreen-cli.test.ts',
      'test/activities/host-activities.test.ts',
      'test/activities/package-repository.test.ts',
      'test/activities/package-repository-dnf.test.ts',
      // the rest
      'test/activities/drain-pdb-gate.test.ts',
      'test/activities/drain-pdb-budget.test.ts',
      'test/activities/drain.test.ts',
      'test/activities/etcd-snapshot.test.ts',
      'test/activities/health.test.ts',
      'test/activities/alerts.test.ts',
      'test/activities/probes.test.ts',
      'test/activities/host-overlap.test.ts',
      'test/activities/inventory.test.ts',
      'test/activities/maintenance.test.ts',
      'test/activities/node-activities.test.ts',
      'test/activities/package-faults.test.ts',
      'test/activities/pool-provisioning-worker.test.ts',
      'test/activities/rehearsal.test.ts',
      'test/activities/readiness-removed-api.test.ts',
      'test/activities/readiness-prerequisites.test.ts',
      'test/activities/readiness-drain-predictions.test.ts',
      'test/activities/readiness-real-kubeadm.test.ts',
      'test/activities/retry-profiles.test.ts',
      'test/activities/ssh-shell.test.ts',
      'test/client/dev-server.test.ts',
      'test/client/tls-connection.test.ts',
      'test/client/upgrade-cli.test.ts',
      'test/metrics/tracing.test.ts',
      'test/schedules/schedule-cli.test.ts',
      'test/schedules/scheduled-run.test.ts',
      'test/security/payload-codec.test.ts',
      'test/security/secret-scan.test.ts',
      'test/sim/availability-sampler.test.ts',
      'test/sim/cluster.test.ts',
      'test/sim/hosts/apt.test.ts',
      'test/sim/hosts/apt-repository.test.ts',
      'test/sim/hosts/dnf-repository.test.ts',
      'test/sim/tcp-balancer.test.ts',
      'test/stack/stack-cli.test.ts',
      'test/sim/per-node-control-plane.test.ts',
      'test/sim/hosts/etcd.test.ts',
      'test/sim/hosts/faults.test.ts',
      'test/sim/hosts/hangup.test.ts',
      'test/sim/hosts/host-keys.test.ts',
      'test/sim/hosts/kubeadm.test.ts',
      'test/sim/hosts/kubelet.test.ts',
      'test/sim/hosts/persistence.test.ts',
      'test/sim/hosts/reboot-during.test.ts',
      'test/sim/hosts/scale.test.ts',
      'test/sim/hosts/sftp-and-tools.test.ts',
      'test/sim/rbac.test.ts',
      'test/sim/sim-cli.test.ts',
      'test/sim/version-recorder.test.ts',
      'test/workflows/bluegreen-workflow.test.ts',
      'test/workflows/cluster-upgrade.test.ts',
      'test/workflows/restore-workflow.test.ts',
      'test/workflows/toolchain-smoke.test.ts',
    ],
  },
  e2e: {
    temporal: true,
    concurrency: 4,
    files: [
      // the slowest first (measured), so that no long file ends the tier alone
      'test/demo/demo.test.ts',
      'test/faults/worker-kill.test.ts',
      'test/e2e/bad-input.test.ts',
      'test/e2e/upgrade.test.ts',
      'test/e2e/stack-failover.test.ts',
      'test/windows/maintenance-windows.test.ts',
      'test/bench/bench-result.test.ts',
      'test/e2e/rehearse.test.ts',
      'test/e2e/readiness-plan.test.ts',
      'test/e2e/host-faults.test.ts',
      'test/e2e/finish-left-behind.test.ts',
      'test/e2e/restore.test.ts',
      'test/e2e/operator.test.ts',
      'test/ui/audit-trail-ui.test.ts',
      // the rest
      'test/client/live-cluster-cli.test.ts',
      'test/client/worker-shutdown.test.ts',
      'test/e2e/bluegreen.test.ts',
      'test/e2e/fleet.test.ts',
      'test/e2e/laptop.test.ts',
      'test/e2e/maintain.test.ts',
      'test/e2e/operator-truth.test.ts',
      'test/e2e/skip-abort.test.ts',
      'test/e2e/transient-faults.test.ts',
      'test/e2e/upgrade-dnf.test.ts',
      'test/metrics/metrics.test.ts',
      'test/schedules/scheduled-upgrade.test.ts',
    ],
  },
};

/** Runs after every tier, alone: it scans every workflow history the run's servers archived. */
export const FINALLY = ['test/zz-secret-scan.test.ts'] as const;
