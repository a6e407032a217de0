// `kubeadm certs check-expiration -o json`, the model (a per-node simulation runs the real kubeadm, whose
// output the model follows: test/activities/readiness-real-kubeadm.test.ts reads both alike).
// The output follows kubeadm's output.kubeadm.k8s.io/v1alpha3 CertificateExpirationInfo
// (kubernetes/kubernetes@v1.34.4 cmd/kubeadm/app/apis/output/v1alpha3/types.go, cmd/kubeadm/app/cmd/certs.go;
// docs/research/readiness-sources.md §4e): the certificates and CAs kubeadm manages, with their
// expiration (RFC 3339 UTC), the residual seconds, the CA and the flags. What is modelled: the
// dates come from the description (a node's certificateDays from the simulator's start, CAs ten years),
// not from the placeholder files under /etc/kubernetes/pki; nothing is externally managed or missing.
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';
import { STACK_HINT, type KubeadmArgs } from './kubeadm-args.js';

/** kubeadm's certificates as `check-expiration` lists them (1.29+: super-admin.conf), with their CA. */
const CERTIFICATES: readonly [string, string][] = [
  ['admin.conf', 'ca'],
  ['apiserver', 'ca'],
  ['apiserver-etcd-client', 'etcd-ca'],
  ['apiserver-kubelet-client', 'ca'],
  ['controller-manager.conf', 'ca'],
  ['etcd-healthcheck-client', 'etcd-ca'],
  ['etcd-peer', 'etcd-ca'],
  ['etcd-server', 'etcd-ca'],
  ['front-proxy-client', 'front-proxy-ca'],
  ['scheduler.conf', 'ca'],
  ['super-admin.conf', 'ca'],
];
const AUTHORITIES = ['ca', 'etcd-ca', 'front-proxy-ca'];

export function certsCheckExpiration(ctx: CommandContext, args: KubeadmArgs): CommandOutcome {
  const output = args.flags.get('output');
  if (output !== 'json') return fail(ctx, `sim: kubeadm certs check-expiration without -o json is not simulated`, 2);
  const dates = ctx.machine.config.certificates;
  if (!dates) return fail(ctx, `error reading configuration: open /etc/kubernetes/pki/ca.crt: no such file or directory\n${STACK_HINT}`, 1);
  if (!ctx.root) return fail(ctx, `failed to load certificate: open /etc/kubernetes/pki/ca.crt: permission denied\n${STACK_HINT}`, 1);
  const residual = (iso: string) => Math.max(0, Math.floor((Date.parse(iso) - Date.now()) / 1000));
  const info = {
    kind: 'CertificateExpirationInfo',
    apiVersion: 'output.kubeadm.k8s.io/v1alpha3',
    certificates: CERTIFICATES.map(([name, caName]) => ({
      name,
      expirationDate: dates.leaves,
      residualTime: residual(dates.leaves),
      caName,
      externallyManaged: false,
      missing: false,
    })),
    certificateAuthorities: AUTHORITIES.map((name) => ({
      name,
      expirationDate: dates.authorities,
      residualTime: residual(dates.authorities),
      externallyManaged: false,
      missing: false,
    })),
  };
  print(ctx, JSON.stringify(info, null, 4));
  return 0;
}
