/**
 * Builds casket from its parts and serves it: state store → backend → guard →
 * Node HTTP(S) server. The only module that knows the socket and Hono: an S3
 * request goes from the socket straight to s3/handle.ts as plain values, and
 * its S3Response back with backpressure; casket's own endpoints (/_casket/*:
 * health, metrics, introspection, diffs and changes) are a Hono app.
 *
 * `Expect: 100-continue` (boto3 and awscli send it on every PUT): Node answers
 * it automatically unless a 'checkContinue' listener exists, so casket
 * registers one and sends 100 only when a handler asks for the body — after
 * auth and preconditions passed (docs/design.md §1). Any other Expect value is
 * ignored, as S3 does (Node would answer 417 Expectation Failed).
 */
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdirSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { staticCredentials, type Credential } from './auth/credentials.js';
import { signedRequestFromNode } from './auth/sigv4.js';
import { adminSigner, agentStamps, revokeSession, writeLog, type AdminResponse } from './admin.js';
import { isS3Error, S3Error } from './vocabulary/errors.js';
import { openFsBackend } from './backends/fs/index.js';
import { openS3Backend } from './backends/s3/index.js';
import type { Backend } from './backends/types.js';
import { parseJsonFile, type Config } from './config.js';
import { Guard } from './guard/guard.js';
import { createLogger, type Logger } from './log.js';
import { readiness, ReadinessLog, type Readiness } from './readiness.js';
import { Metrics } from './metrics.js';
import type { Services } from './s3/context.js';
import { expireObjects } from './s3/lifecycle-expiration.js';
import { handleS3, newRequestId, type HandleOptions, type Outcome, type RawRequest } from './s3/handle.js';
import { errorResponse, OBJECT_BODY_HEADERS, type S3Response } from './s3/respond.js';
import { endTimedOut, watchBody } from './body-timeout.js';
import { MemoryStateStore } from './state/memory.js';
import { SqliteStateStore } from './state/sqlite.js';
import type { StateStore } from './state/types.js';
import { failingAsUnavailable } from './state/unavailable.js';
import { FileRetention } from './retention/files.js';
import { Retainer } from './retention/retainer.js';
import type { Retention } from './retention/types.js';
import { agentChanges, casketDiff, casketMerge, type EndpointResponse } from './agent-changes.js';
import { openMcpDoor } from './mcp-door.js';
import type { EventLog } from './events/log.js';
import { MemoryEventLog } from './events/memory-log.js';
import { EventPublisher } from './events/publish.js';
import { SqliteEventLog } from './events/sqlite-log.js';
import { EVENTS_PATH, eventsEndpoint, type Authorize } from './events/stream.js';
import { parseNotifications } from './events/notifications.js';
import { Webhooks } from './events/webhooks.js';
import type { Refusal } from './guard/refusal.js';
import type { RefusalContext } from './guard/guard.js';
import type { WriteNotice } from './s3/context.js';
import { refusalError } from './s3/refusal-error.js';
import { MCP_PATH, mcpEndpoint, type McpHttpAnswer } from './mcp/http.js';
import { requestOrigin, resourceMetadataUrl } from './oauth/metadata.js';
import { oauthApp } from './oauth/routes.js';
import { LoginBrake } from './console/login-brake.js';
import { fromNode, fromWeb, toWeb } from './mcp/http-adapters.js';
import { consoleApp, liveSession } from './console/routes.js';
import { ROLLBACK_PATH, rollbackEndpoint } from './rollback/endpoint.js';
import { KeyGate, type Gate } from './changesets/locks.js';
import { ChangesetDir } from './changesets/intent.js';
import type { ChangesetEngine } from './changesets/commit.js';
import { recoverChangesets } from './changesets/recover.js';
import { COMMIT_PATH, commitEndpoint } from './changesets/endpoint.js';
import { Drain } from './drain.js';

export interface Casket {
  /** e.g. http://127.0.0.1:9000 */
  url: string;
  port: number;
  app: Hono<{ Bindings: NodeBindings }>;
  services: Services;
  metrics: Metrics;
  /** What /_casket/ready answers (readiness.ts); failures are logged once per change. */
  readiness(): Promise<Readiness>;
  /** Replaces the static credentials and their policies for every request from now on (SIGHUP, a changed file). */
  reloadCredentials(credentials: Credential[]): void;
  /** Reads --notifications again and restarts the webhook workers (SIGHUP, a changed file); throws on a bad file, keeping the old targets. */
  reloadNotifications(): Promise<number>;
  /**
   * Stops accepting connections, lets requests in flight finish for up to
   * `drainMs` (default: none, close every connection now), then closes the
   * backend and the stores.
   */
  close(drainMs?: number): Promise<void>;
}

