import { acknowledgementNameProblem } from '../rules/readiness/finding.js';
import { UsageError } from './cli-support.js';
import { namespacedName } from './input-checks.js';

/**
 * `--acknowledge NAME` values of plan and upgrade, split by shape: `<check>:<subject>` acknowledges a
 * readiness finding (issue 21; rules/readiness/finding.ts), `NS/PDB` a PodDisruptionBudget that
 * allows no disruption. `--acknowledge-removed-api GROUP/VERSION/RESOURCE` is the same as
 * `--acknowledge removed-api:GROUP/VERSION/RESOURCE`. A name of neither shape is a UsageError (exit 2)
 * naming the flag, before anything is asked of Temporal or the cluster.
 */
export interface Acknowledgements {
  pdbs: string[];
  readiness: string[];
}

const GVR = /^[a-z0-9.-]+\/v[a-z0-9]+\/[a-z0-9]+$/;

export function parseAcknowledgements(acknowledge: readonly string[] = [], removedApis: readonly string[] = []): Acknowledgements {
  const out: Acknowledgements = { pdbs: [], readiness: [] };
  for (const value of acknowledge) {
    if (value.includes(':')) {
      const problem = acknowledgementNameProblem(value);
      if (problem) throw new UsageError(`--acknowledge: ${problem}`);
      out.readiness.push(value);
    } else {
      out.pdbs.push(namespacedName(value, '--acknowledge', 'PDB'));
    }
  }
  for (const value of removedApis) {
    if (!GVR.test(value))
      throw new UsageError(
        `--acknowledge-removed-api: ${JSON.stringify(value)} is not GROUP/VERSION/RESOURCE (the core group written core), e.g. authentication.k8s.io/v1beta1/selfsubjectreviews`,
      );
    out.readiness.push(`removed-api:${value}`);
  }
  return { pdbs: [...new Set(out.pdbs)], readiness: [...new Set(out.readiness)] };
}

/** Who acknowledges and why: `reason` for every acknowledgement, `reasons` for the ones given their own. */
export interface AcknowledgementReasons {
  reason?: string;
  reasons?: Record<string, string>;
}

/**
 * `--reason TEXT` (once: every acknowledgement's) and `--reason NAME=TEXT` (NAME one of the run's
 * acknowledgements, as --acknowledge named it or removed-api:GROUP/VERSION/RESOURCE: its own reason).
 * A NAME= that names nothing acknowledged, a name given twice, or two plain reasons is a UsageError.
 */
export function parseAcknowledgementReasons(values: readonly string[], acknowledged: readonly string[]): AcknowledgementReasons {
  const out: AcknowledgementReasons = {};
  const own: Record<string, string> = {};
  for (const value of values) {
    const eq = value.indexOf('=');
    const name = eq > 0 ? value.slice(0, eq) : '';
    // A name shaped like an acknowledgement (check:subject, NS/PDB) and no blank: a keyed reason.
    if (/^[^\s=]*[:/][^\s=]*$/.test(name)) {
      if (!acknowledged.includes(name))
        throw new UsageError(`--reason: ${name} is not acknowledged by this command (--acknowledge ${name} gives it one)`);
      if (name in own) throw new UsageError(`--reason: ${name} has two reasons`);
      own[name] = value.slice(eq + 1);
    } else {
      if (out.reason !== undefined)
        throw new UsageError('--reason: one TEXT for every acknowledgement, or NAME=TEXT for each acknowledgement of its own');
      out.reason = value;
    }
  }
  return Object.keys(own).length > 0 ? { ...out, reasons: own } : out;
}
