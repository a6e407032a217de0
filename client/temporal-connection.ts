import { Client, Connection } from '@temporalio/client';
import { temporalConfig } from '../worker/config.js';
import { UsageError } from './cli-support.js';

/** Temporal could not be reached: one line, exit 3, nothing started. */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
}

export const TEMPORAL_OPTIONS = {
  address: { type: 'string' },
  namespace: { type: 'string' },
} as const;

/** A client from --address/--namespace, else TEMPORAL_ADDRESS/TEMPORAL_NAMESPACE, like the temporal CLI. */
export async function connectClient(values: { address?: string; namespace?: string }): Promise<{ client: Client; close: () => Promise<void> }> {
  const config = temporalConfig();
  const address = values.address ?? config.address;
  if (!/^[A-Za-z0-9.-]+:\d+$/.test(address)) throw new UsageError(`--address must be host:port, got ${JSON.stringify(address)}`);
  let connection: Connection;
  try {
    connection = await Connection.connect({ address, connectTimeout: 5000 });
  } catch (err) {
    throw new UnreachableError(`cannot reach Temporal at ${address}: ${(err as Error).message.split('\n')[0]}`);
  }
  return { client: new Client({ connection, namespace: values.namespace ?? config.namespace }), close: () => connection.close() };
}

const CLUSTER = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function clusterName(value: string | undefined, flag = 'NAME'): string {
  if (!value) throw new UsageError(`${flag} (the cluster) is required`);
  if (!CLUSTER.test(value) || value.length > 63) throw new UsageError(`invalid cluster name ${JSON.stringify(value)}: a DNS label`);
  return value;
}

export const upgradeWorkflowId = (cluster: string) => `upgrade/${cluster}`;
