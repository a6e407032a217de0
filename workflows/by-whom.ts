import type { OperatorAction } from './rollout-messages.js';

/** Who gave an operator's signal, and why if they said: `alice: the network is flaky`. */
export const byWhom = (p: OperatorAction): string => `${p.by}${p.reason ? `: ${p.reason}` : ''}`;
