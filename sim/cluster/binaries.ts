import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const buildScript = fileURLToPath(new URL('../../../sim/build/build-binaries.sh', import.meta.url));

export interface SimBinaries {
  binDir: string;
  /** The Stage set kwok ≥ 0.8 needs, taken from the kwok module at build time. */
  kwokStages: string;
  bin: (
    name: 'etcd' | 'etcdctl' | 'etcdutl' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kubectl' | 'kwok',
  ) => string;
}

/** The simulation's binaries, built from the Go module proxy on first use (progress on stderr). */
export function ensureSimBinaries(): SimBinaries {
  const binDir =
    process.env.SKEWLESS_SIM_BIN ?? execFileSync('bash', [buildScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return { binDir, kwokStages: join(dirname(binDir), 'kwok-stages.yaml'), bin: (name) => join(binDir, name) };
}
