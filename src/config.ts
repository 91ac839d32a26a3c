/**
 * casket's configuration: typed, with defaults and validation, from three
 * sources in order of precedence — command-line flags, CASKET_* environment
 * variables, and an optional JSON file (--config). Pure: cli.ts passes argv
 * and env in; nothing here touches process.*.
 */
import type { Credential } from './auth/credentials.js';
import { parsePolicy, PolicyError, type Policy } from './auth/policy.js';
import type { AgentWritePolicy, GuardMode } from './guard/guard.js';
import type { RedisTarget, Replication } from './state/redis-connection.js';

export type EtagSuffixPolicy = 'auto' | 'always' | 'never';
export type StateKind = 'sqlite' | 'memory' | 'redis';
export type AnonymousAccess = 'none' | 'read';

export interface UpstreamConfig {
  url: string;
  accessKey: string;
  secretKey: string;
  region: string;
  /**
   * Other casket replicas write to the same upstream: a write the upstream
   * cannot make atomic by itself is refused instead of serialized in-process.
   */
  replicas: boolean;
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** Credentials given by flags, env or a credentials file; empty: casket makes one. */
  credentials: Credential[];
  credentialsFile?: string;
  anonymous: AnonymousAccess;
  region: string;
  /** Virtual-hosted-style addressing: `bucket.<domain>`. */
  domain?: string;
  agentHeader: string;
  guard: GuardMode;
  agentWrites: AgentWritePolicy;
  etagSuffix: EtagSuffixPolicy;
  state: StateKind;
  redisUrl?: string;
  /** Where Redis is (a URL or a Sentinel group) and the replicas each state change waits for (docs/design.md §11). */
  redis?: { target: RedisTarget; replication: Replication };
  stateTtlSeconds: number;
  stateMaxEntries: number;
  upstream?: UpstreamConfig;
  tlsCert?: string;
  tlsKey?: string;
  fsync: boolean;
  /** Smallest part but the last of a multipart upload (S3: 5 MiB). */
  minPartSize: number;
  /** Embedded store: a multipart upload with no part uploaded for this long is aborted (0: never). */
  multipartAbandonAfterSeconds: number;
  logLevel: string;
  /** Longest a request log line waits in casket's buffer before it is written (nginx's access_log flush=); 0: every line at once. */
  logFlushMs: number;
  /** Shortest DurationSeconds STS AssumeRole accepts (AWS: 900). */
  stsMinDurationSeconds: number;
  /** Retention of the versions agents saw (docs/design.md §6): largest object kept, bytes kept in all, largest diff served. */
  retainMaxSize: number;
  retainBytes: number;
  diffMaxBytes: number;
  /** MCP endpoint (docs/design.md §8): browser origins allowed beyond loopback ones; largest file a text tool handles. */
  mcpAllowedOrigins: string[];
  mcpMaxFileBytes: number;
  /** The URL clients reach casket at (origin only): the OAuth issuer and MCP resource (docs/authorization.md); default: each request's Host. */
  publicUrl?: string;
  /** Webhook targets (docs/design.md §9): a JSON file, reloaded on SIGHUP and when it changes (events/notifications.ts). */
  notificationsFile?: string;
  /**
   * Rollback on unversioned buckets (docs/design.md §10): keep the version an
   * agent's overwrite or delete replaces, before the commit — objects up to
   * preImageMaxSize bytes, preImageBytes in all, for preImageTtlSeconds. Off by default.
   */
  keepPreImages: boolean;
  preImageMaxSize: number;
  preImageBytes: number;
  preImageTtlSeconds: number;
  /** Longest wait between two arrivals of a request body's bytes before casket gives up on it (nginx's client_body_timeout). */
  bodyTimeoutMs: number;
  /** Longest wait after SIGTERM for requests in flight (cli.ts), ms. */
  drainMs: number;
}

interface Option {
  flag: string;
  env: string;
  key: keyof RawConfig;
  help: string;
  boolean?: boolean;
  /** A secret: read from env or the --config file only, never a flag (a command line is visible to every user in `ps`). */
  secret?: boolean;
}

