import { readdirSync, readFileSync } from 'node:fs';

/**
 * What the stack's programs hold in memory: a process and its descendants (PostgreSQL forks a backend
 * per connection), as RSS and as PSS. RSS counts PostgreSQL's shared buffers once per backend that
 * touched them; PSS splits shared pages among their users, so PSS sums to what the tree really costs.
 */
export interface TreeMemory {
  processes: number;
  rssMb: number;
  pssMb: number;
}

function children(pid: number): number[] {
  const out: number[] = [];
  for (const task of safe(() => readdirSync(`/proc/${pid}/task`), [] as string[])) {
    const list = safe(() => readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8'), '');
    out.push(...list.split(/\s+/).filter(Boolean).map(Number));
  }
  return out;
}

function safe<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback; // the process ended meanwhile
  }
}

const kb = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);

/** Linux only (/proc); a pid that is gone counts nothing. */
export function treeMemory(pid: number): TreeMemory {
  const all: number[] = [];
  for (let queue = [pid]; queue.length > 0;) {
    const next = queue.shift() as number;
    all.push(next);
    queue = [...queue, ...children(next)];
  }
  let rss = 0;
  let pss = 0;
  let processes = 0;
  for (const p of all) {
    const rollup = safe(() => readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'), '');
    if (!rollup) continue;
    processes++;
    rss += kb(rollup, 'Rss');
    pss += kb(rollup, 'Pss');
  }
  return { processes, rssMb: Math.round(rss / 1024), pssMb: Math.round(pss / 1024) };
}
