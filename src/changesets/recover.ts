/**
 * At start-up, before casket serves a request: every changeset a crashed
 * casket left in the data dir is finished or undone (issue 39, crash-safe).
 * One that decided (intent.json written) is rolled forward — each entry not
 * applied yet is applied (commit.ts applyIntent, idempotent); one that did
 * not is discarded, having written nothing. So a kill -9 at any point leaves
 * every key of a changeset old or every key new.
 *
 * An entry whose key was changed around casket meanwhile (neither the
 * version the changeset replaces nor its new one) cannot be applied: it is
 * logged, and the others are.
 */
import { UNRESTRICTED } from '../s3/access.js';
import type { Services } from '../s3/context.js';
import { applyIntent, type ChangesetEngine } from './commit.js';
import type { ExclusiveHold } from './locks.js';

/** Each a bounded wait (10 s, locks.ts): a minute for another casket's changeset to let go. */
const HOLD_ATTEMPTS = 6;

export interface Recovered {
  rolledForward: string[];
  discarded: string[];
}

export async function recoverChangesets(services: Services, engine: ChangesetEngine): Promise<Recovered> {
  const out: Recovered = { rolledForward: [], discarded: [] };
  for (const { id, intent } of await engine.dir.pending()) {
    if (!intent) {
      await engine.dir.discard(id);
      out.discarded.push(id);
      continue;
    }
    // Recorded as the caller that committed it: its agent, its access key. Its policy allowed every entry when it decided.
    const caller = { requestId: `recover-${id}`, access: UNRESTRICTED, ...(intent.agent !== undefined && { agent: intent.agent }), ...(intent.accessKey !== undefined && { accessKey: intent.accessKey }) };
    // With --state redis the keys may still be held under this changeset's
    // lease (a casket killed less than a lease ago): the same owner takes them
    // over. Held by another casket's changeset: wait for it, a few times.
    let hold: ExclusiveHold | undefined;
    for (let attempt = 1; !hold; attempt++) {
      try {
        hold = await services.gate!.exclusive(intent.entries, id);
      } catch (err) {
        if (attempt >= HOLD_ATTEMPTS) {
          services.log.error({ err, changeset: id }, 'changeset: recovery could not hold its keys; its intent is kept for the next start');
          break;
        }
      }
    }
    if (!hold) continue;
    try {
      const { killAfter: _, ...once } = engine;
      await applyIntent(services, once, caller, intent, hold);
    } catch (err) {
      services.log.error({ err, changeset: id }, 'changeset: recovery could not apply every entry (a key changed around casket?); its intent is kept for the next start');
      continue;
    } finally {
      hold.release();
    }
    services.log.info({ changeset: id, entries: intent.entries.length }, 'changeset rolled forward at start-up');
    out.rolledForward.push(id);
  }
  return out;
}
