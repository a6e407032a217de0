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
