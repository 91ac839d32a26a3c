/**
 * The JSON behind the console's views (docs/design.md §9), for an admin
 * session only (routes.ts checks it first). Each function answers one view:
 *   activity  the write log, newest first, one page at a time (cursor paging:
 *             never the whole log, state/types.ts WriteLogQuery.before);
 *   agents    the agents casket knows of: bound to a credential, or seen in
 *             the newest write-log page;
 *   agent     one agent's read stamps (full / partial / stale, as
 *             /_casket/agents/{agent}/stamps says), its recent writes and
 *             its STS sessions (without their secrets);
 *   object    one key's writes (who made each version, when), which versions
 *             casket retained (so a diff can be shown), and the current one;
 *   diff      between two versions of an object: the unified diff of
 *             /_casket/diff (agent-changes.ts diffFor); the page lays it side
 *             by side too;
 *   setup     backend and its probed capabilities, state store and retention
 *             health (readiness.ts), credentials and their policies, and the
 *             metrics at a glance. Never a secret: a credential shows its
 *             access key id, agent, admin flag and policies only.
 * Refusals, merges and exact retries arrive live through /_casket/events.
 */
import type { Credential } from '../auth/credentials.js';
import type { AuthResult } from '../auth/sigv4.js';
import { diffFor, type EndpointResponse } from '../agent-changes.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { readiness } from '../readiness.js';
import type { Retention } from '../retention/types.js';
import type { Services } from '../s3/context.js';
import type { WriteLogEntry } from '../state/types.js';
import { formatETag } from '../vocabulary/etag.js';

/** What the setup view may show of the configuration: kinds and names, never a key. */
export interface ConsoleSetup {
  backend: 'embedded' | 'upstream';
  /** The upstream's URL (without credentials), when there is one. */
  upstream?: string;
  state: string;
  guard: string;
  agentHeader: string;
  retainBytes: number;
}

export interface ConsoleDeps {
  services: Services;
  metrics: Metrics;
  retention: Retention | undefined;
  /** The credentials in force now (they reload on SIGHUP). */
  credentials: () => readonly Credential[];
  setup: ConsoleSetup;
  log: Logger;
  /** The id before every event in the event log: an object's refusals are replayed from it (/_casket/events?lastEventId=). */
  firstEventId?: string;
}

const quoted = (etag: string | undefined) => (etag === undefined ? null : formatETag(etag, false));
/** The most rows one page carries; the page asks for fewer. */
export const MAX_PAGE = 500;
/** Versions of one key the object view lists from the bucket. */
const HELD_VERSIONS = 100;

function outcomeOf(e: WriteLogEntry): 'write' | 'delete' {
  return e.newETag === undefined ? 'delete' : 'write';
}

function row(e: WriteLogEntry) {
  return {
    at: e.at.toISOString(),
    bucket: e.bucket,
    key: e.key,
    operation: e.operation,
    outcome: outcomeOf(e),
    agent: e.agent ?? null,
    accessKey: e.accessKey ?? null,
    previousETag: quoted(e.previousETag),
    newETag: quoted(e.newETag),
    changeset: e.changeset ?? null,
  };
}

function text(query: URLSearchParams, name: string): string | undefined {
  const v = query.get(name);
  return v === null || v === '' ? undefined : v;
}