type RawConfig = Record<
  | 'listen' | 'dataDir' | 'accessKey' | 'secretKey' | 'credentials' | 'anonymous' | 'region' | 'domain'
  | 'agentHeader' | 'guard' | 'agentWrites' | 'etagSuffix' | 'state' | 'redisUrl' | 'stateTtl' | 'stateMaxEntries'
  | 'stsMinDuration' | 'upstream' | 'upstreamAccessKey' | 'upstreamSecretKey' | 'upstreamRegion' | 'upstreamReplicas' | 'tlsCert' | 'tlsKey' | 'fsync'
  | 'minPartSize' | 'multipartAbandonAfter' | 'logLevel' | 'config' | 'retainMaxSize' | 'retainBytes' | 'diffMaxBytes' | 'mcpAllowedOrigins' | 'mcpMaxFileBytes' | 'publicUrl'
  | 'redisSentinels' | 'redisSentinelName' | 'redisPassword' | 'redisSentinelPassword' | 'redisMinReplicas' | 'redisReplicaTimeout'
  | 'notifications' | 'keepPreImages' | 'preImageMaxSize' | 'preImageBytes' | 'preImageTtl' | 'bodyTimeoutMs' | 'logFlushMs' | 'drainMs',
  string | undefined
>;

export const OPTIONS: Option[] = [
  { flag: '--listen', env: 'CASKET_LISTEN', key: 'listen', help: 'HOST:PORT to listen on (default 127.0.0.1:9000; port 0 picks a free one)' },
  { flag: '--data-dir', env: 'CASKET_DATA_DIR', key: 'dataDir', help: 'directory for the embedded store, state and generated credentials (default ./casket-data)' },
  { flag: '--access-key', env: 'CASKET_ACCESS_KEY', key: 'accessKey', help: 'access key of the one admin credential (with --secret-key)' },
  { flag: '--secret-key', env: 'CASKET_SECRET_KEY', key: 'secretKey', help: 'secret key of the one admin credential' },
  { flag: '--credentials', env: 'CASKET_CREDENTIALS', key: 'credentials', help: 'JSON file of credentials, each optionally bound to an agent' },
  { flag: '--anonymous', env: 'CASKET_ANONYMOUS', key: 'anonymous', help: 'none (default) | read: let unsigned requests read' },
  { flag: '--region', env: 'CASKET_REGION', key: 'region', help: 'region reported to clients (default us-east-1)' },
  { flag: '--domain', env: 'CASKET_DOMAIN', key: 'domain', help: 'serve virtual-hosted-style requests for BUCKET.<domain>' },
  { flag: '--agent-header', env: 'CASKET_AGENT_HEADER', key: 'agentHeader', help: 'header naming the agent (default x-agent-id)' },
  { flag: '--guard', env: 'CASKET_GUARD', key: 'guard', help: 'enforce (default) | observe | off' },
  { flag: '--agent-writes', env: 'CASKET_AGENT_WRITES', key: 'agentWrites', help: 'require (default): agents must send If-Match/If-None-Match | read-stamp: derive the condition from the last full read' },
  { flag: '--etag-suffix', env: 'CASKET_ETAG_SUFFIX', key: 'etagSuffix', help: 'auto (default: "<sha256>-1" for s3cmd and AWS SDK for Java v1) | always | never' },
  { flag: '--state', env: 'CASKET_STATE', key: 'state', help: 'sqlite (default, in the data dir) | memory | redis' },
  { flag: '--redis-url', env: 'CASKET_REDIS_URL', key: 'redisUrl', help: 'Redis URL for --state redis' },
  { flag: '--redis-sentinels', env: 'CASKET_REDIS_SENTINELS', key: 'redisSentinels', help: 'HOST:PORT,HOST:PORT,...: Redis Sentinels to ask for the primary (instead of --redis-url)' },
  { flag: '--redis-sentinel-name', env: 'CASKET_REDIS_SENTINEL_NAME', key: 'redisSentinelName', help: 'the primary group name the sentinels monitor (with --redis-sentinels)' },
  { flag: '--redis-password', env: 'CASKET_REDIS_PASSWORD', key: 'redisPassword', help: 'password of the Redis servers a Sentinel names (env or --config file only)', secret: true },
  { flag: '--redis-sentinel-password', env: 'CASKET_REDIS_SENTINEL_PASSWORD', key: 'redisSentinelPassword', help: 'password of the sentinels (env or --config file only)', secret: true },
  { flag: '--redis-min-replicas', env: 'CASKET_REDIS_MIN_REPLICAS', key: 'redisMinReplicas', help: 'replicas that must hold a state change before casket acknowledges it (WAIT); default 1 with --redis-sentinels, 0 with --redis-url' },
  { flag: '--redis-replica-timeout', env: 'CASKET_REDIS_REPLICA_TIMEOUT', key: 'redisReplicaTimeout', help: 'milliseconds to wait for those replicas before answering 503 (default 1000, at most 2000)' },
  { flag: '--multipart-abandon-after', env: 'CASKET_MULTIPART_ABANDON_AFTER', key: 'multipartAbandonAfter', help: 'seconds a multipart upload may sit idle (no part uploaded) before the embedded store aborts it and frees its parts (default 604800; 0: never)' },
  { flag: '--state-ttl', env: 'CASKET_STATE_TTL', key: 'stateTtl', help: 'seconds a read stamp is kept (default 604800)' },
  { flag: '--state-max-entries', env: 'CASKET_STATE_MAX_ENTRIES', key: 'stateMaxEntries', help: 'most read stamps kept (default 1000000)' },
  { flag: '--upstream', env: 'CASKET_UPSTREAM', key: 'upstream', help: 'URL of an S3 endpoint to proxy instead of the embedded store' },
  { flag: '--upstream-access-key', env: 'CASKET_UPSTREAM_ACCESS_KEY', key: 'upstreamAccessKey', help: 'access key casket uses upstream' },
  { flag: '--upstream-secret-key', env: 'CASKET_UPSTREAM_SECRET_KEY', key: 'upstreamSecretKey', help: 'secret key casket uses upstream' },
  { flag: '--upstream-region', env: 'CASKET_UPSTREAM_REGION', key: 'upstreamRegion', help: 'region casket signs upstream requests for (default us-east-1)' },
  { flag: '--upstream-replicas', env: 'CASKET_UPSTREAM_REPLICAS', key: 'upstreamReplicas', help: 'true | false: other caskets share this upstream (default: true with --state redis)' },
  { flag: '--tls-cert', env: 'CASKET_TLS_CERT', key: 'tlsCert', help: 'PEM certificate file: serve HTTPS' },
  { flag: '--tls-key', env: 'CASKET_TLS_KEY', key: 'tlsKey', help: 'PEM private key file for --tls-cert' },
  { flag: '--fsync', env: 'CASKET_FSYNC', key: 'fsync', help: 'true (default) | false: fsync object data before commit' },
  { flag: '--min-part-size', env: 'CASKET_MIN_PART_SIZE', key: 'minPartSize', help: 'smallest multipart part but the last, bytes (default 5242880)' },
  { flag: '--log-level', env: 'CASKET_LOG_LEVEL', key: 'logLevel', help: 'info (default) | debug | warn | error | silent' },
  { flag: '--log-flush-ms', env: 'CASKET_LOG_FLUSH_MS', key: 'logFlushMs', help: 'longest a request log line is held to be written in a batch, ms (default 1000; 0: every line at once); warnings, errors and start-up lines are never held' },
  { flag: '--sts-min-duration', env: 'CASKET_STS_MIN_DURATION', key: 'stsMinDuration', help: 'shortest DurationSeconds STS AssumeRole accepts (default 900, as AWS)' },
  { flag: '--retain-max-size', env: 'CASKET_RETAIN_MAX_SIZE', key: 'retainMaxSize', help: 'largest object whose versions agents saw are kept for diffs and merges, bytes (default 1048576; 0: none)' },
  { flag: '--retain-bytes', env: 'CASKET_RETAIN_BYTES', key: 'retainBytes', help: 'bytes of such versions kept in all, oldest evicted first (default 1073741824)' },
  { flag: '--diff-max-bytes', env: 'CASKET_DIFF_MAX_BYTES', key: 'diffMaxBytes', help: 'largest diff /_casket/diff serves before cutting it (default 65536)' },
  { flag: '--mcp-allowed-origins', env: 'CASKET_MCP_ALLOWED_ORIGINS', key: 'mcpAllowedOrigins', help: 'comma-separated browser origins (https://host[:port]) that may call /_casket/mcp besides loopback ones (default: none)' },
  { flag: '--public-url', env: 'CASKET_PUBLIC_URL', key: 'publicUrl', help: 'the URL clients reach casket at, e.g. https://casket.example behind a TLS-terminating proxy: the OAuth issuer and MCP resource (default: each request\'s Host, https when casket serves TLS)' },
  { flag: '--mcp-max-file-bytes', env: 'CASKET_MCP_MAX_FILE_BYTES', key: 'mcpMaxFileBytes', help: 'largest file the MCP text tools read or write, bytes (default 4194304)' },
  { flag: '--notifications', env: 'CASKET_NOTIFICATIONS', key: 'notifications', help: 'JSON file of webhook targets that get each event record (reloaded on SIGHUP and when it changes)' },
  { flag: '--keep-pre-images', env: 'CASKET_KEEP_PRE_IMAGES', key: 'keepPreImages', help: 'true | false (default): keep the version each agent overwrite or delete replaces, so `casket rollback` can restore it without bucket versioning' },
  { flag: '--pre-image-max-size', env: 'CASKET_PRE_IMAGE_MAX_SIZE', key: 'preImageMaxSize', help: 'largest object whose pre-image is kept, bytes (default 1048576)' },
  { flag: '--pre-image-bytes', env: 'CASKET_PRE_IMAGE_BYTES', key: 'preImageBytes', help: 'bytes of pre-images kept in all, oldest evicted first (default 1073741824)' },
  { flag: '--pre-image-ttl', env: 'CASKET_PRE_IMAGE_TTL', key: 'preImageTtl', help: 'seconds a pre-image is kept (default 604800)' },
  { flag: '--body-timeout-ms', env: 'CASKET_BODY_TIMEOUT_MS', key: 'bodyTimeoutMs', help: 'longest wait for the next bytes of a request body, ms, before answering RequestTimeout (default 60000)' },
  { flag: '--drain-ms', env: 'CASKET_DRAIN_MS', key: 'drainMs', help: 'longest wait after SIGTERM for the requests in flight to finish, ms, before the connections still open are closed (default 8000: under docker stop\'s 10 s)' },
  { flag: '--config', env: 'CASKET_CONFIG', key: 'config', help: 'JSON file with any of these settings (camelCase names)' },
];

