import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * The custom search attributes skewless sets, so the Temporal UI's list view can filter upgrades
 * by cluster, versions and phase. Names are API: renaming one breaks saved queries and histories.
 * The dev server registers exactly this list (`skewless dev-server`, the test environment).
 */
export const SEARCH_ATTRIBUTES = {
  cluster: defineSearchAttributeKey('SkewlessCluster', SearchAttributeType.KEYWORD),
  fromVersion: defineSearchAttributeKey('SkewlessFromVersion', SearchAttributeType.KEYWORD),
  targetVersion: defineSearchAttributeKey('SkewlessTargetVersion', SearchAttributeType.KEYWORD),
  phase: defineSearchAttributeKey('SkewlessPhase', SearchAttributeType.KEYWORD),
  /** Set on a fleet (`fleet/<name>`) and on every upgrade it starts: the list of one fleet's runs. */
  fleet: defineSearchAttributeKey('SkewlessFleet', SearchAttributeType.KEYWORD),
} as const;

export const ALL_SEARCH_ATTRIBUTES = Object.values(SEARCH_ATTRIBUTES);
