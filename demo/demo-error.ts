/** A failure the demo explains in one line (exit 1), or bad input (exit 2): printed without a stack trace. */
export class DemoError extends Error {
  override name = 'DemoError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
