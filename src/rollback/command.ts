/**
 * `casket rollback` (docs/design.md §10): a client of a running casket, like
 * `casket mcp`, with the same connection flags. It signs one
 * `POST /_casket/rollback` with the admin key given and prints the answer:
 * a readable summary, or with --json the endpoint's JSON as is.
 *
 *   casket rollback --endpoint URL --access-key K --secret-key S --agent NAME
 *       --since TIME [--until TIME] [--bucket B] [--prefix P] [--dry-run] [--json]
 *   casket rollback --endpoint URL --access-key K --secret-key S --changeset ID
 *       [--since TIME] [--dry-run] [--json]
 *   env CASKET_ROLLBACK_ENDPOINT, CASKET_ROLLBACK_ACCESS_KEY, CASKET_ROLLBACK_SECRET_KEY
 *
 * Exit status (README "Rollback"): 0 every key is back (restored or already
 * unchanged); 3 some keys were left (conflicts or unrecoverable); 1 the
 * rollback did not run (casket unreachable or refused it); 2 a usage error.
 * With --dry-run, the same codes for what would happen.
 */
import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import { UpstreamSigner } from '../backends/s3/signer.js';
import { ROLLBACK_PATH, type Conflict, type RollbackAnswer } from './plan.js';

export const ROLLBACK_USAGE = `usage:
  casket rollback --endpoint URL --access-key K --secret-key S --agent NAME --since TIME
                  [--until TIME] [--bucket B] [--prefix P] [--dry-run] [--json]
      undo the writes agent NAME made between --since and --until (ISO 8601,
      e.g. 2026-11-25T14:00:00Z) on the casket at URL, signed with an admin key;
      a key someone else wrote since is left alone and reported with its diff
      (env CASKET_ROLLBACK_ENDPOINT, CASKET_ROLLBACK_ACCESS_KEY, CASKET_ROLLBACK_SECRET_KEY)
  casket rollback --endpoint URL --access-key K --secret-key S --changeset ID
                  [--since TIME] [--dry-run] [--json]
      undo one changeset as a unit: every key it wrote goes back, or none does
      when any of them was written since (--since: search the write log from then)
  exit status: 0 all keys back, 3 some left (conflicts, unrecoverable), 1 not run, 2 usage
`;

export class UsageError extends Error {
  override name = 'UsageError';
}

const VALUED: Record<string, string | undefined> = {
  '--endpoint': 'CASKET_ROLLBACK_ENDPOINT',
  '--access-key': 'CASKET_ROLLBACK_ACCESS_KEY',
  '--secret-key': 'CASKET_ROLLBACK_SECRET_KEY',
  '--agent': undefined,
  '--changeset': undefined,
  '--since': undefined,
  '--until': undefined,
  '--bucket': undefined,
  '--prefix': undefined,
};
const SWITCHES = new Set(['--dry-run', '--json']);

