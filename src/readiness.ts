/**
 * Readiness, as distinct from liveness: /_casket/health answers while the
 * process runs; /_casket/ready answers 200 only when casket can serve writes
 * — the backend answers (the embedded store lists its buckets; an upstream is
 * reachable, takes casket's credentials and has had its conditional writes
 * probed) and the state store answers (SQLite takes a write transaction,
 * Redis a command). Otherwise 503, naming each failing part, so a load
 * balancer or an orchestrator stops sending traffic (Kubernetes' readiness
 * probe: any status outside 200–399 fails,
 * https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/).
 *
 * The answer is unauthenticated, like /_casket/health, so it names codes
 * (ECONNREFUSED, ServiceUnavailable, timeout), never a library's message;
 * the detail goes to the log — once per change, not once per probe (a load
 * balancer probes every few seconds): a check that starts failing, or fails
 * another way, is one warn line; one that passes again, one info line. A plain
 * network error (ECONNREFUSED, a timeout…) is its code, without a stack: it
 * says where to look, the stack would only say where casket noticed.
 */
import type { Backend } from './backends/types.js';
import type { Logger } from './log.js';
import type { Retention } from './retention/types.js';
import type { StateStore } from './state/types.js';

export interface Check {
  ok: boolean;
  /** Why not: a code, not a message. */
  error?: string;
}

export interface Readiness {
  status: 200 | 503;
  body: { status: 'ready' | 'unavailable'; checks: Record<string, Check> };
}

/** A probe slower than this counts as failing: an upstream that stalls cannot serve writes either. */
const CHECK_TIMEOUT_MS = 5_000;

/** An access key no credential has: revoking it is a write transaction (SQLite) or a command (Redis) that changes nothing. */
const NO_SUCH_SESSION = 'CASKET-READINESS-CHECK';

function codeOf(e: unknown): string {
  const x = e as { code?: unknown; cause?: { code?: unknown }; name?: unknown };
  if (typeof x.cause?.code === 'string') return x.cause.code;
  if (typeof x.code === 'string') return x.code;
  return typeof x.name === 'string' ? x.name : 'Error';
}

/** Errors that are the network's news, not casket's: logged by code, without a stack. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'timeout']);

/** Logs each check's changes (failing, failing otherwise, passing again), per casket. */
export class ReadinessLog {
  private readonly failing = new Map<string, string>();

  constructor(private readonly log: Logger) {}

  failed(name: string, e: unknown): void {
    const code = codeOf(e);
    const message = (e as Error)?.message ?? String(e);
    const line = `${code} ${message}`;
    if (this.failing.get(name) === line) return;
    this.failing.set(name, line);
    if (NETWORK_CODES.has(code)) this.log.warn({ check: name, error: code, detail: message }, `readiness check failed: ${name}: ${code}`);
    else this.log.warn({ check: name, error: code, err: e }, `readiness check failed: ${name}: ${code}`);
  }

  passed(name: string): void {
    if (this.failing.delete(name)) this.log.info({ check: name }, `readiness check passes again: ${name}`);
  }
}

async function check(name: string, run: () => Promise<unknown>, log: ReadinessLog): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      run(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`), { code: 'timeout' })), CHECK_TIMEOUT_MS);
      }),
    ]);
    log.passed(name);
    return { ok: true };
  } catch (e) {
    log.failed(name, e);
    return { ok: false, error: codeOf(e) };
  } finally {
    clearTimeout(timer);
  }
}

/** Why not ready, in one line: `backend ECONNREFUSED, state timeout`. */
export function notReadyReason(r: Readiness): string {
  return Object.entries(r.body.checks).filter(([, c]) => !c.ok).map(([name, c]) => `${name} ${c.error ?? 'failed'}`).join(', ');
}

export async function readiness(parts: { backend: Backend; state: StateStore; retention?: Retention | undefined }, logTo: ReadinessLog | Logger): Promise<Readiness> {
  const { backend, state, retention } = parts;
  // A caller without the casket's ReadinessLog (the console's setup page) logs what it finds, as a first probe would.
  const log = logTo instanceof ReadinessLog ? logTo : new ReadinessLog(logTo);
  // The upstream backend exposes its capability probe; a failed probe is retried by asking again.
  const probed = (backend as { capabilities?: () => Promise<unknown> }).capabilities;
  const entries = await Promise.all([
    ['backend', check('backend', async () => {
      await backend.listBuckets();
      await probed?.call(backend);
    }, log)] as const,
    ['state', check('state', () => state.revokeSession(NO_SUCH_SESSION), log)] as const,
    ...(retention ? [['retention', check('retention', () => retention.bytes(), log)] as const] : []),
  ].map(async ([name, pending]) => [name, await pending] as const));
  const checks = Object.fromEntries(entries);
  const ok = entries.every(([, c]) => c.ok);
  return { status: ok ? 200 : 503, body: { status: ok ? 'ready' : 'unavailable', checks } };
}
