// `kubeadm` on a host of a per-node simulation: the real binary of the installed package's version
// (issue 18 part 2), run in the host's root view (root-view/), with the arguments as given. While
// it runs, the kubelet model looks at /etc/kubernetes/manifests four times a second, as a kubelet
// watches it, so kubeadm's waits for a static pod's new hash and for it to run are met for real.
import { join } from 'node:path';
import { runInHostRoot } from '../root-view/run-in-host.js';
import type { CommandContext, CommandOutcome } from './command.js';

const MANIFEST_POLL_MS = 250;

export async function runRealKubeadm(ctx: CommandContext, binary: string, scratch: string): Promise<CommandOutcome> {
  const m = ctx.machine;
  let running = true;
  const watching = (async () => {
    while (running) {
      await m.noticeManifests();
      await new Promise((r) => setTimeout(r, MANIFEST_POLL_MS));
    }
  })();
  try {
    const r = await runInHostRoot(m.hostPath('/'), [binary, ...ctx.argv.slice(1)], {
      scratchDir: scratch,
      systemctlLog: join(scratch, `systemctl-${m.name}.log`),
      onStdout: (t) => ctx.out(t),
      onStderr: (t) => ctx.err(t),
      signal: ctx.signal,
      asUser: !ctx.root,
    });
    return r.exitCode;
  } finally {
    running = false;
    await watching;
  }
}
