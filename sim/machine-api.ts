// The simulation's machine API (blue/green node pools): machines created and deleted while the
// simulation runs. A new machine is a host in the host simulator (SSH endpoint, key in known_hosts,
// kubeadm/kubelet/kubectl at the version asked, the other hosts' package repository) and a kwok
// Node with the labels, Ready, at that kubelet version; its SSH address goes into the cluster
// configuration's `nodes:` so the worker reaches it. Served over HTTP on loopback with a bearer
// token kept in a 0600 file of the state dir; the provider in activities/provisioning.ts calls it.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { isDnsLabel, isNodeName } from '../rules/input-shapes.js';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { parseVersion } from '../rules/index.js';
import { statusOf, type KubeClients } from './cluster/kube-clients.js';
import { nodeObject } from './cluster/populate.js';
import type { SimDescription, SimNode } from './description.js';
import type { HostSimulator, SimulatedHost } from './hosts/host-simulator.js';
import { writeFileAtomic } from './hosts/host-state.js';

export interface MachineSpec {
  name: string;
  /** Kubernetes version of kubeadm, kubelet and kubectl on the machine (and the Node's kubelet). */
  version: string;
  /** The Node's labels (kubelet --node-labels). */
  labels?: Record<string, string>;
  /** The pool the machine is for: recorded, not interpreted (the labels say it). */
  pool?: string;
}

export interface MachineInfo {
  name: string;
  host: string;
  port: number;
  version: string;
  /** False when the machine was there already (an idempotent repeat). */
  created: boolean;
}

/** Machines while the simulation runs (sim.machines), and where the HTTP API listens. */
export interface SimMachines {
  create(spec: MachineSpec): Promise<MachineInfo>;
  /** Stops and removes the host and deletes its Node if still there; `deleted` false when no such machine ran. */
  delete(name: string): Promise<{ deleted: boolean }>;
  /** http://127.0.0.1:PORT */
  readonly endpoint: string;
  /** <stateDir>/machine-api.token (0600): the bearer token. */
  readonly tokenFile: string;
  close(): Promise<void>;
}

/** A refusal with the HTTP status the API answers. */
export class MachineError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const LABEL_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

function checkLabels(labels: unknown): Record<string, string> {
  if (labels === undefined) return {};
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) throw new MachineError(400, 'labels must be a mapping');
  for (const [k, v] of Object.entries(labels)) {
    const slash = k.indexOf('/');
    const [prefix, name] = slash < 0 ? [undefined, k] : [k.slice(0, slash), k.slice(slash + 1)];
    const keyOk = LABEL_PART.test(name) && (prefix === undefined || isNodeName(prefix));
    if (!keyOk || typeof v !== 'string' || (v !== '' && !LABEL_PART.test(v)))
      throw new MachineError(400, `invalid label ${JSON.stringify(k).slice(0, 80)}`);
  }
  return labels as Record<string, string>;
}

export interface MachineApiOptions {
  stateDir: string;
  description: SimDescription;
  kube: KubeClients;
  hosts: HostSimulator;
  /** The cluster configuration the simulation wrote (<clustersDir>/<cluster>.yaml): its `nodes:` map is kept current. */
  clusterConfigPath: string;
  /** Called after each change of the set of hosts (the simulation rewrites its endpoints). */
  onHostsChanged(): void;
  /** Records the cluster's versions after a machine came or went (the version history, sim/cluster/version-recorder.ts). */
  recordVersions?(cause: string): Promise<void>;
}

/** Sets or removes `nodes.<name>` in the cluster configuration, keeping every other line as it is (a test may have changed them). */
function editNodesMap(path: string, name: string, address: { host: string; port: number } | undefined): void {
  const doc = parseDocument(readFileSync(path, 'utf8'));
  if (address) {
    const node = doc.createNode({ address: address.host, port: address.port });
    node.flow = true;
    doc.setIn(['nodes', name], node);
  } else if (doc.hasIn(['nodes', name])) doc.deleteIn(['nodes', name]);
  writeFileAtomic(path, doc.toString());
}

/** A machine request checked: its version, labels, and the host of that name that runs already (a create is then idempotent). */
function checkedMachine(
  spec: MachineSpec,
  controlPlanes: Set<string>,
  hosts: MachineApiOptions['hosts'],
  workerTemplate: SimNode,
): { version: string; labels: Record<string, string>; present: SimulatedHost | undefined } {
  if (!isDnsLabel(spec?.name))
    throw new MachineError(400, `name must be a DNS label, got ${JSON.stringify(spec?.name ?? null).slice(0, 80)}`);
  let version: string;
  try {
    version = parseVersion(spec.version).text;
  } catch (err) {
    throw new MachineError(400, `version: ${(err as Error).message}`);
  }
  const labels = checkLabels(spec.labels);
  if (controlPlanes.has(spec.name)) throw new MachineError(409, `${spec.name} is a control plane of the simulation`);
  const present = hosts.hosts.find((h) => h.name === spec.name);
  if (!present && !workerTemplate.repository.includes(version)) {
    throw new MachineError(
      400,
      `version ${version} is not in the simulation's package repository (${workerTemplate.repository.join(', ')})`,
    );
  }
  return { version, labels, present };
}