/** One page of the write log, with the cursor of the next one (null: the end). */
export async function activity(deps: ConsoleDeps, query: URLSearchParams) {
  // Stryker disable next-line StringLiteral: no limit and an empty one both fall to the default 50 (Number('') is 0)
  const limit = Math.min(Math.max(Number(query.get('limit') ?? '50') || 50, 1), MAX_PAGE);
  const bucket = text(query, 'bucket');
  const key = text(query, 'key');
  const prefix = text(query, 'prefix');
  const agent = text(query, 'agent');
  const before = text(query, 'before');
  const outcome = text(query, 'outcome');
  const entries = await deps.services.state.listWriteLog({
    limit,
    // Stryker disable ConditionalExpression: every store reads a filter given as undefined as no filter (state/memory.ts, sqlite.ts, redis.ts listWriteLog); the spreads only keep the query's type exact
    ...(bucket !== undefined && { bucket }),
    ...(key !== undefined && { key }),
    ...(prefix !== undefined && { prefix }),
    ...(agent !== undefined && { agent }),
    ...(before !== undefined && { before }),
    // Stryker restore ConditionalExpression
  });
  // The outcome filter narrows the page it reads: a page may hold fewer rows, the cursor still moves on.
  const writes = entries.filter((e) => outcome === undefined || outcomeOf(e) === outcome).map(row);
  const next = entries.length === limit ? (entries.at(-1)?.cursor ?? null) : null;
  return { writes, next };
}

/** How far back the agents view looks for agents that have no bound key. */
const AGENTS_WINDOW = 1000;

export async function agents(deps: ConsoleDeps) {
  const byName = new Map<string, { agent: string; keys: string[]; writes: number; lastWrite: string | null }>();
  const get = (agent: string) => {
    let a = byName.get(agent);
    if (!a) byName.set(agent, (a = { agent, keys: [], writes: 0, lastWrite: null }));
    return a;
  };
  for (const c of deps.credentials()) if (c.agent !== undefined) get(c.agent).keys.push(c.accessKeyId);
  for (const e of await deps.services.state.listWriteLog({ limit: AGENTS_WINDOW })) {
    if (e.agent === undefined) continue;
    const a = get(e.agent);
    a.writes++;
    a.lastWrite ??= e.at.toISOString();
  }
  // Stryker disable next-line EqualityOperator: agents are keyed by name, so no two compare equal
  return { window: AGENTS_WINDOW, agents: [...byName.values()].sort((x, y) => (x.agent < y.agent ? -1 : 1)) };
}

export async function agent(deps: ConsoleDeps, name: string) {
  const { services } = deps;
  const entries = await services.state.listStamps(name);
  const stamps = await Promise.all(
    entries.map(async ({ bucket, key, stamp }) => {
      // Stryker disable next-line ArrowFunction: a key that is gone is null or undefined alike below (current?., current ?)
      const current = await services.backend.headObject(bucket, key).catch(() => null);
      const stale = current?.etag !== stamp.etag;
      return {
        bucket,
        key,
        etag: quoted(stamp.etag),
        readAt: new Date(stamp.at).toISOString(),
        // As the guard reads a stamp (docs/design.md §4): stale wins, then partial.
        state: stale ? 'stale' : stamp.full ? 'full' : 'partial',
        currentETag: current ? quoted(current.etag) : null,
        currentWriter: current?.writer ?? null,
      };
    }),
  );
  const writes = (await services.state.listWriteLog({ agent: name, limit: 20 })).map(row);
  const keys = deps.credentials().filter((c) => c.agent === name).map((c) => c.accessKeyId);
  // STS sessions (docs/design.md §7): who minted each and when it expires; never its secret or token.
  const now = Date.now();
  const sessions = (await services.state.listSessions(name)).map((s) => ({
    accessKeyId: s.accessKeyId,
    sessionName: s.sessionName,
    issuedBy: s.issuedBy,
    expiresAt: new Date(s.expiresAt).toISOString(),
    // Stryker disable next-line EqualityOperator: a session that expires in this very millisecond; the view takes no clock a test could stop there
    state: s.revoked ? 'revoked' : s.expiresAt <= now ? 'expired' : 'active',
  }));
  return { agent: name, keys, stamps, writes, sessions, ...(deps.firstEventId !== undefined && { refusalsFrom: deps.firstEventId }) };
}

