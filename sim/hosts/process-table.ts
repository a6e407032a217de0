// What runs on each simulated host right now, for `pgrep`: one process per command step in flight,
// including one whose SSH client has gone and that runs on (HangupPolicy `finishes`).
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

export function processes(machine: HostMachine): SimProcess[] {
  return [...(tables.get(machine)?.values() ?? [])];
}
