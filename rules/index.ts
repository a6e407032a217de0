/**
 * The pure rules of skewless: no I/O, no clock, no randomness. Workflows, activities and the CLI
 * all import them from here, so the policy a workflow enforces is the one the CLI prints.
 */
export * from './rule-error.js';
export * from './upgrade-command.js';
export * from './version.js';
export * from './skew-policy.js';
export * from './hop-plan.js';
export * from './target-expression.js';
export * from './natural-order.js';
export * from './open-children.js';
export * from './rollout-plan.js';
export * from './batch-by.js';
export * from './batch-capacity.js';
export * from './cluster-inventory.js';
export * from './upgrade-runbook.js';
export * from './package-commands.js';
export * from './runbook-check.js';
export * from './upgrade-plan.js';
export * from './drain-filters.js';
export * from './drain-rules.js';
export * from './label-selector.js';
export * from './pdb-audit.js';
export * from './maintenance-window.js';
export * from './fleet-spec.js';
export * from './hop-work.js';
export * from './input-shapes.js';
export * from './policy.js';
export * from './quarantine-skew.js';
export * from './worker-moves.js';
export * from './etcd-patch.js';
export * from './emulation.js';
export * from './hop-reversibility.js';
export * from './alpha-feature-gates.js';
export * from './notify-config.js';
export * from './notification-schema.js';
export * from './hooks-config.js';
export * from './exclusions.js';
export * from './node-health.js';
export * from './kube-proxy-addon.js';
export * from './run-progress.js';