type NodeBindings = { incoming?: IncomingMessage; outgoing?: ServerResponse };

function requestHasBody(headers: Record<string, string>): boolean {
  return (headers['content-length'] !== undefined && headers['content-length'] !== '0') || headers['transfer-encoding'] !== undefined;
}

function writeToNode(res: S3Response, incoming: IncomingMessage, outgoing: ServerResponse, headers: Record<string, string>, done: (bytes: number, complete: boolean) => void): void {
  const body = res.body;
  res.onSend?.();
  const finish = (complete: boolean) => {
    void res.onFinish?.(complete);
    done(Number(res.headers['content-length'] ?? 0), complete);
  };
  if (outgoing.destroyed || outgoing.headersSent) {
    if (body instanceof Readable) body.destroy();
    finish(false);
    return;
  }
  // A body the client is still sending (or, after Expect: 100-continue, never
  // will send) would be read as the next request: close instead (RFC 9112 §9.6).
  if (requestHasBody(headers) && !incoming.complete) res.headers.connection = 'close';
  if (typeof body === 'string' || Buffer.isBuffer(body)) res.headers['content-length'] ??= String(Buffer.byteLength(body));
  try {
    outgoing.writeHead(res.status, res.headers);
  } catch {
    // A header value that cannot go on the wire (e.g. a response-* override with a control character).
    if (body instanceof Readable) body.destroy();
    outgoing.writeHead(400, { 'content-type': 'text/plain', connection: 'close' });
    outgoing.end('InvalidArgument: a response header value is not valid');
    finish(false);
    return;
  }
  if (body instanceof Readable) {
    // pipe rather than stream.pipeline: same backpressure, without an
    // AbortController and a DOMException per response (measured: ~5% of a small GET).
    body.once('error', () => outgoing.destroy());
    outgoing.once('close', () => {
      if (!body.readableEnded) body.destroy();
      finish(outgoing.writableFinished);
    });
    body.pipe(outgoing);
  } else {
    outgoing.end(body);
    outgoing.once('close', () => finish(outgoing.writableFinished));
  }
}

/*
 * The Redis modules load only when the state is shared: ioredis adds ~9 MiB
 * to a process's resident memory (measured: an import of it, Node 20), which a
 * casket on its own data dir never uses. See also mcp/http.ts.
 */
const redisStateStore = async () => (await import('./state/redis.js')).RedisStateStore;
const redisRetention = async () => (await import('./retention/redis.js')).RedisRetention;
const redisEventLog = async () => (await import('./events/redis-log.js')).RedisEventLog;

async function createState(config: Config): Promise<StateStore> {
  const limits = { ttlMs: config.stateTtlSeconds * 1000, maxEntries: config.stateMaxEntries };
  switch (config.state) {
    case 'memory':
      return new MemoryStateStore(limits);
    case 'sqlite':
      return failingAsUnavailable(new SqliteStateStore(join(config.dataDir, 'state.db'), limits));
    case 'redis':
      return failingAsUnavailable(await (await redisStateStore()).connect(config.redis!.target, limits, { replication: config.redis!.replication }));
  }
}

/** Retained versions (docs/design.md §6) where every replica sees them: Redis when the state is shared, else the data dir. */
async function createRetention(config: Config): Promise<Retention> {
  const limits = { maxBytes: config.retainBytes, ttlMs: config.stateTtlSeconds * 1000 };
  if (config.state === 'redis') return (await redisRetention()).connect(config.redis!.target, limits);
  return new FileRetention(join(config.dataDir, 'retained'), limits);
}

/** The event log beside the state store (events/log.ts): shared by every casket when the state is. */
async function createEventLog(config: Config): Promise<EventLog> {
  switch (config.state) {
    case 'memory':
      return new MemoryEventLog();
    case 'sqlite':
      return new SqliteEventLog(join(config.dataDir, 'events.db'), config.stateTtlSeconds * 1000);
    case 'redis':
      return (await redisEventLog()).connect(config.redis!.target);
  }
}

