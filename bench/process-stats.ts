import { readFileSync } from 'node:fs';

/**
 * What a process costs, from /proc: resident memory now and CPU seconds used so far (user +
 * system). Sampled by the caller during a run, so the worker's start (bundling the workflows)
 * is not counted against the upgrade.
 */

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

export function cpuSeconds(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): state is field 3; utime 14, stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Samples a process's RSS every `intervalMs` until stopped: the peak, and the CPU seconds spent in between. */
export function sampleProcess(pid: number, intervalMs = 500): { stop(): { peakRssMiB: number; cpuSeconds: number } } {
  const cpu0 = cpuSeconds(pid);
  let peak = rssMiB(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), intervalMs);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, rssMiB(pid));
      return { peakRssMiB: Math.round(peak), cpuSeconds: Math.round((cpuSeconds(pid) - cpu0) * 100) / 100 };
    },
  };
}