export class ConfigError extends Error {}

/** --public-url: an http(s) origin, nothing after it (tokens' audience is this origin + /_casket/mcp). */
function publicOrigin(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '') throw new ConfigError(`--public-url must be an origin such as https://casket.example, not "${value}"`);
  return url.origin;
}

function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, not "${value}"`);
  return value as T;
}

function integer(name: string, value: string | undefined, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new ConfigError(`${name} must be an integer ≥ ${min}, not "${value}"`);
  return n;
}

/** Flags win over env, env over the file. Unknown flags are errors. */
export function parseArgs(argv: string[], env: Record<string, string | undefined>): Partial<RawConfig> {
  const raw: Partial<RawConfig> = {};
  for (const o of OPTIONS) if (env[o.env] !== undefined && env[o.env] !== '') raw[o.key] = env[o.env];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const o = OPTIONS.find((x) => x.flag === flag);
    if (!o) throw new ConfigError(`unknown option ${arg} (see --help)`);
    if (o.secret) throw new ConfigError(`${flag} is a secret: set ${o.env} or "${o.key}" in the --config file, not a flag (a command line is visible to every user)`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new ConfigError(`${flag} needs a value`);
    raw[o.key] = value;
  }
  return raw;
}

/** Line and column (1-based) of a character offset, for errors that name a place in a file. */
function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before.at(-1)!.length + 1}`;
}