function parse(argv: readonly string[], env: Record<string, string | undefined>): { values: Record<string, string | undefined>; switches: Set<string> } {
  const values: Record<string, string | undefined> = {};
  for (const [flag, name] of Object.entries(VALUED)) if (name !== undefined && env[name]) values[flag] = env[name];
  const switches = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (SWITCHES.has(arg)) {
      switches.add(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (!(flag in VALUED)) throw new UsageError(`unknown option ${flag}\n${ROLLBACK_USAGE}`);
    // Stryker disable next-line EqualityOperator: an argument starting with `=` is no option (the line above names it whole and throws), so `eq >= 0` is never reached with 0.
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new UsageError(`${flag} needs a value\n${ROLLBACK_USAGE}`);
    values[flag] = value;
  }
  return { values, switches };
}

function required(values: Record<string, string | undefined>, flag: string): string {
  const v = values[flag];
  if (v === undefined || v === '') throw new UsageError(`${flag}${VALUED[flag] ? ` (or env ${VALUED[flag]})` : ''} is required\n${ROLLBACK_USAGE}`);
  return v;
}

function time(flag: string, value: string): string {
  // Stryker disable next-line Regex: a one-digit minute (`T14:5`) passes `:\d` but not `new Date` (V8 reads YYYY-MM-DDTHH: only as ISO 8601, whose minutes are two digits; every such string fuzzed parses to NaN), so the second check refuses it the same.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(value) || Number.isNaN(new Date(value).getTime())) throw new UsageError(`${flag} must be an ISO 8601 time, e.g. 2026-11-25T14:00:00Z, not "${value}"`);
  return value;
}

const at = (bucket: string, key: string) => `s3://${bucket}/${key}`;
const version = (etag: string | null) => etag ?? '(absent)';

function indent(text: string): string {
  return text.replace(/\n$/, '').split('\n').map((line) => `      ${line}`).join('\n');
}

/** The readable summary of an answer. */
export function summary(a: RollbackAnswer): string {
  const lines: string[] = [];
  const what = a.changeset !== undefined ? `changeset ${a.changeset} (by "${a.agent}", as a unit)` : `agent "${a.agent}" since ${a.since}${a.until ? ` until ${a.until}` : ''}`;
  lines.push(`rollback of ${what}${a.dryRun ? ' — dry run: nothing written' : ` — written as "${a.writtenAs}"${a.restoredAs ? ` in changeset ${a.restoredAs}` : ''}`}`);
  lines.push(`${a.dryRun ? 'would restore' : 'restored'} ${a.restored.length}:`);
  for (const r of a.restored) lines.push(`  ${r.action === 'delete' ? 'delete' : 'put   '} ${at(r.bucket, r.key)}  ${version(r.from)} → ${version(r.to)}${r.source ? ` (from ${r.source})` : ''}`);
  lines.push(`conflicts ${a.conflicts.length} (someone else wrote since; left as they are):`);
  for (const c of a.conflicts) lines.push(conflictLines(c));
  lines.push(`unrecoverable ${a.unrecoverable.length}:`);
  for (const u of a.unrecoverable) lines.push(`  ${at(u.bucket, u.key)}  ${version(u.goalETag)}: ${u.reason}`);
  if (a.notRestored !== undefined) {
    lines.push(`not restored ${a.notRestored.length} (the changeset goes back whole or not at all; left as they are):`);
    for (const u of a.notRestored) lines.push(`  ${at(u.bucket, u.key)}  ${version(u.etag)}`);
  }
  lines.push(`unchanged ${a.unchanged.length} (already at the version to restore):`);
  for (const u of a.unchanged) lines.push(`  ${at(u.bucket, u.key)}  ${version(u.etag)}`);
  return `${lines.join('\n')}\n`;
}

function conflictLines(c: Conflict): string {
  if (c.currentETag === undefined) return `  ${at(c.bucket, c.key)}  agent's ${version(c.agentETag)}, now unknown: written since, then could not be read (${c.currentUnread})`;
  const head = `  ${at(c.bucket, c.key)}  agent's ${version(c.agentETag)}, now ${version(c.currentETag)}${c.currentWriter ? ` by ${c.currentWriter}` : ''}`;
  return c.diff ? `${head}\n${indent(c.diff)}` : `${head}\n      (no diff: the agent's version is not retained)`;
}

/** Exit status of an answer: 0 every key back, 3 some left. */
export function exitStatus(a: RollbackAnswer): number {
  return a.conflicts.length + a.unrecoverable.length === 0 ? 0 : 3;
}

export async function rollbackCommand(argv: readonly string[], env: Record<string, string | undefined>, io: { stdout: Writable; stderr: Writable }): Promise<number> {
  const { values, switches } = parse(argv, env);
  const endpoint = required(values, '--endpoint');
  const accessKeyId = required(values, '--access-key');
  const secretAccessKey = required(values, '--secret-key');
  const changeset = values['--changeset'];
  const request = {
    // Stryker disable next-line ConditionalExpression: `agent: undefined` is left out of the JSON body (JSON.stringify drops it), which is all the request is.
    ...(changeset !== undefined ? { changeset, ...(values['--agent'] !== undefined && { agent: values['--agent'] }) } : { agent: required(values, '--agent') }),
    ...((changeset === undefined || values['--since'] !== undefined) && { since: time('--since', required(values, '--since')) }),
    ...(values['--until'] !== undefined && { until: time('--until', values['--until']) }),
    // Stryker disable next-line ConditionalExpression: as `agent` above, an undefined bucket or prefix is left out of the JSON body.
    ...(values['--bucket'] !== undefined && { bucket: values['--bucket'] }),
    // Stryker disable next-line ConditionalExpression: the same for prefix.
    ...(values['--prefix'] !== undefined && { prefix: values['--prefix'] }),
    dryRun: switches.has('--dry-run'),
  };
  let url: URL;
  try {
    url = new URL(ROLLBACK_PATH, endpoint);
  } catch {
    throw new UsageError(`--endpoint must be a URL, e.g. http://127.0.0.1:9000, not "${endpoint}"`);
  }
  const body = Buffer.from(JSON.stringify(request));
  const headers = new UpstreamSigner({ accessKeyId, secretAccessKey }, 'us-east-1').sign('POST', url.pathname, '', {
    host: url.host,
    'content-type': 'application/json',
    'x-amz-content-sha256': createHash('sha256').update(body).digest('hex'),
  });
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers, body });
  } catch (e) {
    io.stderr.write(`casket rollback: ${endpoint}: ${(e as Error).message}\n`);
    return 1;
  }
  const text = await res.text();
  if (res.status !== 200) {
    let reason = text;
    try {
      const doc = JSON.parse(text) as { error?: string; message?: string };
      reason = `${doc.error ?? res.status}: ${doc.message ?? ''}`;
    } catch {
      /* not JSON: shown as is */
    }
    io.stderr.write(`casket rollback: HTTP ${res.status} ${reason}\n`);
    return 1;
  }
  const answer = JSON.parse(text) as RollbackAnswer;
  io.stdout.write(switches.has('--json') ? `${JSON.stringify(answer, null, 2)}\n` : summary(answer));
  return exitStatus(answer);
}
