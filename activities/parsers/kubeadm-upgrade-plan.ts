// The text `kubeadm upgrade plan` prints: its [upgrade/versions] log lines, then per available upgrade a
// kubelet table, a control-plane table and the apply command, then the component-config table. Tables
// come from Go's tabwriter, so cells are cut at the header's column offsets (kube-proxy's NODE is empty).
// Handles both layouts: with a NODE column (kubeadm ≥ 1.30) and without (`kubelet  2 x v1.28.5  v1.29.2`).

export interface PlanRow {
  component: string;
  /** The node the row is about; absent for cluster-wide rows (kube-proxy, CoreDNS) and old layouts. */
  node?: string;
  /** How many nodes run `current` (old layout: `2 x v1.28.5`); 1 otherwise. */
  count: number;
  current: string;
  target: string;
}

export interface PlanUpgrade {
  /** `latest version in the v1.18 series`, `latest stable version`... */
  description: string;
  kubelets: PlanRow[];
  components: PlanRow[];
  /** `kubeadm upgrade apply v1.19.0` as kubeadm suggests it. */
  applyCommand?: string;
  /** Set when kubeadm says it must be updated first (`Note: ... update kubeadm to v1.19.0.`). */
  kubeadmUpdateRequiredTo?: string;
}

export interface ComponentConfigState {
  group: string;
  currentVersion: string;
  preferredVersion: string;
  manualUpgradeRequired: boolean;
}

export interface KubeadmUpgradePlan {
  clusterVersion?: string;
  kubeadmVersion?: string;
  targetVersion?: string;
  latestInSeries?: string;
  /** `Awesome, you're up-to-date! Enjoy!` */
  upToDate: boolean;
  upgrades: PlanUpgrade[];
  componentConfigs: ComponentConfigState[];
}

const RULE = /^_{10,}$/;

/** Cells of `line` cut at the start offsets of the header's column titles. */
function cells(header: string, titles: string[], line: string): string[] {
  const starts: number[] = [];
  let from = 0;
  for (const t of titles) {
    const at = header.indexOf(t, from);
    starts.push(at);
    from = at + t.length;
  }
  return starts.map((s, i) => line.slice(s, i + 1 < starts.length ? starts[i + 1] : undefined).trim());
}

function row(header: string, titles: string[], line: string): PlanRow | undefined {
  const c = cells(header, titles, line);
  const get = (t: string): string => c[titles.indexOf(t)] ?? '';
  let component = get('COMPONENT');
  let node = titles.includes('NODE') ? get('NODE') : '';
  // kubeadm 1.30 briefly printed `kubelet (node1)` before it grew the NODE column.
  const named = /^(\S+) \((\S+)\)$/.exec(component);
  if (named) [, component = '', node = ''] = named;
  let current = get('CURRENT');
  let count = 1;
  const counted = /^(\d+) x (\S+)$/.exec(current);
  if (counted) {
    count = Number(counted[1]);
    current = counted[2]!;
  }
  const target = get('TARGET') || get('AVAILABLE');
  if (!component || !current || !target) return undefined;
  return { component, ...(node ? { node } : {}), count, current, target };
}

/** Reads a table starting at `lines[i]` (its header); returns rows and the index after it. */
function table(lines: string[], i: number): { header: string; titles: string[]; body: string[]; next: number } {
  const header = lines[i]!;
  const titles = header.trim().split(/\s{2,}/);
  const body: string[] = [];
  let j = i + 1;
  for (; j < lines.length && lines[j]!.trim() !== '' && !RULE.test(lines[j]!.trim()); j++) body.push(lines[j]!);
  return { header, titles, body, next: j };
}

export function parseKubeadmUpgradePlan(text: string): KubeadmUpgradePlan {
  const plan: KubeadmUpgradePlan = { upToDate: false, upgrades: [], componentConfigs: [] };
  const lines = text.replace(/\r/g, '').split('\n');
  let current: PlanUpgrade | undefined;
  const section = (): PlanUpgrade => {
    current ??= { description: '', kubelets: [], components: [] };
    if (!plan.upgrades.includes(current)) plan.upgrades.push(current);
    return current;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const trimmed = line.trim();
    const version =
      /^\[upgrade\/versions\] (Cluster version|kubeadm version|Target version|Latest stable version|Latest version in the v\S+ series): (\S+)$/.exec(
        trimmed,
      );
    if (version) {
      const [, what, value] = version;
      if (what === 'Cluster version') plan.clusterVersion = value;
      else if (what === 'kubeadm version') plan.kubeadmVersion = value;
      else if (what === 'Target version' || what === 'Latest stable version') plan.targetVersion ??= value;
      else plan.latestInSeries = value;
      continue;
    }
    if (trimmed.startsWith("Awesome, you're up-to-date")) plan.upToDate = true;
    else if (RULE.test(trimmed)) current = undefined;
    else if (/^Upgrade to the (.+):$/.test(trimmed)) section().description = /^Upgrade to the (.+):$/.exec(trimmed)![1]!;
    else if (/^kubeadm upgrade apply \S+/.test(trimmed) && line.startsWith('\t')) section().applyCommand = trimmed;
    else if (/^Note: Before you can perform this upgrade, you have to update kubeadm to (\S+?)\.?$/.test(trimmed)) {
      section().kubeadmUpdateRequiredTo = /to (\S+?)\.?$/.exec(trimmed)![1];
    } else if (trimmed.startsWith('COMPONENT') && /\bCURRENT\b/.test(trimmed)) {
      const t = table(lines, i);
      const rows = t.body.map((l) => row(t.header, t.titles, l)).filter((r): r is PlanRow => r !== undefined);
      const target = section();
      for (const r of rows) (r.component === 'kubelet' ? target.kubelets : target.components).push(r);
      i = t.next - 1;
    } else if (trimmed.startsWith('API GROUP')) {
      const t = table(lines, i);
      for (const l of t.body) {
        const [group = '', currentVersion = '', preferredVersion = '', manual = ''] = cells(t.header, t.titles, l);
        if (group) plan.componentConfigs.push({ group, currentVersion, preferredVersion, manualUpgradeRequired: manual === 'yes' });
      }
      i = t.next - 1;
    }
  }
  return plan;
}