/** A refusal answered, as the event stream tells it. */
function refusalNotice(refusal: Refusal, context: RefusalContext): WriteNotice {
  const error = refusalError(refusal, false);
  return {
    kind: 'refused',
    operation: context.operation ?? 'Unknown',
    bucket: refusal.bucket,
    key: refusal.key,
    requestId: context.requestId ?? '',
    ...(context.agent !== undefined && { agent: context.agent }),
    ...(context.accessKey !== undefined && { accessKey: context.accessKey }),
    reason: refusal.reason,
    status: error.status,
    code: error.code,
    ...(refusal.current && { currentETag: refusal.current.etag }),
  };
}

/**
 * The key gate that orders changesets against reads and single writes
 * (src/changesets/): this process's when the state is its own, Redis's when
 * caskets share it (shared-gate.ts). CASKET_TEST_GATE_LEASE_MS shortens the
 * lease for test/changesets/shared-state.test.ts only; never set in production.
 */
async function createGate(config: Config, log: Logger): Promise<Gate> {
  if (config.state !== 'redis') return new KeyGate();
  const lease = process.env.CASKET_TEST_GATE_LEASE_MS;
  return (await import('./changesets/shared-gate.js')).RedisKeyGate.connect(config.redis!.target, log, lease !== undefined ? { leaseMs: Number(lease) } : {});
}

/** Pre-images of agent writes for rollback (--keep-pre-images): retention with their own budget and age. */
async function createPreImages(config: Config): Promise<Retention> {
  const limits = { maxBytes: config.preImageBytes, ttlMs: config.preImageTtlSeconds * 1000 };
  if (config.state === 'redis') return (await redisRetention()).connect(config.redis!.target, limits, { prefix: 'casket:pre-images:' });
  return new FileRetention(join(config.dataDir, 'pre-images'), limits);
}

/** `casket:<first path segment>`, e.g. /_casket/agents/bob/changes → casket:agents-changes. */
function casketOperation(path: string): string {
  const parts = path.split('/').slice(2);
  const name = parts[0] === 'agents' ? `agents-${parts[2] ?? ''}` : (parts[0] ?? '');
  return `casket:${/^[a-z-]+$/.test(name) ? name : 'unknown'}`;
}

function createBackend(config: Config, state: StateStore, metrics: Metrics, log: Logger): Backend {
  if (config.upstream) {
    const upstream = config.upstream;
    return openS3Backend({
      ...upstream,
      state,
      spoolDir: join(config.dataDir, 'spool'),
      // Replicas share the upstream: writes the upstream cannot make atomic are refused.
      replicas: upstream.replicas,
      observe: (method, seconds) => metrics.upstream.observe({ method }, seconds),
      onProbe: (result) => log.info({ upstream: upstream.url, capabilities: result.capabilities, note: result.note }, 'upstream conditional writes probed'),
      onProbeError: (error) => log.warn({ upstream: upstream.url, err: error }, 'upstream probe failed; retried on the next conditional write'),
    });
  }
  const backend = openFsBackend({
    dataDir: join(config.dataDir, 'store'),
    fsync: config.fsync,
    minPartSize: config.minPartSize,
    multipartAbandonAfterMs: config.multipartAbandonAfterSeconds * 1000,
    onAbandoned: (aborted, error) => {
      if (error !== undefined) log.error({ err: error }, 'could not abort abandoned multipart uploads');
      for (const a of aborted) log.info({ bucket: a.bucket, key: a.key, uploadId: a.uploadId, rule: a.why }, 'aborted an abandoned multipart upload');
    },
  });
  metrics.incompleteUploadBytes = () => backend.incompleteUploadBytes();
  return backend;
}

