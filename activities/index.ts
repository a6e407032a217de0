import { ApplicationFailure } from '@temporalio/activity';
import { createAlertActivities } from './alerts.js';
import type { ClusterResolver } from './cluster-access.js';
import { describeWorker } from './describe-worker.js';
import { createBatchCapacityActivities } from './batch-capacity.js';
import { createDrainActivities } from './drain.js';
import { createWorkloadSpreadActivities } from './workload-spread.js';
import { ErrorType } from './errors.js';
import { createRestoreActivities } from './etcd-restore.js';
import { createEtcdPatchActivities } from './etcd-patch.js';
import { createEtcdActivities } from './etcd-snapshot.js';
import { findRunningRollout, findRunningUpgrade } from './find-running-rollout.js';
import { createHealthActivities } from './health.js';
import { createHostActivities } from './host-activities.js';
import { createInventoryActivities } from './inventory.js';
import { createMaintenanceActivities } from './maintenance.js';
import { createNodeActivities } from './node-activities.js';
import { createNotifyActivities } from './notify-delivery.js';
import { createChangeHookActivities } from './change-hooks.js';
import { createControlPlaneTrialActivities } from './control-plane-trial.js';
import { createQuarantineActivities } from './quarantine-node.js';
import { createRehearsalActivities } from './rehearsal.js';
import { createPoolActivities } from './pool-provisioning.js';
import { createReadinessActivities } from './readiness/index.js';
import { createDrainPredictionActivities } from './readiness/drain-predictions.js';
import { createHopPrerequisiteActivities } from './readiness/hop-prerequisites.js';

/**
 * What activities need from the outside world, injected by the worker (real clients) or by tests.
 * `clusters` turns the cluster name a workflow passes into the worker's own access to it.
 */
export interface ActivityDeps {
  clusters?: ClusterResolver;
}

const noClusters: ClusterResolver = (cluster) => {
  throw ApplicationFailure.create({
    type: ErrorType.ClusterConfigInvalid,
    message: `this worker has no cluster configuration directory (SKEWLESS_CLUSTERS_DIR), so it cannot reach cluster ${cluster}`,
    nonRetryable: true,
  });
};

/** Builds every activity implementation; workflows proxy `Activities` with a profile from activity-options.ts. */
export function createActivities(deps: ActivityDeps = {}) {
  const clusters = deps.clusters ?? noClusters;
  return {
    describeWorker,
    findRunningUpgrade,
    findRunningRollout,
    ...createInventoryActivities({ clusters }),
    ...createHealthActivities({ clusters }),
    ...createAlertActivities({ clusters }),
    ...createNodeActivities({ clusters }),
    ...createQuarantineActivities({ clusters }),
    ...createDrainActivities({ clusters }),
    ...createBatchCapacityActivities({ clusters }),
    ...createWorkloadSpreadActivities({ clusters }),
    ...createHostActivities({ clusters }),
    ...createEtcdActivities({ clusters }),
    ...createEtcdPatchActivities({ clusters }),
    ...createControlPlaneTrialActivities({ clusters }),
    ...createMaintenanceActivities({ clusters }),
    ...createRestoreActivities({ clusters }),
    ...createRehearsalActivities({ clusters }),
    ...createPoolActivities({ clusters }),
    ...createReadinessActivities({ clusters }),
    ...createHopPrerequisiteActivities({ clusters }),
    ...createDrainPredictionActivities({ clusters }),
    ...createNotifyActivities({ clusters }),
    ...createChangeHookActivities({ clusters }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