export async function object(deps: ConsoleDeps, bucket: string, key: string) {
  const { services } = deps;
  // Stryker disable next-line ArrowFunction: a key that is gone is null or undefined alike below (current ?)
  const current = await services.backend.headObject(bucket, key).catch(() => null);
  const writes = await services.state.listWriteLog({ bucket, key, limit: 50 });
  const versions = await Promise.all(
    writes.map(async (e) => ({
      ...row(e),
      // Retained content is what a diff can be drawn from (docs/design.md §6).
      retained: e.newETag !== undefined && services.retainer !== undefined ? (await services.retainer.get({ bucket, key, etag: e.newETag }).catch(() => undefined)) !== undefined : false,
    })),
  );
  return {
    bucket,
    key,
    current: current ? { etag: quoted(current.etag), size: current.size, lastModified: current.lastModified.toISOString(), writer: current.writer ?? null } : null,
    versions,
    held: await heldVersions(deps, bucket, key),
    ...(deps.firstEventId !== undefined && { refusalsFrom: deps.firstEventId }),
  };
}

/** Versions the bucket itself holds (S3 versioning, docs/design.md §10), newest first: one page, never the whole history. */
async function heldVersions(deps: ConsoleDeps, bucket: string, key: string) {
  const listed = await deps.services.backend.listObjectVersions?.(bucket, { prefix: key, maxKeys: HELD_VERSIONS }).catch(() => undefined);
  return (listed?.entries ?? [])
    .filter((v) => v.key === key)
    .map((v) => ({
      versionId: v.versionId,
      isLatest: v.isLatest,
      lastModified: v.lastModified.toISOString(),
      deleteMarker: v.info === undefined,
      ...(v.info && { etag: quoted(v.info.etag), size: v.info.size }),
      writer: v.writer ?? v.info?.writer ?? null,
    }));
}

/** The diff, as /_casket/diff answers it, for the admin the session stands for. */
export async function diff(deps: ConsoleDeps, credential: Credential, query: URLSearchParams): Promise<EndpointResponse> {
  // Stryker disable next-line BooleanLiteral,ArrayDeclaration: diffFor reads only the credential of the caller (agent-changes.ts mayRead); the rest is the shape AuthResult asks for
  const auth: AuthResult = { credential, presigned: false, payloadMode: 'unsigned', signedHeaders: [], region: deps.services.region };
  return diffFor(auth, deps.services, query);
}

/** An upstream URL as the page may show it: a user or password written into it stays out. */
function withoutUserinfo(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    // Stryker disable next-line StringLiteral: config.ts refuses an --upstream that is not a URL, so this is never reached
    return '(not a URL)';
  }
}

export async function setup(deps: ConsoleDeps) {
  const { services, metrics } = deps;
  const ready = await readiness({ backend: services.backend, state: services.state, retention: deps.retention }, deps.log);
  const probe = (services.backend as { capabilities?: () => Promise<unknown> }).capabilities;
  const capabilities = probe ? await probe.call(services.backend).catch(() => null) : null;
  const credentials = deps.credentials().map((c) => ({
    accessKeyId: c.accessKeyId,
    agent: c.agent ?? null,
    admin: c.admin === true,
    policies: c.policies ?? [],
  }));
  const figures = await metrics.registry.getMetricsAsJSON();
  const sum = (name: string, by?: string) => {
    const m = figures.find((f) => f.name === name);
    const out: Record<string, number> = {};
    let total = 0;
    for (const v of (m?.values ?? []) as Array<{ value: number; labels: Record<string, string | number> }>) {
      total += v.value;
      if (by) out[String(v.labels[by])] = (out[String(v.labels[by])] ?? 0) + v.value;
    }
    return by ? { total, by: out } : { total };
  };
  return {
    setup: { ...deps.setup, ...(deps.setup.upstream !== undefined && { upstream: withoutUserinfo(deps.setup.upstream) }) },
    readiness: ready.body,
    capabilities,
    credentials,
    metrics: {
      requests: sum('casket_requests_total', 'status'),
      refusals: sum('casket_refusals_total', 'reason'),
      accessDenied: sum('casket_access_denied_total', 'reason'),
      bytesReceived: sum('casket_bytes_received_total'),
      bytesSent: sum('casket_bytes_sent_total'),
    },
  };
}