/**
 * Where a JSON text first goes wrong. Not every V8 message carries a position
 * (Node 20: "Unexpected token 'x', ..."), so: the shortest prefix that no
 * continuation could make valid — a prefix fails either as incomplete (at its
 * very end) or as wrong, and once wrong stays wrong, so a binary search finds it.
 */
function errorOffset(text: string): number {
  const wrong = (n: number): boolean => {
    try {
      JSON.parse(text.slice(0, n));
      return false;
    } catch (e) {
      const message = (e as Error).message;
      if (/Unexpected end of JSON input/.test(message)) return false;
      const at = /position (\d+)/.exec(message);
      return !(at && Number(at[1]) >= n);
    }
  };
  if (!wrong(text.length)) return text.length;
  let lo = 0;
  let hi = text.length;
  while (lo + 1 < hi) {
    const mid = (lo + hi) >> 1;
    if (wrong(mid)) hi = mid;
    else lo = mid;
  }
  return hi - 1;
}

/**
 * Parses a JSON document an operator wrote, naming the file and the place of
 * a syntax error (V8's message gives a character offset; editors show lines).
 */
export function parseJsonFile(text: string, source: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const message = (e as Error).message;
    // V8's reason only up to where newer versions quote the text itself: a
    // credentials file's text holds secrets, and this line is logged.
    const reason = message.split(/ in JSON| at position|, (?:\.\.\.)?"/)[0]!;
    throw new ConfigError(`${source}: not JSON (${lineAndColumn(text, errorOffset(text))}: ${reason})`);
  }
}

