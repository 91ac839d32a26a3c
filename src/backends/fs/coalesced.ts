/**
 * Group commit for fsync-like operations: callers that ask for a sync while
 * one is running share the next one, instead of each paying for its own.
 *
 * A caller that arrives while a sync is in flight cannot reuse it (the sync
 * may have started before the caller's write), so it waits for the one that
 * starts after it; everyone arriving meanwhile shares that same next run. At
 * most one run is in flight and one queued, however many callers there are.
 */
export class Coalesced {
  private inFlight: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(private readonly operation: () => Promise<void>) {}

  run(): Promise<void> {
    if (this.inFlight === null) return this.start();
    this.queued ??= this.inFlight
      .catch(() => {})
      .then(() => {
        this.queued = null;
        return this.start();
      });
    return this.queued;
  }

  private start(): Promise<void> {
    const run: Promise<void> = this.operation().finally(() => {
      if (this.inFlight === run) this.inFlight = null;
    });
    this.inFlight = run;
    return run;
  }
}
