/** Label selectors as policy/v1 PDBs (and every other selector in the API) use them: pure matching. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/**
 * Whether a selector selects a pod's labels. An empty selector selects everything (policy/v1);
 * an absent one (undefined) selects nothing; an unknown operator selects nothing.
 */
export function selectorMatches(selector: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  if (selector === undefined) return false;
  const have = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (have[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const present = Object.prototype.hasOwnProperty.call(have, e.key);
    const value = have[e.key];
    const ok =
      e.operator === 'In'
        ? present && (e.values ?? []).includes(value as string)
        : e.operator === 'NotIn'
          ? !present || !(e.values ?? []).includes(value as string)
          : e.operator === 'Exists'
            ? present
            : e.operator === 'DoesNotExist'
              ? !present
              : false;
    if (!ok) return false;
  }
  return true;
}
