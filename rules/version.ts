import semverCompare from 'semver/functions/compare.js';
import { RuleError } from './rule-error.js';

/** A Kubernetes release version, normalised without the leading `v`: `1.33.2`, `1.34.0-rc.1`. */
export interface Version {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  /** Pre-release tag without the dash (`rc.1`), or undefined for a release. */
  readonly pre?: string;
  /** Normalised text, `1.33.2`; the only form that leaves this module. */
  readonly text: string;
}

// Anchored, character-class only: nothing outside [0-9A-Za-z.-] can pass, so a parsed
// version is safe to hand to a command line (no spaces, quotes, `;`, `$`, `|`, ...).
const FULL = /^v?(0|[1-9]\d{0,3})\.(0|[1-9]\d{0,3})\.(0|[1-9]\d{0,4})(?:-([0-9A-Za-z]+(?:[.-][0-9A-Za-z]+)*))?$/;
const MINOR = /^v?(0|[1-9]\d{0,3})\.(0|[1-9]\d{0,3})$/;
const MAX_LENGTH = 64;

function describe(input: unknown): string {
  if (typeof input !== 'string') return `a ${typeof input}`;
  const shown = input.length > 40 ? `${input.slice(0, 40)}…` : input;
  return JSON.stringify(shown);
}

/** Parses `v1.33.2` or `1.33.2` (optionally with a pre-release tag); anything else is a RuleError. */
export function parseVersion(input: unknown): Version {
  const match = typeof input === 'string' && input.length <= MAX_LENGTH ? FULL.exec(input) : null;
  if (!match) {
    throw new RuleError(
      'InvalidVersion',
      `invalid Kubernetes version ${describe(input)}: expected MAJOR.MINOR.PATCH such as 1.33.2 or v1.33.2`,
    );
  }
  const [, major, minor, patch, pre] = match;
  const base = `${major}.${minor}.${patch}`;
  return {
    major: Number(major),
    minor: Number(minor),
    patch: Number(patch),
    ...(pre === undefined ? {} : { pre }),
    text: pre === undefined ? base : `${base}-${pre}`,
  };
}

/** `1.33.2` → `1.33.2`, `v1.33.2` → `1.33.2`; throws on anything else. */
export function normalizeVersion(input: unknown): string {
  return parseVersion(input).text;
}

/** A minor line, `1.34` (from `1.34`, `v1.34`). */
export interface MinorVersion {
  readonly major: number;
  readonly minor: number;
  readonly text: string;
}

export function parseMinor(input: unknown): MinorVersion {
  const match = typeof input === 'string' ? MINOR.exec(input) : null;
  if (!match) {
    throw new RuleError('InvalidVersion', `invalid minor version ${describe(input)}: expected MAJOR.MINOR such as 1.34`);
  }
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return { major, minor, text: `${major}.${minor}` };
}

/**
 * What `--to` takes: an exact version, a minor line (its newest patch), or an expression resolved
 * against the cluster and its package repository (rules/target-expression.ts): `latest-patch` (the
 * newest patch of the cluster's minor) or `next-minor` (the newest patch of the minor after it).
 */
export type Target =
  { kind: 'exact'; version: Version } | { kind: 'minor'; minor: MinorVersion } | { kind: 'expression'; expression: TargetExpression };

export const TARGET_EXPRESSIONS = ['latest-patch', 'next-minor'] as const;
export type TargetExpression = (typeof TARGET_EXPRESSIONS)[number];

export function isTargetExpression(input: unknown): input is TargetExpression {
  return typeof input === 'string' && (TARGET_EXPRESSIONS as readonly string[]).includes(input);
}

export function parseTarget(input: unknown): Target {
  if (isTargetExpression(input)) return { kind: 'expression', expression: input };
  if (typeof input === 'string' && MINOR.test(input)) return { kind: 'minor', minor: parseMinor(input) };
  try {
    return { kind: 'exact', version: parseVersion(input) };
  } catch {
    throw new RuleError(
      'InvalidVersion',
      `invalid target ${describe(input)}: expected a version such as 1.34.2, a minor such as 1.34, latest-patch or next-minor`,
    );
  }
}

/** The newest release (no pre-release) of one minor line, by minorIndex. */
export function newestRelease(available: readonly Version[], minor: number): Version | undefined {
  return available
    .filter((v) => minorIndex(v) === minor && !isPrerelease(v))
    .reduce<Version | undefined>((best, v) => (best && compareVersions(best, v) >= 0 ? best : v), undefined);
}

/** semver ordering, so `1.34.0-rc.1 < 1.34.0`. */
export function compareVersions(a: Version, b: Version): number {
  return semverCompare(a.text, b.text);
}

/** Position on the minor axis; majors are 1000 minors apart so a major change never passes any skew rule. */
export function minorIndex(v: { major: number; minor: number }): number {
  return v.major * 1000 + v.minor;
}

export function minorOf(v: { major: number; minor: number }): string {
  return `${v.major}.${v.minor}`;
}

export function isPrerelease(v: Version): boolean {
  return v.pre !== undefined;
}
