import type { RuleFailureType } from '../contracts/failure-types.js';

/**
 * The one error the pure rules throw: bad input or a request the domain rules refuse.
 * `code` is stable (scripts and workflows branch on it); `message` is one line for humans.
 * Workflows wrap it in an ApplicationFailure; the CLI prints the message and exits 2.
 */
export type RuleErrorCode = RuleFailureType;

export class RuleError extends Error {
  constructor(
    readonly code: RuleErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'RuleError';
  }
}
