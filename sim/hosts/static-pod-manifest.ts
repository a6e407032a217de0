// The one line of a static-pod manifest the simulation reads and the model kubeadm rewrites: the
// first container's image (the manifests are kubeadm's shape: one container per pod).

/** The control-plane components whose manifests name a Kubernetes version (etcd names its own). */
export const CONTROL_PLANE_MANIFESTS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
export type ControlPlaneManifest = (typeof CONTROL_PLANE_MANIFESTS)[number];

const IMAGE_LINE = /^([ \t]*(?:-[ \t]+)?image:[ \t]*)(\S+)[ \t]*$/m;

/** `registry.k8s.io/kube-apiserver:v1.33.13`, or undefined when the manifest names no image. */
export function imageOfManifest(text: string): string | undefined {
  return IMAGE_LINE.exec(text)?.[2]?.replace(/^["']|["']$/g, '');
}

/** The manifest with its image replaced (or unchanged when it names none). */
export function withImage(text: string, image: string): string {
  return text.replace(IMAGE_LINE, (_m, head: string) => `${head}${image}`);
}

// `--emulated-version=kube=1.32` (or `=1.32`, or within a list such as `wardle=1.2,kube=1.32`) on the
// container's command line: the minor a kube-apiserver, controller-manager or scheduler emulates (KEP-4330).
const EMULATED_VERSION = /^[ \t]*-[ \t]+["']?--emulated-version=(?:[^\s"']*,)?(?:kube=)?(\d+\.\d+)(?:,[^\s"']*)?["']?[ \t]*$/m;

/** The minor the manifest's program is told to emulate (`1.32`), or undefined when it emulates nothing. */
export function emulatedVersionOfManifest(text: string): string | undefined {
  return EMULATED_VERSION.exec(text)?.[1];
}
