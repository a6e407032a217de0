// The single workflowsPath of every worker: re-exports workflow functions only.
export { toolchainSmokeWorkflow } from './toolchain-smoke-workflow.js';
export { nodeUpgradeWorkflow } from './node-upgrade-workflow.js';
export { clusterUpgradeWorkflow } from './cluster-upgrade-workflow.js';
export { planClusterWorkflow } from './plan-cluster-workflow.js';
export { scheduledUpgradeWorkflow } from './scheduled-upgrade-workflow.js';
export { maintainWorkflow } from './maintain-workflow.js';
export { fleetUpgradeWorkflow } from './fleet-upgrade-workflow.js';
export { restoreWorkflow } from './restore-workflow.js';
export { rehearseReadWorkflow } from './rehearse-workflow.js';
export { bluegreenWorkflow } from './bluegreen-workflow.js';
export { notifyWorkflow } from './notify-workflow.js';
