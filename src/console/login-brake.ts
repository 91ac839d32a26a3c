/**
 * A brake on console login guesses (issue 37, finding 7): failed logins are
 * counted per (access key, client address), per client address and per
 * access key; past a few free failures each further attempt must wait,
 * doubling from BASE_MS up to a cap, and is refused with 429 and Retry-After
 * (RFC 6585 §4, RFC 9110 §10.2.3) before its secret is even compared.
 *
 * Why three counters, and why their caps differ: one address guessing one
 * key is the common attack and is slowed soonest (5 free, up to 5 minutes).
 * One address trying many keys is slowed after 20. Many addresses guessing
 * one key would, if that counter refused as hard, let anyone lock the real
 * admin out; it waits longest to start (50 free) and for at most a minute.
 * The admin's own address and key pair is never braked by another address's
 * failures beyond that minute, and a success clears its pair and address.
 * A quiet FORGET_MS after its last failure a counter starts over.
 *
 * Counted whatever the key: an unknown key is braked as a real one, so 429s
 * do not tell which keys exist. Kept in this process's memory, at most
 * MAX_ENTRIES per kind (the least recently failed forgotten first): several
 * replicas each keep their own count, so a guesser spread over N caskets gets
 * N times the budget, still braked on each.
 */

interface Counter {
  failures: number;
  /** Epoch ms before which an attempt is refused. */
  until: number;
  /** Epoch ms of the last failure. */
  last: number;
}

interface Rule {
  free: number;
  capMs: number;
}

export const BASE_MS = 1000;
const FORGET_MS = 15 * 60_000;
const MAX_ENTRIES = 10_000;

const RULES = {
  pair: { free: 5, capMs: 5 * 60_000 },
  address: { free: 20, capMs: 5 * 60_000 },
  key: { free: 50, capMs: 60_000 },
} satisfies Record<string, Rule>;

type Kind = keyof typeof RULES;

export class LoginBrake {
  private readonly counters: Record<Kind, Map<string, Counter>> = { pair: new Map(), address: new Map(), key: new Map() };

  constructor(private readonly now: () => number = Date.now) {}

  private ids(accessKeyId: string, address: string): Record<Kind, string> {
    return { pair: `${accessKeyId}\n${address}`, address, key: accessKeyId };
  }

  /** Milliseconds this attempt must still wait (0: go ahead). */
  wait(accessKeyId: string, address: string): number {
    const now = this.now();
    let wait = 0;
    for (const [kind, id] of Object.entries(this.ids(accessKeyId, address)) as [Kind, string][]) {
      const c = this.counters[kind].get(id);
      // Stryker disable next-line ConditionalExpression: dropping a forgotten counter only frees memory; its wait has run out, and failed() starts it over by its own check.
      if (c && now - c.last > FORGET_MS) this.counters[kind].delete(id);
      else if (c) wait = Math.max(wait, c.until - now);
    }
    return wait;
  }

  failed(accessKeyId: string, address: string): void {
    const now = this.now();
    for (const [kind, id] of Object.entries(this.ids(accessKeyId, address)) as [Kind, string][]) {
      const map = this.counters[kind];
      const rule = RULES[kind];
      const old = map.get(id);
      const failures = (old && now - old.last <= FORGET_MS ? old.failures : 0) + 1;
      const over = failures - rule.free;
      const until = over >= 0 ? now + Math.min(BASE_MS * 2 ** Math.min(over, 30), rule.capMs) : 0;
      // Re-inserted so the map's order is least recently failed first.
      map.delete(id);
      map.set(id, { failures, until, last: now });
      if (map.size > MAX_ENTRIES) map.delete(map.keys().next().value!);
    }
  }

  /** A login succeeded: this address and this pair start over (the key's own count does not, so a spread guesser is still slowed). */
  succeeded(accessKeyId: string, address: string): void {
    const ids = this.ids(accessKeyId, address);
    this.counters.pair.delete(ids.pair);
    this.counters.address.delete(ids.address);
  }
}
