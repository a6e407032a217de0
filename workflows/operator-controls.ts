import { setHandler } from '@temporalio/workflow';
import { byWhom } from './by-whom.js';
import { abortSignal, pauseSignal, resumeSignal, type OperatorAction } from './rollout-messages.js';

/** What pause and resume write: every flow's status has these. */
export interface ControlledStatus {
  paused: boolean;
  events: string[];
}

/** What differs between flows around the same three signals. */
export interface ControlHooks {
  /** What a pause holds back, after `paused by WHO` (the fleet: no further cluster starts). */
  pausedMeans?: string;
  /** After a pause or a resume: the memo. */
  changed?: () => void;
  /** The event that refuses an abort now (past a point of no return), or undefined to take it. */
  abortRefused?: (p: OperatorAction) => string | undefined;
  /** After an abort is taken (`first`: no abort was recorded before): note it, relay it to children. */
  aborted?: (p: OperatorAction, first: boolean) => Promise<void> | void;
}

/**
 * The operator's pause, resume and abort, the same wire signals for every flow (upgrade, maintenance,
 * blue/green, restore, fleet): the flow's registerHandlers() registers them before the workflow's first
 * await. The first abort's reason is the run's; later ones are handed to the flow's hook too.
 */
export class OperatorControls {
  #aborted: string | undefined;

  constructor(
    private readonly status: ControlledStatus,
    private readonly hooks: ControlHooks = {},
  ) {}

  registerHandlers(): void {
    const { pausedMeans } = this.hooks;
    setHandler(pauseSignal, (p) => this.setPaused(true, `paused by ${byWhom(p)}${pausedMeans ? `: ${pausedMeans}` : ''}`));
    setHandler(resumeSignal, (p) => this.setPaused(false, `resumed by ${p.by}`));
    setHandler(abortSignal, (p) => this.abortBy(p));
  }

  /** Why the run stops, or undefined. */
  aborted(): string | undefined {
    return this.#aborted;
  }

  /** Records an abort unless one is recorded already (a child aborted, an operator's answer). */
  abort(reason: string): void {
    this.#aborted ??= reason;
  }

  private setPaused(paused: boolean, event: string): void {
    this.status.paused = paused;
    this.status.events.push(event);
    this.hooks.changed?.();
  }

  private async abortBy(p: OperatorAction): Promise<void> {
    const refused = this.hooks.abortRefused?.(p);
    if (refused) {
      this.status.events.push(refused);
      return;
    }
    const first = this.#aborted === undefined;
    this.abort(`aborted by ${byWhom(p)}`);
    await this.hooks.aborted?.(p, first);
  }
}
