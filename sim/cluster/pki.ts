import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  adminCert: string;
  adminKey: string;
  /** The skewless worker's own identity (CN=skewless-worker, no groups): only what RBAC grants it. */
  workerCert: string;
  workerKey: string;
  saKey: string;
  saPub: string;
}

/** The user name the apiserver sees for the skewless worker (the RBAC subject). */
export const WORKER_USER = 'skewless-worker';

const openssl = (args: string[], cwd: string) => execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });

/**
 * One CA and one admin certificate (system:masters) that serves as the apiserver's serving cert and
 * every component's client cert, as kwokctl does; plus a service-account key pair. Reused when present.
 */
export function ensurePki(dir: string): Pki {
  mkdirSync(dir, { recursive: true });
  const pki: Pki = {
    dir,
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    adminCert: join(dir, 'admin.crt'),
    adminKey: join(dir, 'admin.key'),
    workerCert: join(dir, 'worker.crt'),
    workerKey: join(dir, 'worker.key'),
    saKey: join(dir, 'sa.key'),
    saPub: join(dir, 'sa.pub'),
  };
  if (!existsSync(join(dir, '.complete'))) createCaAndAdmin(dir);
  // State dirs from before the worker had an identity of its own get one.
  if (!existsSync(pki.workerCert)) createWorkerIdentity(dir);
  return pki;
}

function createCaAndAdmin(dir: string): void {
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-days',
      '3650',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-subj',
      '/CN=skewless-sim-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    ],
    dir,
  );
  writeFileSync(
    join(dir, 'admin.ext'),
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth,clientAuth',
      'subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1',
      '',
    ].join('\n'),
  );
  openssl(
    [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-keyout',
      'admin.key',
      '-out',
      'admin.csr',
      '-subj',
      '/O=system:masters/CN=skewless-sim-admin',
    ],
    dir,
  );
  openssl(
    [
      'x509',
      '-req',
      '-sha256',
      '-days',
      '3650',
      '-in',
      'admin.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'admin.crt',
      '-extfile',
      'admin.ext',
    ],
    dir,
  );
  openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  writeFileSync(join(dir, '.complete'), '');
}

function createWorkerIdentity(dir: string): void {
  writeFileSync(
    join(dir, 'client.ext'),
    ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=clientAuth', ''].join(
      '\n',
    ),
  );
  openssl(
    ['req', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-keyout', 'worker.key', '-out', 'worker.csr', '-subj', `/CN=${WORKER_USER}`],
    dir,
  );
  openssl(
    [
      'x509',
      '-req',
      '-sha256',
      '-days',
      '3650',
      '-in',
      'worker.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'worker.crt',
      '-extfile',
      'client.ext',
    ],
    dir,
  );
}

/** A kubeconfig for `server` with the certificates inlined: the admin's, or the worker's identity. */
export function writeKubeconfig(path: string, server: string, pki: Pki, clusterName: string, identity: 'admin' | 'worker' = 'admin'): void {
  const [cert, key] = identity === 'admin' ? [pki.adminCert, pki.adminKey] : [pki.workerCert, pki.workerKey];
  const b64 = (file: string) => readFileSync(file).toString('base64');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: ${clusterName}`,
      '  cluster:',
      `    server: ${server}`,
      `    certificate-authority-data: ${b64(pki.caCert)}`,
      'users:',
      `- name: ${clusterName}-${identity}`,
      '  user:',
      `    client-certificate-data: ${b64(cert)}`,
      `    client-key-data: ${b64(key)}`,
      'contexts:',
      `- name: ${clusterName}`,
      '  context:',
      `    cluster: ${clusterName}`,
      `    user: ${clusterName}-${identity}`,
      `current-context: ${clusterName}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
}