/**
 * A --config file: one JSON object whose keys are the options' camelCase
 * names. Anything else is refused rather than ignored, since a misspelt key
 * ("lisen") would otherwise leave casket silently running on a default.
 */
export function parseConfigFile(text: string, source: string): Record<string, unknown> {
  const doc = parseJsonFile(text, source);
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`${source}: must be a JSON object of settings, e.g. {"listen": "127.0.0.1:9000"}`);
  const known = new Map(OPTIONS.filter((o) => o.key !== 'config').map((o) => [o.key as string, o]));
  for (const [name, value] of Object.entries(doc)) {
    if (!known.has(name)) throw new ConfigError(`${source}: unknown setting "${name}" (settings are the flags' camelCase names: ${[...known.keys()].join(', ')})`);
    if (!['string', 'number', 'boolean'].includes(typeof value)) throw new ConfigError(`${source}: setting "${name}" must be a string, number or boolean`);
  }
  return doc as Record<string, unknown>;
}

/** Merges a JSON config file's settings under the flags/env ones. */
export function withFile(raw: Partial<RawConfig>, file: Record<string, unknown> | undefined): Partial<RawConfig> {
  if (!file) return raw;
  const merged: Partial<RawConfig> = {};
  for (const o of OPTIONS) {
    const v = file[o.key];
    if (v !== undefined && v !== null) merged[o.key] = String(v);
  }
  return { ...merged, ...raw };
}

