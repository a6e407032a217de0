import { setHandler } from '@temporalio/workflow';
import { approveUpdate, type GateState } from './rollout-messages.js';

/**
 * The `approve` update every flow with gates answers (upgrade, maintenance, blue/green, restore): the
 * validator refuses a gate that is not waiting, or an approval without a "by", before anything is
 * written to history; the handler records who approved and why on the gate and in the events.
 */
export function handleApprovals(gates: GateState[], note: (event: string) => void): void {
  setHandler(
    approveUpdate,
    (approval) => {
      const gate = gates.find((g) => g.name === approval.gate && !g.approvedBy) as GateState;
      Object.assign(gate, { approvedBy: approval.by, ...(approval.comment ? { comment: approval.comment } : {}) });
      note(`gate ${gate.name} approved by ${approval.by}${approval.comment ? `: ${approval.comment}` : ''}`);
      return gate;
    },
    {
      validator: (approval) => {
        if (!gates.some((g) => g.name === approval.gate && !g.approvedBy)) throw new Error(`no gate ${approval.gate} is waiting`);
        if (!approval.by) throw new Error('an approval needs a "by"');
      },
    },
  );
}
