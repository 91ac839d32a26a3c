/**
 * "Changed since you read" over S3 (docs/design.md §12): an agent's request
 * that carries `x-casket-changed-since-read: on` is answered with the same
 * header naming the keys it read whole that someone else has changed since
 * (src/changes/since-read.ts, each told once, shared with the MCP reminders):
 * `bucket/key` URL-encoded, comma-separated, at most MAX_KEYS, then `+N more`.
 *
 * Asked for, not sent by default: the reminders are told once per change
 * for the agent, over S3 and MCP alike, so a client that ignores unknown
 * headers (every S3 SDK) would use up reminders the agent never saw; and the
 * look is a state-store round trip a plain S3 request need not pay.
 */
import { changedSinceRead } from '../changes/since-read.js';
import type { StateStore } from '../state/types.js';

export const CHANGED_SINCE_READ_HEADER = 'x-casket-changed-since-read';

/** Keys named in one header; the rest are counted (GET /_casket/agents/{agent}/changes lists them all). */
const MAX_KEYS = 20;

/** Whether a request asks for the header. */
export function wantsChangedSinceRead(headers: Record<string, string | undefined>): boolean {
  return /^(on|1|true)$/i.test(headers[CHANGED_SINCE_READ_HEADER]?.trim() ?? '');
}

/**
 * The header's value, or undefined when nothing changed. `delivered`: the
 * object this response itself delivers (a GetObject), which needs no reminder.
 */
export async function changedSinceReadHeader(state: StateStore, agent: string, delivered?: { bucket: string; key: string }): Promise<string | undefined> {
  const changed = await changedSinceRead(state, agent, delivered);
  if (changed.length === 0) return undefined;
  // encodeURIComponent leaves no comma or space: the list splits on ", " unambiguously.
  const named = changed.slice(0, MAX_KEYS).map((c) => `${encodeURIComponent(c.bucket)}/${c.key.split('/').map(encodeURIComponent).join('/')}`);
  if (changed.length > MAX_KEYS) named.push(`+${changed.length - MAX_KEYS} more`);
  return named.join(', ');
}