/** The machine boots, then its kubelet registers the Node (kwok makes it Ready); one registered already stays. */
async function registerNode(kube: KubeClients, name: string, version: string, labels: Record<string, string>): Promise<void> {
  try {
    await kube.core.createNode({
      body: nodeObject({ name, role: 'worker', kubelet: version, labels, latencies: {}, faults: [], repository: [], sources: [] }),
    });
  } catch (err) {
    if (statusOf(err) !== 409) throw err;
  }
}

/** The HTTP side: a bearer token, then POST /machines, DELETE /machines/NAME, GET /machines. */
function machineRequests(
  token: string,
  api: { create(spec: MachineSpec): Promise<MachineInfo>; remove(name: string): Promise<{ deleted: boolean }>; list(): string[] },
): (req: IncomingMessage, res: ServerResponse) => void {
  const expected = Buffer.from(`Bearer ${token}`);
  const authorized = (req: IncomingMessage): boolean => {
    const got = Buffer.from(req.headers.authorization ?? '');
    return got.length === expected.length && timingSafeEqual(got, expected);
  };
  const answer = (res: ServerResponse, status: number, body: unknown): void => {
    if (typeof body === 'string') res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
    else res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  return (req, res) => {
    let body = '';
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
      if (body.length > 64 << 10) tooLarge = true;
    });
    req.on('end', () => {
      void (async () => {
        if (!authorized(req)) return answer(res, 401, 'unauthorized');
        if (tooLarge) return answer(res, 413, 'request too large');
        const url = new URL(req.url ?? '/', 'http://localhost');
        const one = /^\/machines\/([^/]+)$/.exec(url.pathname);
        if (url.pathname === '/machines' && req.method === 'POST') {
          let spec: MachineSpec;
          try {
            spec = JSON.parse(body) as MachineSpec;
          } catch {
            return answer(res, 400, 'the body must be JSON: {"name":…,"version":…,"labels":{…}}');
          }
          const info = await api.create(spec);
          return answer(res, info.created ? 201 : 200, info);
        }
        if (one && req.method === 'DELETE') return answer(res, 200, await api.remove(decodeURIComponent(one[1] as string)));
        if (url.pathname === '/machines' && req.method === 'GET') return answer(res, 200, { machines: api.list() });
        return answer(res, 404, `no ${req.method} ${url.pathname}`);
      })().catch((err: unknown) => {
        if (err instanceof MachineError) answer(res, err.status, err.message);
        else answer(res, 500, ((err as Error).message ?? String(err)).split('\n')[0] ?? 'error');
      });
    });
  };
}

/** Starts the machine API; its endpoint and token file are what the `provisioning:` block names. */
export async function startMachineApi(options: MachineApiOptions): Promise<SimMachines> {
  const { description, kube, hosts } = options;
  const workerTemplate = description.nodes.find((n) => n.role === 'worker') ?? description.nodes[0];
  if (!workerTemplate) throw new Error('sim: no node to take a machine template from');
  const controlPlanes = new Set(description.nodes.filter((n) => n.role === 'control-plane').map((n) => n.name));
  const token = randomBytes(32).toString('hex');
  const tokenFile = join(options.stateDir, 'machine-api.token');
  rmSync(tokenFile, { force: true });
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });

  // One change at a time: each edits the host set and the cluster configuration.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work);
    queue = next.catch(() => undefined);
    return next;
  };

  const create = (spec: MachineSpec): Promise<MachineInfo> =>
    serial(async () => {
      const { version, labels, present } = checkedMachine(spec, controlPlanes, hosts, workerTemplate);
      const host =
        present ??
        (await hosts.addHost({
          name: spec.name,
          role: 'worker',
          repository: workerTemplate.repository,
          packageRepository: description.packageRepository,
          packageManager: description.packageManager,
          installed: { kubeadm: version, kubelet: version, kubectl: version },
          latencies: workerTemplate.latencies,
        }));
      await registerNode(kube, spec.name, version, labels);
      editNodesMap(options.clusterConfigPath, spec.name, { host: '127.0.0.1', port: host.port });
      options.onHostsChanged();
      await options.recordVersions?.(`machine create ${spec.name} ${version}`);
      return { name: spec.name, host: '127.0.0.1', port: host.port, version, created: !present };
    });

  const remove = (name: string): Promise<{ deleted: boolean }> =>
    serial(async () => {
      if (!isDnsLabel(name)) throw new MachineError(400, `invalid machine name ${JSON.stringify(name).slice(0, 80)}`);
      if (controlPlanes.has(name)) throw new MachineError(409, `${name} is a control plane of the simulation: not removed`);
      const deleted = await hosts.removeHost(name);
      // The activity deletes the Node first; one still there (a direct call) goes too, as a cloud's node controller would.
      try {
        await kube.core.deleteNode({ name });
      } catch (err) {
        if (statusOf(err) !== 404) throw err;
      }
      editNodesMap(options.clusterConfigPath, name, undefined);
      if (deleted) options.onHostsChanged();
      await options.recordVersions?.(`machine delete ${name}`);
      return { deleted };
    });

  const server = createServer(machineRequests(token, { create, remove, list: () => hosts.hosts.map((h) => h.name) }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  writeFileSync(join(options.stateDir, 'machine-api.json'), `${JSON.stringify({ endpoint, tokenFile }, null, 2)}\n`);

  return {
    create,
    delete: remove,
    endpoint,
    tokenFile,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
