import { checkSkew, type ComponentVersion, type SkewInventory, type SkewOptions, type SkewViolation } from './skew-policy.js';
import { minorIndex, minorOf, parseMinor, parseVersion } from './version.js';

/**
 * Compatibility versions (KEP-4330, kubernetes/enhancements keps/sig-architecture/4330-compatibility-versions):
 * which versions a kube-apiserver, kube-controller-manager or kube-scheduler binary can emulate, and the
 * version skew policy read under emulation. What the binaries accept was measured on 1.32.13, 1.33.13
 * and 1.34.4 (docs/reversible-hops.md).
 */

/** The oldest version any binary emulates: 1.33.13 and 1.34.4 `--help` both say `kube=1.31..` (KEP-4330 starts at 1.31). */
const OLDEST_EMULATED = { major: 1, minor: 31 };
/** KEP-4330: a binary emulates at most three minors back (1.34.4 accepts 1.31). */
const MAX_EMULATION_DISTANCE = 3;
/**
 * The first binary that emulates an older minor: 1.32.13's `--help` offers `kube=1.32..1.32.13` only (it
 * takes `--emulated-version=1.31` silently and its /version shows no emulation: not relied on).
 */
const FIRST_EMULATING = { major: 1, minor: 33 };

/** The minors `binary` can emulate, oldest first; just its own minor for a binary before 1.33. */
export function emulationRange(binary: string): { oldest: string; newest: string } {
  const v = parseVersion(binary);
  const newest = minorOf(v);
  if (minorIndex(v) < minorIndex(FIRST_EMULATING)) return { oldest: newest, newest };
  const oldest = Math.max(minorIndex(v) - MAX_EMULATION_DISTANCE, minorIndex(OLDEST_EMULATED));
  return { oldest: `${Math.floor(oldest / 1000)}.${oldest % 1000}`, newest };
}

/** Whether `binary` (`1.33.13`) accepts `--emulated-version=kube=<emulated>` (`1.32`). */
export function canEmulate(binary: string, emulated: string): boolean {
  const e = minorIndex(parseMinor(emulated));
  const range = emulationRange(binary);
  return e >= minorIndex(parseMinor(range.oldest)) && e <= minorIndex(parseMinor(range.newest));
}

/** The min-compatibility version of a component emulating `emulated`: one minor below (measured: /version's minCompatibilityMinor). */
export function minCompatibilityOf(emulated: string): string {
  const m = parseMinor(emulated);
  return `${m.major}.${m.minor - 1}`;
}

/** A component's binary version and, while it emulates an older minor, that minor (`1.32`). */
export interface EmulatedComponentVersion extends ComponentVersion {
  emulated?: string;
}

/** The skew inventory with the emulation of the control-plane components. */
export interface EmulationInventory extends SkewInventory {
  apiservers: EmulatedComponentVersion[];
  controllerManagers?: EmulatedComponentVersion[];
  schedulers?: EmulatedComponentVersion[];
}

export type EmulationRuleId = 'emulation-unsupported';

export interface EmulationViolation extends Omit<SkewViolation, 'ruleId'> {
  ruleId: SkewViolation['ruleId'] | EmulationRuleId;
  /** The minor the component emulates, when it does. */
  emulated?: string;
}

export interface EmulationSkewReport {
  compliant: boolean;
  violations: EmulationViolation[];
}

type EmulatingKey = 'apiservers' | 'controllerManagers' | 'schedulers';
const EMULATING: Record<EmulatingKey, EmulationViolation['component']> = {
  apiservers: 'apiserver',
  controllerManagers: 'controllerManager',
  schedulers: 'scheduler',
};
const PROGRAM: Record<EmulatingKey, string> = {
  apiservers: 'kube-apiserver',
  controllerManagers: 'kube-controller-manager',
  schedulers: 'kube-scheduler',
};

/**
 * Rules judged on the binaries as well as on the emulated versions. KEP-4330 makes an emulating
 * apiserver serve the emulated minor's APIs, but promises nothing about how far back a kubelet may
 * lag its binary, nor lets two apiservers' binaries drift apart: the stricter reading holds.
 */
const BINARY_RULES: ReadonlySet<SkewViolation['ruleId']> = new Set(['node-too-old', 'apiserver-ha-skew']);

/**
 * The skew policy under emulation (KEP-4330 "Version skew"; kubernetes.io/releases/version-skew-policy):
 * - every binary must accept the minor it emulates (emulation-unsupported);
 * - whatever may not be newer than an apiserver (kubelet, kube-proxy, controller-manager, scheduler) is
 *   read against the apiserver's *emulated* minor, and the controller-manager and scheduler read at their
 *   own emulated minor: a kubelet must not be newer than the emulated version;
 * - a controller-manager or scheduler may be at most one minor older than an apiserver's emulated minor,
 *   which is the apiserver's min-compatibility version (emulated − 1, minCompatibilityOf);
 * - kubelet lag and apiserver HA skew are also judged on the binaries (BINARY_RULES).
 */
export function checkEmulationSkew(inventory: EmulationInventory, options: SkewOptions = {}): EmulationSkewReport {
  const violations: EmulationViolation[] = [];
  for (const key of Object.keys(EMULATING) as EmulatingKey[]) {
    for (const c of inventory[key] ?? []) {
      if (c.emulated === undefined || canEmulate(c.version, c.emulated)) continue;
      const range = emulationRange(c.version);
      violations.push({
        component: EMULATING[key],
        node: c.node,
        version: parseVersion(c.version).text,
        emulated: c.emulated,
        ruleId: 'emulation-unsupported',
        rule: `${PROGRAM[key]} ${parseVersion(c.version).text} cannot emulate ${c.emulated}: it accepts ${range.oldest}..${range.newest} (KEP-4330, its --emulated-version)`,
      });
    }
  }
  const emulatedOf = new Map<string, string>();
  const view: SkewInventory = { ...inventory };
  for (const key of Object.keys(EMULATING) as EmulatingKey[]) {
    const entries = inventory[key];
    if (!entries) continue;
    view[key] = entries.map((c) => {
      if (c.emulated === undefined) return { node: c.node, version: c.version };
      emulatedOf.set(`${EMULATING[key]}/${c.node}`, c.emulated);
      return { node: c.node, version: `${parseMinor(c.emulated).text}.0` };
    });
  }
  const seen = new Set<string>();
  const keep = (v: SkewViolation, binary: boolean) => {
    const id = `${v.component}/${v.node}/${v.ruleId}`;
    if (seen.has(id)) return;
    seen.add(id);
    const emulated = emulatedOf.get(`${v.component}/${v.node}`);
    const original = binaryOf(inventory, v.component, v.node) ?? v.version;
    violations.push({
      ...v,
      version: original,
      ...(emulated === undefined ? {} : { emulated }),
      rule: binary ? `${v.rule} (binaries)` : emulatedOf.size > 0 ? `${v.rule} (read at the emulated versions, KEP-4330)` : v.rule,
    });
  };
  for (const v of checkSkew(view, options).violations) keep(v, false);
  for (const v of checkSkew(inventory, options).violations) if (BINARY_RULES.has(v.ruleId)) keep(v, true);
  return { compliant: violations.length === 0, violations };
}

function binaryOf(inventory: EmulationInventory, component: SkewViolation['component'], node: string): string | undefined {
  const key = (Object.keys(EMULATING) as EmulatingKey[]).find((k) => EMULATING[k] === component);
  if (!key) return undefined;
  const entry = inventory[key]?.find((c) => c.node === node);
  return entry ? parseVersion(entry.version).text : undefined;
}
