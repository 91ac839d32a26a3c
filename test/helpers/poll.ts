/**
 * Waiting in tests without bare sleeps: `until` polls a check (every 20 ms)
 * until it holds, and fails after a deadline of at least 10 s — on 2 shared
 * cores a shorter bound fails for reasons that are not casket's. Use it only
 * where there is no event to wait on. `clockPast` waits for the clock itself,
 * for tests of TTLs, where the passing of time is the thing under test.
 */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<number> {
  const deadline = Date.now() + Math.max(ms, 10_000);
  for (;;) {
    const holds = await check();
    const at = Date.now();
    if (holds) return at; // when the check that held had finished
    if (at > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves once Date.now() is past `time` (ms since the epoch). */
export async function clockPast(time: number): Promise<void> {
  while (Date.now() <= time) await new Promise((r) => setTimeout(r, Math.max(1, time - Date.now() + 1)));
}