export function buildConfig(raw: Partial<RawConfig>, credentialsFromFile: Credential[] = []): Config {
  const listen = raw.listen ?? '127.0.0.1:9000';
  const m = /^(.*):(\d+)$/.exec(listen);
  if (!m) throw new ConfigError(`--listen must be HOST:PORT, not "${listen}"`);
  // TCP ports are 16 bits (RFC 9293 §3.1); 0 asks the system for a free one.
  if (Number(m[2]) > 65535) throw new ConfigError(`--listen port must be 0 to 65535, not ${m[2]}`);
  const credentials: Credential[] = [...credentialsFromFile];
  if ((raw.accessKey === undefined) !== (raw.secretKey === undefined)) throw new ConfigError('--access-key and --secret-key go together');
  if (raw.accessKey && raw.secretKey) credentials.unshift({ accessKeyId: raw.accessKey, secretAccessKey: raw.secretKey, admin: true });
  const state = oneOf('--state', raw.state, ['sqlite', 'memory', 'redis'] as const, 'sqlite');
  // Not echoed: a Redis URL may carry a password.
  if (raw.redisUrl !== undefined && !URL.canParse(raw.redisUrl)) throw new ConfigError('--redis-url must be a URL, e.g. redis://127.0.0.1:6379');
  const redis = redisConfig(raw);
  if (state === 'redis' && !redis) throw new ConfigError('--state redis needs --redis-url or --redis-sentinels');
  if ((raw.tlsCert === undefined) !== (raw.tlsKey === undefined)) throw new ConfigError('--tls-cert and --tls-key go together');
  let upstream: UpstreamConfig | undefined;
  if (raw.upstream) {
    if (!raw.upstreamAccessKey || !raw.upstreamSecretKey) throw new ConfigError('--upstream needs --upstream-access-key and --upstream-secret-key');
    try {
      new URL(raw.upstream);
    } catch {
      throw new ConfigError(`--upstream must be a URL, not "${raw.upstream}"`);
    }
    const replicas = oneOf('--upstream-replicas', raw.upstreamReplicas, ['true', 'false'] as const, state === 'redis' ? 'true' : 'false') === 'true';
    upstream = { url: raw.upstream.replace(/\/+$/, ''), accessKey: raw.upstreamAccessKey, secretKey: raw.upstreamSecretKey, region: raw.upstreamRegion ?? 'us-east-1', replicas };
  }
  // Virtual-hosted requests are matched on the Host header without its port
  // (s3/addressing.ts), so a domain with a port would never match any request.
  if (raw.domain !== undefined && !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(raw.domain)) throw new ConfigError(`--domain must be a host name without a port or scheme (e.g. s3.example.com), not "${raw.domain}"`);
  const agentHeader = (raw.agentHeader ?? 'x-agent-id').toLowerCase();
  if (!/^[a-z0-9-]+$/.test(agentHeader)) throw new ConfigError(`--agent-header must be a header name, not "${agentHeader}"`);
  return {
    host: m[1]!.replace(/^\[(.*)\]$/, '$1'),
    port: integer('--listen port', m[2], 9000),
    dataDir: raw.dataDir ?? './casket-data',
    credentials,
    ...(raw.credentials !== undefined && { credentialsFile: raw.credentials }),
    anonymous: oneOf('--anonymous', raw.anonymous, ['none', 'read'] as const, 'none'),
    region: raw.region ?? 'us-east-1',
    ...(raw.domain !== undefined && { domain: raw.domain.toLowerCase() }),
    agentHeader,
    guard: oneOf('--guard', raw.guard, ['enforce', 'observe', 'off'] as const, 'enforce'),
    agentWrites: oneOf('--agent-writes', raw.agentWrites, ['require', 'read-stamp'] as const, 'require'),
    etagSuffix: oneOf('--etag-suffix', raw.etagSuffix, ['auto', 'always', 'never'] as const, 'auto'),
    state,
    ...(raw.redisUrl !== undefined && { redisUrl: raw.redisUrl }),
    ...(redis && { redis }),
    stateTtlSeconds: integer('--state-ttl', raw.stateTtl, 7 * 24 * 3600, 1),
    stateMaxEntries: integer('--state-max-entries', raw.stateMaxEntries, 1_000_000, 1),
    ...(upstream && { upstream }),
    ...(raw.tlsCert !== undefined && { tlsCert: raw.tlsCert }),
    ...(raw.tlsKey !== undefined && { tlsKey: raw.tlsKey }),
    fsync: oneOf('--fsync', raw.fsync, ['true', 'false'] as const, 'true') === 'true',
    minPartSize: integer('--min-part-size', raw.minPartSize, 5 * 1024 * 1024),
    multipartAbandonAfterSeconds: integer('--multipart-abandon-after', raw.multipartAbandonAfter, 7 * 24 * 3600),
    stsMinDurationSeconds: integer('--sts-min-duration', raw.stsMinDuration, 900, 1),
    logLevel: oneOf('--log-level', raw.logLevel, ['debug', 'info', 'warn', 'error', 'silent'] as const, 'info'),
    logFlushMs: integer('--log-flush-ms', raw.logFlushMs, 1000),
    retainMaxSize: integer('--retain-max-size', raw.retainMaxSize, 1024 * 1024),
    retainBytes: integer('--retain-bytes', raw.retainBytes, 1024 * 1024 * 1024),
    diffMaxBytes: integer('--diff-max-bytes', raw.diffMaxBytes, 64 * 1024, 1),
    mcpAllowedOrigins: (raw.mcpAllowedOrigins ?? '').split(',').map((o) => o.trim().replace(/\/$/, '')).filter((o) => o !== ''),
    mcpMaxFileBytes: integer('--mcp-max-file-bytes', raw.mcpMaxFileBytes, 4 * 1024 * 1024, 1),
    ...(raw.publicUrl !== undefined && { publicUrl: publicOrigin(raw.publicUrl) }),
    ...(raw.notifications !== undefined && { notificationsFile: raw.notifications }),
    keepPreImages: oneOf('--keep-pre-images', raw.keepPreImages, ['true', 'false'] as const, 'false') === 'true',
    preImageMaxSize: integer('--pre-image-max-size', raw.preImageMaxSize, 1024 * 1024, 1),
    preImageBytes: integer('--pre-image-bytes', raw.preImageBytes, 1024 * 1024 * 1024, 1),
    preImageTtlSeconds: integer('--pre-image-ttl', raw.preImageTtl, 7 * 24 * 3600, 1),
    bodyTimeoutMs: integer('--body-timeout-ms', raw.bodyTimeoutMs, 60_000, 1),
    drainMs: integer('--drain-ms', raw.drainMs, 8_000, 0),
  };
}