export async function startCasket(config: Config, credentials: Credential[], log: Logger = createLogger(config.logLevel, config.logFlushMs)): Promise<Casket> {
  mkdirSync(config.dataDir, { recursive: true });
  const metrics = new Metrics();
  const state = await createState(config);
  const backend = createBackend(config, state, metrics, log);
  const eventLog = await createEventLog(config);
  const events = new EventPublisher(eventLog, config.region, log);
  const webhooks = new Webhooks(eventLog, {
    pushed: (target) => metrics.webhookPushed.inc({ target }),
    failed: (target) => metrics.webhookFailed.inc({ target }),
    dropped: (target) => metrics.webhookDropped.inc({ target }),
  }, log, randomUUID());
  const reloadNotifications = async () => {
    if (config.notificationsFile === undefined) return 0;
    const file = config.notificationsFile;
    const notifications = parseNotifications(parseJsonFile(readFileSync(file, 'utf8'), file), file);
    await webhooks.configure(notifications);
    return notifications.webhooks.length;
  };
  await reloadNotifications();
  const guard = new Guard(state, {
    mode: config.guard,
    agentWrites: config.agentWrites,
    onRefusal: (reason, enforced, { refusal, ...context }) => {
      metrics.refusals.inc({ reason, enforced: String(enforced) });
      log.info({ ...context, reason, enforced }, enforced ? 'write refused' : 'write would be refused (observe mode)');
      if (refusal) void events.publish(refusalNotice(refusal, context));
    },
  });
  const retention = config.retainMaxSize > 0 ? await createRetention(config) : undefined;
  const preImages = config.keepPreImages ? await createPreImages(config) : undefined;
  if (retention) metrics.retainedBytes = () => retention.bytes();
  const services: Services = {
    backend, guard, state, region: config.region, log,
    ...(retention && { retainer: new Retainer(retention, config.retainMaxSize, log) }),
    ...(preImages && { preImages: new Retainer(preImages, config.preImageMaxSize, log) }),
    diffMaxBytes: config.diffMaxBytes,
    events,
    gate: await createGate(config, log),
  };
  // Changesets (src/changesets/): staged in the data dir; any a crash left are finished or undone before a request is served.
  const killAfter = process.env.CASKET_TEST_CHANGESET_KILL_AFTER;
  const changesets: ChangesetEngine = { dir: new ChangesetDir(join(config.dataDir, 'changesets')), ...(killAfter !== undefined && { killAfter: Number(killAfter) }) };
  const recovered = await recoverChangesets(services, changesets);
  if (recovered.discarded.length > 0) log.info({ changesets: recovered.discarded }, 'changesets that had not decided were discarded at start-up (nothing of them was written)');
  // Lifecycle Expiration (embedded store): the backend's sweeper judges, the guarded write path deletes.
  backend.setExpirer?.(async (judge) => {
    try {
      for (const o of await expireObjects(services, judge(), `lifecycle-${newRequestId()}`)) {
        log.info({ bucket: o.bucket, key: o.key, etag: o.etag, rule: o.ruleId, outcome: o.outcome }, o.outcome === 'expired' ? 'lifecycle expiration: object expired' : 'lifecycle expiration: object changed since judged, kept');
      }
    } catch (error) {
      log.error({ err: error }, 'lifecycle expiration: sweep failed');
    }
  });
  const options: HandleOptions = {
    lookup: staticCredentials(credentials),
    anonymous: config.anonymous,
    ...(config.domain !== undefined && { domain: config.domain }),
    agentHeader: config.agentHeader,
    etagSuffix: config.etagSuffix,
    stsMinDurationSeconds: config.stsMinDurationSeconds,
  };

  const record = (outcome: Outcome, started: bigint, complete: boolean, bytesOut: number, bytesIn: number) => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const operation = outcome.operation ?? 'Unknown';
    metrics.requests.inc({ operation, status: String(outcome.response.status) });
    metrics.duration.observe({ operation }, seconds);
    if (complete) metrics.bytesSent.inc(bytesOut);
    metrics.bytesReceived.inc(bytesIn);
    const line = {
      requestId: outcome.requestId,
      operation,
      bucket: outcome.bucket,
      key: outcome.key,
      agent: outcome.agent,
      accessKey: outcome.accessKey,
      status: outcome.response.status,
      ...(outcome.error && { error: outcome.error.code, reason: outcome.error.headers['x-casket-reason'] }),
      // What the client is not told (state/unavailable.ts): why the state store failed.
      ...(outcome.error?.cause instanceof Error && { cause: outcome.error.cause.message }),
      ms: Math.round(seconds * 1000 * 10) / 10,
      ...(!complete && { aborted: true }),
      // Policy refusals (docs/design.md §7): which action on which resource, and why.
      ...(outcome.denials && { denied: outcome.denials }),
    };
    for (const d of outcome.denials ?? []) metrics.accessDenied.inc({ reason: d.reason, action: d.action });
    if (outcome.internal) log.error({ ...line, err: outcome.internal }, 'request failed');
    else log.info(line, 'request');
  };

  const app = new Hono<{ Bindings: NodeBindings }>();
  // casket's own endpoints are logged and counted like S3 requests: one line
  // each, operation named after the path (diff, merge, changes, writes...).
  app.use('/_casket/*', async (c, next) => {
    const started = process.hrtime.bigint();
    await next();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const operation = casketOperation(c.req.path);
    metrics.requests.inc({ operation, status: String(c.res.status) });
    metrics.duration.observe({ operation }, seconds);
    // Health, readiness and metrics are polled every few seconds: counted, logged at debug.
    const routine = operation === 'casket:health' || operation === 'casket:ready' || operation === 'casket:metrics';
    log[routine ? 'debug' : 'info']({ operation, path: c.req.path, status: c.res.status, ms: Math.round(seconds * 1000 * 10) / 10 }, 'request');
  });
  // Diffs, merges and changes carry object text: served as S3 serves object
  // bodies (s3/respond.ts), unless a page of casket's own set its policy (the console).
  app.use('/_casket/*', async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(OBJECT_BODY_HEADERS)) if (!c.res.headers.has(name)) c.res.headers.set(name, value);
  });
  // Liveness: the process answers. Readiness (readiness.ts): it can serve writes.
  app.get('/_casket/health', (c) => c.json({ status: 'ok' }));
  const readinessLog = new ReadinessLog(log);
  const ready = () => readiness({ backend, state, retention }, readinessLog);
  app.get('/_casket/ready', async (c) => {
    const r = await ready();
    return c.json(r.body, r.status);
  });
  app.get('/_casket/metrics', async (c) => c.text(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType }));
  const admin = async (c: { env?: NodeBindings; json: (body: unknown, status: 200 | 403 | 404 | 500) => Response }, run: (req: ReturnType<typeof signedRequestFromNode>) => Promise<AdminResponse>) => {
    const incoming = c.env?.incoming;
    if (!incoming) return c.json({ error: 'introspection needs a socket' }, 500);
    const req = signedRequestFromNode(incoming.method ?? 'GET', incoming.url ?? '/', incoming.rawHeaders);
    try {
      const res = await run(req);
      return c.json(res.body, res.status === 404 ? 404 : 200);
    } catch (e) {
      if (isS3Error(e)) return c.json({ error: e.code, message: e.message }, 403);
      log.error({ err: e }, 'introspection failed');
      return c.json({ error: 'InternalError' }, 500);
    }
  };
  app.get('/_casket/agents/:agent/stamps', (c) => admin(c, (req) => agentStamps(req, options.lookup, services, c.req.param('agent'))));
  app.delete('/_casket/sessions/:accessKeyId', (c) => admin(c, (req) => revokeSession(req, options.lookup, services, c.req.param('accessKeyId'))));
  app.get('/_casket/writes', (c) => admin(c, (req) => writeLog(req, options.lookup, services, new URL(c.req.url).searchParams)));
  // What changed, and merging (docs/design.md §6): diffs, merges with markers, and the per-agent changes feed.
  const changes = async (c: { env?: NodeBindings; req: { param(name: string): string }; body: (data: string, status: 200, headers: Record<string, string>) => Response }, run: (req: ReturnType<typeof signedRequestFromNode>, query: URLSearchParams) => Promise<EndpointResponse>) => {
    const incoming = c.env?.incoming;
    let res: EndpointResponse;
    if (!incoming) res = { status: 500, body: { error: 'InternalError', message: 'needs a socket' } };
    else {
      const req = signedRequestFromNode(incoming.method ?? 'GET', incoming.url ?? '/', incoming.rawHeaders);
      res = await run(req, new URLSearchParams(req.rawQuery)).catch((e: unknown) => {
        // The status S3 gives the code (SignatureDoesNotMatch, AccessDenied: 403), as on every S3 path.
        if (isS3Error(e)) return { status: e.status, body: { error: e.code, message: e.message } };
        log.error({ err: e }, 'changes endpoint failed');
        return { status: 500, body: { error: 'InternalError' } };
      });
    }
    const text = typeof res.body === 'string';
    return c.body(text ? (res.body as string) : JSON.stringify(res.body), res.status as 200, { 'content-type': text ? (res.contentType ?? 'text/plain; charset=utf-8') : 'application/json', ...res.headers });
  };
  // Rollback of one agent's writes (docs/design.md §10): src/rollback/endpoint.ts.
  app.post(ROLLBACK_PATH, async (c) => {
    const res = await rollbackEndpoint(c.env?.incoming, () => c.req.arrayBuffer(), services, options, changesets);
    return c.json(res.body, res.status as 200);
  });
  // Changesets over HTTP (issue 39): src/changesets/endpoint.ts.
  app.post(COMMIT_PATH, async (c) => {
    const res = await commitEndpoint(c.env?.incoming, services, changesets, options.lookup, options.agentHeader);
    return c.json(res.body, res.status as 200);
  });
  app.get('/_casket/diff', (c) => changes(c, (req, q) => casketDiff(req, options.lookup, services, q)));
  app.get('/_casket/merge', (c) => changes(c, (req, q) => casketMerge(req, options.lookup, services, q)));
  app.get('/_casket/agents/:agent/changes', (c) => changes(c, (req, q) => agentChanges(req, options.lookup, services, c.req.param('agent'), q)));
  // The event stream (docs/design.md §9): admin credentials only, SigV4-signed
  // by programs, or the console's session cookie (a browser's EventSource cannot sign).
  // A stream holds while its credential does (events/stream.ts): the same key
  // and secret still admin, or the session not expired nor logged out anywhere.
  // A refusal says why: the signature's own error, or the key is no admin's.
  const authorizeEvents: Authorize = async (request) => {
    const signer = adminSigner(request, options.lookup);
    if (typeof signer !== 'string') return async () => options.lookup(signer.accessKeyId)?.admin === true && options.lookup(signer.accessKeyId)?.secretAccessKey === signer.secretAccessKey;
    const cookie = request.headers.get('cookie') ?? undefined;
    if (!(await liveSession(options.lookup, state, cookie))) return signer;
    return async () => (await liveSession(options.lookup, state, cookie)) !== undefined;
  };
  const eventStream = eventsEndpoint({ log: eventLog, authorize: authorizeEvents });
  app.get(EVENTS_PATH, (c) => eventStream(c.req.raw));
  // Agent file tools over MCP (docs/design.md §8): tool calls run through handleS3 like any S3 request (src/mcp-door.ts).
  const secure = Boolean(config.tlsCert && config.tlsKey);
  const mcp = mcpEndpoint({
    door: openMcpDoor(services, options, record, { agentWrites: config.agentWrites, diffMaxBytes: config.diffMaxBytes, secure, ...(config.publicUrl !== undefined && { publicUrl: config.publicUrl }) }, changesets),
    allowedOrigins: config.mcpAllowedOrigins, maxTextBytes: config.mcpMaxFileBytes, log,
    resourceMetadata: (headers) => resourceMetadataUrl(requestOrigin(headers.host, secure, config.publicUrl)),
    anonymousDiscovery: config.anonymous !== 'none',
  });
  // A POST to exactly MCP_PATH (every tool call) is served from node:http directly (serveMcp below); this route serves the rest.
  app.all(MCP_PATH, async (c) => toWeb(await mcp(fromWeb(c.req.raw))));
  // MCP authorization (docs/authorization.md): casket is its MCP endpoint's own OAuth authorization server.
  const loginBrake = new LoginBrake();
  app.route('/', oauthApp({ lookup: () => options.lookup, state: services.state, log, secure, brake: loginBrake, ...(config.publicUrl !== undefined && { publicUrl: config.publicUrl }), allowPrivateClientMetadata: process.env.CASKET_TEST_PRIVATE_CLIENT_METADATA === '1' }));
  // The operator's console (docs/design.md §9): admin sessions only, its own room (src/console/).
  let credentialsInForce: readonly Credential[] = credentials;
  app.route('/', consoleApp(
    {
      services, metrics, retention, log,
      credentials: () => credentialsInForce,
      // The id before any event: the integer logs count from 1, a Redis stream's ids from 0-1.
      firstEventId: ['0', '0-0'].find((id) => eventLog.validId(id)),
      setup: { backend: config.upstream ? 'upstream' : 'embedded', ...(config.upstream && { upstream: config.upstream.url }), state: config.state, guard: config.guard, agentHeader: config.agentHeader, retainBytes: config.retainBytes },
    },
    { lookup: () => options.lookup, secure: Boolean(config.tlsCert && config.tlsKey), log, brake: loginBrake, onLogout: () => void eventStream.recheckAll() },
  ));
  /**
   * An S3 request, from the socket to handleS3 and back, without Hono and
   * its Fetch adapter: no Request, Headers or URL object per request (4 KiB
   * PutObject through casket to Ceph RGW: 661 → 589 µs of CPU per request,
   * measured in alternating A/B runs). Bucket names cannot start with '_', so
   * no S3 path-style request is under /_casket/.
   */
  const serveS3 = async (incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> => {
    const started = process.hrtime.bigint();
    const signed = signedRequestFromNode(incoming.method ?? 'GET', incoming.url ?? '/', incoming.rawHeaders);
    const headers = signed.headers;
    let continued = false;
    const raw: RawRequest = {
      method: signed.method,
      url: incoming.url ?? '/',
      headers,
      body: incoming,
      secure: Boolean(config.tlsCert && config.tlsKey),
      sendContinue: () => {
        if (!continued && headers.expect?.toLowerCase() === '100-continue' && !outgoing.headersSent) outgoing.writeContinue();
        continued = true;
      },
    };
    const requestId = newRequestId();
    watchBody(incoming, outgoing, {
      idleMs: config.bodyTimeoutMs,
      waiting: () => headers.expect?.toLowerCase() === '100-continue' && !continued,
      onTimeout: () => {
        log.warn({ requestId, method: signed.method, path: signed.rawPath, received: incoming.socket.bytesRead }, 'request body timed out');
        const res = errorResponse(new S3Error('RequestTimeout'), requestId, signed.rawPath, signed.method);
        endTimedOut(incoming, outgoing, { status: res.status, headers: { ...res.headers, ...OBJECT_BODY_HEADERS, 'x-amz-request-id': requestId }, body: String(res.body ?? '') });
      },
    });
    const outcome = await handleS3(raw, services, options, requestId);
    writeToNode(outcome.response, incoming, outgoing, headers, (bytesOut, complete) => record(outcome, started, complete, bytesOut, Number(headers['content-length'] ?? 0)));
  };
  const serveCasket = getRequestListener(app.fetch, { overrideGlobalObjects: false });
  /**
   * The MCP endpoint without the Hono app's web Request and Response
   * (mcp/http-adapters.ts), doing what the app's /_casket/* middleware does
   * for it: OBJECT_BODY_HEADERS, the metrics and one log line; a failure is
   * 500, as Hono answers one.
   */
  const serveMcp = async (incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> => {
    const started = process.hrtime.bigint();
    let answer: McpHttpAnswer;
    try {
      answer = await mcp(fromNode(incoming, MCP_PATH));
    } catch (e) {
      log.error({ err: e }, 'MCP request failed');
      answer = { status: 500, headers: { 'content-type': 'text/plain; charset=UTF-8' }, body: 'Internal Server Error' };
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    // Answered already (a body that timed out, body-timeout.ts), or no one left to answer.
    if (!outgoing.headersSent && !outgoing.destroyed) {
      // Encoded once: its length is the bytes' (a string would be measured, then encoded again as it is written).
      const body = answer.body === null ? undefined : Buffer.from(answer.body, 'utf8');
      const headers: Record<string, string> = { ...answer.headers, 'content-length': String(body?.length ?? 0) };
      for (const [name, value] of Object.entries(OBJECT_BODY_HEADERS)) headers[name] ??= value;
      outgoing.writeHead(answer.status, headers);
      outgoing.end(body);
    }
    // Counted and logged once the answer is on its way: the client waits for the answer, not for these.
    metrics.requests.inc({ operation: 'casket:mcp', status: String(answer.status) });
    metrics.duration.observe({ operation: 'casket:mcp' }, seconds);
    log.info({ operation: 'casket:mcp', path: MCP_PATH, status: answer.status, ms: Math.round(seconds * 1000 * 10) / 10 }, 'request');
  };
  // After SIGTERM: Connection: close on what is in flight, 503 + Retry-After for anything new (drain.ts).
  const drain = new Drain();
  const listener = (incoming: IncomingMessage, outgoing: ServerResponse): void => {
    if (!drain.admit(incoming, outgoing)) return;
    // No bucket name starts with '.' (S3 bucket naming rules): these are casket's discovery documents (RFC 9728, RFC 8414).
    if (incoming.url?.startsWith('/.well-known/oauth-')) {
      void serveCasket(incoming, outgoing);
      return;
    }
    if (incoming.url?.startsWith('/_casket/')) {
      watchBody(incoming, outgoing, {
        idleMs: config.bodyTimeoutMs,
        onTimeout: () => {
          log.warn({ method: incoming.method, path: incoming.url?.split('?')[0], received: incoming.socket.bytesRead }, 'request body timed out');
          // Not an S3 answer: RFC 9110 §15.5.9 408 Request Timeout, in the JSON casket's endpoints speak.
          endTimedOut(incoming, outgoing, { status: 408, headers: { 'content-type': 'application/json', ...OBJECT_BODY_HEADERS }, body: JSON.stringify({ error: 'RequestTimeout', message: 'The request body stopped arriving: no bytes for longer than the body timeout.' }) });
        },
      });
      if (incoming.url === MCP_PATH && incoming.method === 'POST') {
        serveMcp(incoming, outgoing).catch((e: unknown) => {
          log.error({ err: e }, 'MCP request failed');
          if (!outgoing.headersSent) outgoing.writeHead(500, { connection: 'close' });
          outgoing.end();
        });
        return;
      }
      void serveCasket(incoming, outgoing);
      return;
    }
    serveS3(incoming, outgoing).catch((e: unknown) => {
      // handleS3 renders every failure as S3 XML; this is a bug in the glue.
      log.error({ err: e }, 'request failed outside handleS3');
      if (!outgoing.headersSent) outgoing.writeHead(500, { connection: 'close' });
      outgoing.end();
    });
  };

  const tls = config.tlsCert && config.tlsKey ? { cert: readFileSync(config.tlsCert), key: readFileSync(config.tlsKey) } : undefined;
  // Idle keep-alive connections stay open longer than clients' pools keep
  // them, so a client never reuses a socket the server is closing that very
  // moment ("socket hang up"); Node's 5 s default is shorter than most SDKs'.
  // requestTimeout bounds a whole request: off, or a slow large upload is cut;
  // a body that stops arriving is ended by watchBody (body-timeout.ts) instead.
  const serverOptions = { requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 65_000 };
  const server: Server = tls ? createHttpsServer({ ...serverOptions, ...tls }, listener) : createHttpServer(serverOptions, listener);
  // A client that stops sending mid-upload loses its socket after this long
  // idle; its body then fails IncompleteBody and nothing is committed.
  server.setTimeout(120_000);
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
  // Node answers any other Expect value with 417 unless 'checkExpectation'
  // has a listener; S3 ignores expectations it does not know, and so does casket.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
  const url = `${tls ? 'https' : 'http'}://${hostForUrl}:${port}`;
  let closed: Promise<void> | undefined;
  let drainTimer: NodeJS.Timeout | undefined;
  let backendClosed: Promise<void> | undefined;

  return {
    url,
    port,
    app,
    services,
    metrics,
    readiness: ready,
    reloadCredentials: (credentials) => {
      // Handlers and admin routes read options.lookup per request: one assignment swaps them all.
      options.lookup = staticCredentials(credentials);
      credentialsInForce = credentials;
      // Streams opened with a key that is gone or no longer admin end now, not at their next check.
      void eventStream.recheckAll();
    },
    reloadNotifications,
    close: async (drainMs = 0) => {
      if (!closed) {
        drain.begin();
        closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Event streams never end by themselves: end them now, as idle connections are.
        eventStream.endAll();
        // A keep-alive connection is closed once it is idle: those idle now
        // (no request in flight, or none sent yet) at once; one whose
        // response ends later after two seconds without another request
        // (drain.ts sweep), so a request already on its way — pipelined
        // behind that response, or sent as it ended — gets its 503 and
        // Retry-After instead of a connection cut under it. Two, not one:
        // "ended" is when casket handed the last bytes to the kernel, and a
        // client on a loaded host may still be reading a large body's last
        // buffered megabytes (seen: test/project/drain.test.ts's 0.6 s
        // pause after a 64 MiB download met a closed socket at load 10).
        server.closeIdleConnections();
        drainTimer = setInterval(() => drain.sweep(2000), 250);
        if (drainMs > 0) {
          await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, drainMs).unref())]);
        }
      }
      server.closeAllConnections();
      await closed;
      clearInterval(drainTimer);
      if (backendClosed) return backendClosed;
      backendClosed = (async () => {
        await webhooks.close();
        await backend.close();
        await state.close();
        await retention?.close();
        await eventLog.close();
        await preImages?.close();
        await services.gate?.close?.();
      })();
      return backendClosed;
    },
  };
}
