// What runs on each simulated host right now, for `pgrep`: one process per command step in flight,
// including one whose SSH client has gone and that runs on (HangupPolicy `finishes`), and on a
// control plane the static pods the kubelet runs (etcd, kube-apiserver, ...: sim/cluster/static-pods.ts).
import type { HostMachine } from './host-machine.js';

export interface SimProcess {
  pid: number;
  /** The program's name, as the kernel knows it (`kubeadm`, not `/usr/bin/kubeadm`). */
  name: string;
  /** The whole command line, argv joined by spaces. */
  cmdline: string;
}

const tables = new WeakMap<HostMachine, Map<number, SimProcess>>();
let nextPid = 4100;

/** Records a process on `machine` for `argv`; call the result when it exits. */
export function startProcess(machine: HostMachine, argv: readonly string[]): () => void {
  const table = tables.get(machine) ?? new Map<number, SimProcess>();
  tables.set(machine, table);
  const pid = nextPid++;
  table.set(pid, { pid, name: (argv[0] ?? '').split('/').at(-1) ?? '', cmdline: argv.join(' ') });
  return () => void table.delete(pid);
}

/** Stable pids for the static pods (kubelet-run, long-lived): 1200 + their place in this list. */
const STATIC_PODS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];

export function processes(machine: HostMachine): SimProcess[] {
  const pods = machine.staticPods.map((name) => ({ pid: 1200 + STATIC_PODS.indexOf(name), name, cmdline: `${name} (static pod)` }));
  return [...pods, ...(tables.get(machine)?.values() ?? [])];
}
