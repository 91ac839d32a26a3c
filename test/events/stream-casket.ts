/**
 * The casket test/events/stream.test.ts drives, with these agents and keys
 * (each agent's key bound to it): a casket process (test/helpers/casket.ts);
 * or, with CASKET_TEST_IN_PROCESS set (as vitest.mutate-rooms.config.ts sets
 * it for `npm run mutate:rooms`), casket in this process
 * (test/helpers/in-process.ts), where Stryker's mutants of src/events are.
 * Loaded only then, so a spawned run does not load src at all. `flags`: by
 * their config names.
 */
import { startCasket, type RunningCasket } from '../helpers/casket.js';

export type StreamCasket = Pick<RunningCasket, 'url' | 'admin' | 'agents' | 'keys' | 'stop'>;

export async function startStreamCasket(options: { agents?: string[]; keys?: string[]; flags?: Record<string, string> } = {}): Promise<StreamCasket> {
  const flags = options.flags ?? {};
  const keys = options.keys ?? [];
  if (process.env.CASKET_TEST_IN_PROCESS) {
    const { startInProcess } = await import('../helpers/in-process.js');
    return startInProcess({ agents: options.agents ?? [], keys, flags });
  }
  const args = Object.entries(flags).flatMap(([name, value]) => [`--${name.replace(/[A-Z]/g, (ch) => `-${ch.toLowerCase()}`)}`, value]);
  return startCasket({ agents: options.agents ?? [], keys: Object.fromEntries(keys.map((k) => [k, {}])), args });
}
