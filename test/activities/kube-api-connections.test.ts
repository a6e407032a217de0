import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { kubeApiFromFile } from '../../activities/kube-api.js';
import { hasOpenssl, makePki } from '../helpers/pki.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The worker's Kubernetes clients reuse their connections (activities/kube-api.ts PooledKubeConfig), against
 * an HTTPS server that, like an API server with a kubeadm kubeconfig, demands the client certificate. The
 * server counts TLS handshakes.
 */
describe(
  'Kubernetes API clients: one connection reused, not a TLS handshake per request',
  { skip: !hasOpenssl && 'no openssl CLI' },
  () => {
    const dir = tempDir('kube-conn');
    let server: https.Server;
    let handshakes = 0;
    let kubeconfig = '';

    before(async () => {
      const pki = makePki(dir, 'localhost');
      server = https.createServer(
        {
          key: readFileSync(pki.serverKey),
          cert: readFileSync(pki.serverCert),
          ca: readFileSync(pki.ca),
          requestCert: true,
          rejectUnauthorized: true,
        },
        (req, res) => {
          res.setHeader('Content-Type', 'application/json');
          // A little later than at once, so that requests sent together are in flight together.
          setTimeout(() => res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [] })), 20);
        },
      );
      server.on('secureConnection', () => handshakes++);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const { port } = server.address() as AddressInfo;
      kubeconfig = join(dir, 'admin.kubeconfig');
      writeFileSync(
        kubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters:',
          `- {name: c, cluster: {server: 'https://127.0.0.1:${port}', certificate-authority: ${pki.ca}}}`,
          'users:',
          `- {name: u, user: {client-certificate: ${pki.clientCert}, client-key: ${pki.clientKey}}}`,
          'contexts:',
          '- {name: x, context: {cluster: c, user: u}}',
          'current-context: x',
          '',
        ].join('\n'),
      );
    });
    after(() => {
      server.closeAllConnections();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('the library alone makes a connection per request (why the worker pools them)', async () => {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfig);
      const core = kc.makeApiClient(CoreV1Api);
      const before = handshakes;
      for (let i = 0; i < 10; i++) await core.listNamespacedPod({ namespace: 'default' });
      assert.equal(handshakes - before, 10);
    });

    it("the worker's clients: sequential calls share one connection, calls in flight together at most one each", async () => {
      const kube = kubeApiFromFile(kubeconfig);
      const start = handshakes;
      for (let i = 0; i < 10; i++) await kube.core.listNamespacedPod({ namespace: 'default' });
      // Another API group of the same kubeconfig: the same agent.
      await kube.policy.listNamespacedPodDisruptionBudget({ namespace: 'default' });
      assert.equal(handshakes - start, 1, 'one handshake for eleven calls');
      const together = async () => Promise.all(Array.from({ length: 6 }, () => kube.core.listNamespacedPod({ namespace: 'default' })));
      await together();
      const afterFirst = handshakes - start;
      assert.ok(afterFirst >= 2 && afterFirst <= 6, `six in flight need their own connections, one of them reused: ${afterFirst}`);
      await together();
      assert.equal(handshakes - start, afterFirst, 'the second round reuses the first round’s connections');
    });
  },
);
