/**
 * The notification configuration (`--notifications FILE`, docs/design.md §9):
 * which URLs get a POST of each event record, and how hard casket tries.
 *
 *   {
 *     "webhooks": [
 *       { "name": "ci", "url": "https://ci.example.com/casket", "secret": "<random, 32+ chars>",
 *         "buckets": ["docs"], "prefix": "reports/", "events": ["s3:ObjectCreated:", "casket:WriteRefused"] }
 *     ],
 *     "timeoutMs": 5000, "attempts": 8, "backoffMs": 1000, "maxBackoffMs": 60000
 *   }
 *
 * `events` are event-name prefixes (AWS's `s3:ObjectCreated:*` form works
 * too); without it a target gets the object changes only (`s3:`), not
 * casket's refusals and retries. `name` keys the target's delivery cursor
 * and its counters; it defaults to the URL without its query. The secret
 * signs each delivery (webhooks.ts) and is never logged.
 */
import type { EventFilter } from './record.js';

export interface WebhookTarget extends EventFilter {
  name: string;
  url: string;
  secret: string;
}

export interface Notifications {
  webhooks: WebhookTarget[];
  /** Per delivery attempt: no answer by then is a failure. */
  timeoutMs: number;
  /** Attempts per event before it is dropped (logged, counted). */
  attempts: number;
  /** First retry delay; doubled per attempt up to maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
}

export class NotificationsError extends Error {}

export const NO_NOTIFICATIONS: Notifications = { webhooks: [], timeoutMs: 5000, attempts: 8, backoffMs: 1000, maxBackoffMs: 60_000 };

function strings(value: unknown, where: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) throw new NotificationsError(`${where} must be a list of non-empty strings`);
  return value as string[];
}

function positive(doc: Record<string, unknown>, name: keyof Notifications, source: string): number {
  const v = doc[name];
  if (v === undefined) return NO_NOTIFICATIONS[name] as number;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new NotificationsError(`${source}: "${name}" must be a positive integer`);
  return v;
}

/** Validates a parsed notifications document; messages name the place, never a secret. */
export function parseNotifications(doc: unknown, source: string): Notifications {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new NotificationsError(`${source}: expected {"webhooks": [...]}`);
  const d = doc as Record<string, unknown>;
  const known = new Set(['webhooks', 'timeoutMs', 'attempts', 'backoffMs', 'maxBackoffMs']);
  for (const k of Object.keys(d)) if (!known.has(k)) throw new NotificationsError(`${source}: unknown setting "${k}" (known: ${[...known].join(', ')})`);
  if (!Array.isArray(d.webhooks)) throw new NotificationsError(`${source}: expected {"webhooks": [...]}`);
  const names = new Set<string>();
  const webhooks = d.webhooks.map((w, i): WebhookTarget => {
    const where = `${source}: webhooks[${i}]`;
    if (w === null || typeof w !== 'object') throw new NotificationsError(`${where} must be an object`);
    const e = w as Record<string, unknown>;
    for (const k of Object.keys(e)) if (!['name', 'url', 'secret', 'buckets', 'prefix', 'events'].includes(k)) throw new NotificationsError(`${where}: unknown field "${k}"`);
    if (typeof e.url !== 'string' || !URL.canParse(e.url) || !['http:', 'https:'].includes(new URL(e.url).protocol)) throw new NotificationsError(`${where}.url must be an http or https URL`);
    // Unsigned deliveries would let anyone who finds the URL forge events.
    if (typeof e.secret !== 'string' || e.secret.length < 16) throw new NotificationsError(`${where}.secret must be a string of at least 16 characters`);
    const url = new URL(e.url);
    const name = e.name ?? `${url.origin}${url.pathname}`;
    if (typeof name !== 'string' || name === '') throw new NotificationsError(`${where}.name must be a non-empty string`);
    if (names.has(name)) throw new NotificationsError(`${where}: name "${name}" is used twice`);
    names.add(name);
    if (e.prefix !== undefined && typeof e.prefix !== 'string') throw new NotificationsError(`${where}.prefix must be a string`);
    const buckets = strings(e.buckets, `${where}.buckets`);
    const events = strings(e.events, `${where}.events`) ?? ['s3:'];
    return { name, url: e.url, secret: e.secret, events, ...(buckets && { buckets }), ...(typeof e.prefix === 'string' && e.prefix !== '' && { prefix: e.prefix }) };
  });
  return {
    webhooks,
    timeoutMs: positive(d, 'timeoutMs', source),
    attempts: positive(d, 'attempts', source),
    backoffMs: positive(d, 'backoffMs', source),
    maxBackoffMs: positive(d, 'maxBackoffMs', source),
  };
}
