import { defineQuery, defineSignal } from '@temporalio/workflow';

/**
 * Every signal, query and update, defined once and imported by workflows and client/ alike.
 * The string names are wire API: renaming one breaks running histories.
 */

/** Who let a waiting workflow go on, and why; lands in history. */
export interface Proceed {
  by: string;
  comment?: string;
}

export interface SmokeStatus {
  phase: 'waiting' | 'running' | 'done';
  hops: string[];
  proceededBy?: string;
}

export const proceedSmokeSignal = defineSignal<[Proceed]>('proceedSmoke');
export const smokeStatusQuery = defineQuery<SmokeStatus>('smokeStatus');
