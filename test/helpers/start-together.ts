/**
 * Promise.all for a test's servers and simulations: when one fails to start, the others that did are
 * stopped before the error is thrown. With a bare Promise.all the `before` hook fails, nothing is
 * assigned for `after` to stop, and the started simulations keep the test file alive until the
 * runner's timeout (seen: a shared server too busy to accept a connection within 10 s left three
 * simulated clusters running for 20 minutes).
 */
export async function startTogether<T extends readonly unknown[] | []>(starting: T): Promise<{ -readonly [P in keyof T]: Awaited<T[P]> }> {
  const settled: PromiseSettledResult<unknown>[] = await Promise.allSettled(starting as readonly unknown[]);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  if (!failed) return started as unknown as { -readonly [P in keyof T]: Awaited<T[P]> };
  await Promise.allSettled(started.map(stopResource));
  throw failed.reason;
}

/** Stops what a test started: a simulation or receiver (`stop`), a Temporal test environment (`teardown`). */
function stopResource(resource: unknown): Promise<unknown> {
  const r = resource as { stop?: () => Promise<unknown>; teardown?: () => Promise<unknown>; env?: { teardown?: () => Promise<unknown> } };
  if (typeof r?.stop === 'function') return r.stop();
  if (typeof r?.teardown === 'function') return r.teardown();
  if (typeof r?.env?.teardown === 'function') return r.env.teardown();
  return Promise.resolve();
}