/** `HOST:PORT,HOST:PORT,…` (IPv6 in brackets). */
function sentinelList(value: string): Array<{ host: string; port: number }> {
  return value.split(',').map((entry) => {
    const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(entry.trim());
    const port = m ? Number(m[2]) : NaN;
    if (!m || !(port > 0 && port < 65536)) throw new ConfigError(`--redis-sentinels must be HOST:PORT,HOST:PORT,…, not "${value}"`);
    return { host: m[1]!, port };
  });
}

/** Redis by URL or by Sentinel (one or the other), and the replication each state change waits for. */
function redisConfig(raw: Partial<RawConfig>): Config['redis'] {
  if (raw.redisUrl !== undefined && raw.redisSentinels !== undefined) throw new ConfigError('--redis-url and --redis-sentinels are alternatives: give one');
  if ((raw.redisSentinels === undefined) !== (raw.redisSentinelName === undefined)) throw new ConfigError('--redis-sentinels and --redis-sentinel-name go together');
  let target: RedisTarget;
  if (raw.redisSentinels !== undefined) {
    target = {
      sentinels: sentinelList(raw.redisSentinels),
      name: raw.redisSentinelName!,
      ...(raw.redisPassword !== undefined && { password: raw.redisPassword }),
      ...(raw.redisSentinelPassword !== undefined && { sentinelPassword: raw.redisSentinelPassword }),
    };
  } else if (raw.redisUrl !== undefined) {
    if (raw.redisPassword !== undefined || raw.redisSentinelPassword !== undefined) throw new ConfigError('with --redis-url the password goes in the URL (redis://:PASSWORD@HOST:PORT, e.g. in CASKET_REDIS_URL)');
    target = { url: raw.redisUrl };
  } else {
    return undefined;
  }
  const replicas = integer('--redis-min-replicas', raw.redisMinReplicas, 'sentinels' in target ? 1 : 0);
  const timeoutMs = integer('--redis-replica-timeout', raw.redisReplicaTimeout, 1000, 1);
  // Below the command timeout (state/redis-connection.ts): a WAIT that outlives it would be cut off as an error.
  if (timeoutMs > 2000) throw new ConfigError(`--redis-replica-timeout must be at most 2000 ms, not ${timeoutMs}`);
  return { target, replication: { replicas, timeoutMs } };
}

/**
 * Parses a credentials file: `{ "credentials": [{ "accessKey", "secretKey", "agent"?, "admin"?, "policy"? }] }`.
 * `policy` is an IAM-style policy document (auth/policy.ts); an entry without one keeps full rights.
 */
export function parseCredentialsFile(text: string, source: string): Credential[] {
  const doc = parseJsonFile(text, source);
  const list = (doc as { credentials?: unknown } | null)?.credentials;
  if (!Array.isArray(list)) throw new ConfigError(`${source}: expected {"credentials": [...]}`);
  const seen = new Set<string>();
  return list.map((c, i) => {
    const e = c as Record<string, unknown>;
    if (typeof e.accessKey !== 'string' || typeof e.secretKey !== 'string' || e.accessKey === '' || e.secretKey === '') {
      throw new ConfigError(`${source}: credentials[${i}] needs accessKey and secretKey strings`);
    }
    if (seen.has(e.accessKey)) throw new ConfigError(`${source}: access key ${e.accessKey} appears twice`);
    seen.add(e.accessKey);
    if (e.agent !== undefined && (typeof e.agent !== 'string' || e.agent === '')) throw new ConfigError(`${source}: credentials[${i}].agent must be a non-empty string`);
    let policy: Policy | undefined;
    try {
      if (e.policy !== undefined) policy = parsePolicy(e.policy);
    } catch (error) {
      if (error instanceof PolicyError) throw new ConfigError(`${source}: credentials[${i}].policy: ${error.message}`);
      throw error;
    }
    return { accessKeyId: e.accessKey, secretAccessKey: e.secretKey, ...(typeof e.agent === 'string' && { agent: e.agent }), ...(e.admin === true && { admin: true }), ...(policy && { policies: [policy] }) };
  });
}
