// kubeadm's etcd static pod manifest (/etc/kubernetes/manifests/etcd.yaml): the member's name, the peer
// URL it advertises and its data dir, which an etcd restore needs. Read from the container command's
// flags (`- --name=cp-1`), the data dir from the `etcd-data` hostPath volume when there is one (what
// the kubelet mounts; kubeadm writes the same path to --data-dir). Host output is not trusted: every
// value must have the shape it is used in, or the manifest counts as unreadable.

export interface EtcdManifest {
  name: string;
  peerUrl: string;
  dataDir: string;
}

/** A member name as kubeadm writes it (the node name). */
export const MEMBER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;
/** One peer URL: scheme, host (a name or IPv4; IPv6 in brackets is not handled yet) and port, nothing else. */
export const PEER_URL = /^https?:\/\/[A-Za-z0-9][A-Za-z0-9.-]{0,252}:\d{1,5}$/;
/** An absolute path of plain segments, no `..`. */
export const PLAIN_PATH = /^(\/[A-Za-z0-9_][A-Za-z0-9._-]{0,127}){1,16}$/;

function flag(text: string, name: string): string | undefined {
  const m = new RegExp(`^\\s*-\\s+["']?--${name}=([^"'\\s]+)["']?\\s*$`, 'm').exec(text);
  return m?.[1];
}

/** The `path:` of the hostPath volume named etcd-data, in either order of `hostPath` and `name`. */
function etcdDataHostPath(text: string): string | undefined {
  const volumes = text.split(/^\s*volumes:\s*$/m)[1];
  if (volumes === undefined) return undefined;
  for (const item of volumes.split(/^\s*-\s+(?=\S)/m)) {
    if (!/^\s*name:\s*["']?etcd-data["']?\s*$/m.test(item) && !/^name:\s*["']?etcd-data["']?\s*$/m.test(item.trim())) continue;
    const path = /^\s*path:\s*["']?([^"'\s]+)["']?\s*$/m.exec(item)?.[1];
    if (path) return path;
  }
  return undefined;
}

/** The member's restore parameters, or undefined when `text` is not such a manifest or a value is malformed. */
export function parseEtcdManifest(text: string): EtcdManifest | undefined {
  if (!/^\s*-\s+etcd\s*$/m.test(text) && !/component:\s*etcd/.test(text)) return undefined;
  const name = flag(text, 'name');
  const peerUrls = flag(text, 'initial-advertise-peer-urls');
  const dataDir = etcdDataHostPath(text) ?? flag(text, 'data-dir');
  // A member may advertise several peer URLs; the first is the one --initial-cluster names it by.
  const peerUrl = peerUrls?.split(',')[0];
  if (!name || !MEMBER_NAME.test(name) || !peerUrl || !PEER_URL.test(peerUrl) || !dataDir || !PLAIN_PATH.test(dataDir)) return undefined;
  return { name, peerUrl, dataDir: dataDir.replace(/\/+$/, '') };
}
