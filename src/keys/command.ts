/**
 * `casket keys`: makes, lists, rotates and removes the access keys casket
 * issues, by editing its credentials file (keys/file.ts) — no JSON by hand.
 * A running casket reloads the file within a second of the change (cli.ts
 * watches it), so a key works, or stops working, without a restart.
 *
 *   casket keys add [--agent NAME] [--policy FILE] [--admin] [--json]
 *   casket keys list [--json]
 *   casket keys rotate ACCESS_KEY [--json]
 *   casket keys remove ACCESS_KEY
 *   each with --credentials FILE (env CASKET_CREDENTIALS) or --data-dir DIR
 *   (env CASKET_DATA_DIR; the file is DIR/credentials.json, the one casket
 *   makes on first start; default ./casket-data)
 *
 * A secret is printed once, by the command that made it; `list` never shows
 * one. Exit status: 0 done, 2 a usage error or a file casket would refuse
 * (nothing written).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { parsePolicy, PolicyError } from '../auth/policy.js';
import { ConfigError, parseJsonFile } from '../config.js';
import { AGENT_NAME } from '../guard/identity.js';
import { readCredentials, withLock, writeCredentials, type RawEntry } from './file.js';

export const KEYS_USAGE = `usage:
  casket keys add [--agent NAME] [--policy FILE] [--admin] [--json]
      make a key (bound to agent NAME, limited by the IAM-style policy in FILE,
      or an admin key) and print its secret, this once
  casket keys list [--json]            every key, its agent, admin, policy (never a secret)
  casket keys rotate ACCESS_KEY [--json]
      give the key a new secret and print it; the old secret stops working
  casket keys remove ACCESS_KEY        the key stops working
  where: --credentials FILE (env CASKET_CREDENTIALS), or --data-dir DIR
      (env CASKET_DATA_DIR, default ./casket-data): DIR/credentials.json
  a running casket picks the change up within a second (it watches the file)
  exit status: 0 done, 2 usage error or bad input (nothing written)
`;

export class KeysUsageError extends Error {
  override name = 'UsageError';
}

const VALUED = new Set(['--credentials', '--data-dir', '--agent', '--policy']);
const SWITCHES = new Set(['--admin', '--json']);

interface Parsed {
  command: string | undefined;
  positional: string[];
  values: Record<string, string>;
  switches: Set<string>;
}

function parse(argv: readonly string[]): Parsed {
  const parsed: Parsed = { command: argv[0], positional: [], values: {}, switches: new Set() };
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (SWITCHES.has(arg)) {
      parsed.switches.add(arg);
      continue;
    }
    if (!arg.startsWith('--')) {
      parsed.positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (!VALUED.has(flag)) throw new KeysUsageError(`unknown option ${flag}`);
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') throw new KeysUsageError(`${flag} needs a value`);
    parsed.values[flag] = value;
  }
  return parsed;
}

/** The file casket reads: --credentials, else the data dir's (the one casket makes on first start). */
export function credentialsFileOf(values: Record<string, string>, env: Record<string, string | undefined>): string {
  return values['--credentials'] ?? env.CASKET_CREDENTIALS ?? join(values['--data-dir'] ?? env.CASKET_DATA_DIR ?? './casket-data', 'credentials.json');
}

/** The same form as the key casket makes on first start: 20 characters, as AWS's are. */
function newAccessKey(): string {
  return `CASKET${randomBytes(7).toString('hex').toUpperCase()}`;
}

function newSecret(): string {
  return randomBytes(30).toString('base64url');
}

function allowOnly(parsed: Parsed, allowed: string[], positional: number): void {
  for (const flag of [...Object.keys(parsed.values), ...parsed.switches]) {
    if (!['--credentials', '--data-dir', ...allowed].includes(flag)) throw new KeysUsageError(`keys ${parsed.command} takes no ${flag}`);
  }
  if (parsed.positional.length !== positional) {
    throw new KeysUsageError(positional === 0 ? `keys ${parsed.command} takes no argument (got ${parsed.positional.join(' ')})` : `keys ${parsed.command} needs one ACCESS_KEY`);
  }
}

function readPolicy(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new KeysUsageError(`--policy ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const doc = parseJsonFile(text, `--policy ${file}`);
  try {
    parsePolicy(doc);
  } catch (e) {
    if (e instanceof PolicyError) throw new KeysUsageError(`--policy ${file}: ${e.message}`);
    throw e;
  }
  return doc;
}

function find(entries: RawEntry[], accessKey: string, file: string): number {
  const i = entries.findIndex((e) => e.accessKey === accessKey);
  if (i < 0) throw new KeysUsageError(`no access key ${accessKey} in ${file} (casket keys list shows them)`);
  return i;
}

function secretLines(file: string, entry: RawEntry, json: boolean, verb: string): string {
  if (json) return `${JSON.stringify({ accessKey: entry.accessKey, secretKey: entry.secretKey, ...(entry.agent !== undefined && { agent: entry.agent }), ...(entry.admin === true && { admin: true }), file })}\n`;
  return (
    `${verb} in ${file}\n` +
    `  access key: ${entry.accessKey}\n` +
    `  secret key: ${entry.secretKey}\n` +
    `  (shown this once; a running casket picks it up within a second)\n`
  );
}

export async function keysCommand(argv: readonly string[], env: Record<string, string | undefined>, io: { stdout: Writable; stderr: Writable }): Promise<number> {
  try {
    const parsed = parse(argv);
    const file = credentialsFileOf(parsed.values, env);
    const json = parsed.switches.has('--json');
    switch (parsed.command) {
      case 'add': {
        allowOnly(parsed, ['--agent', '--policy', '--admin', '--json'], 0);
        const agent = parsed.values['--agent'];
        if (agent !== undefined && !AGENT_NAME.test(agent)) throw new KeysUsageError(`--agent must be 1 to 128 printable ASCII characters without spaces, not "${agent}"`);
        const policy = parsed.values['--policy'] !== undefined ? readPolicy(parsed.values['--policy']) : undefined;
        const entry = await withLock(file, () => {
          const current = readCredentials(file);
          let accessKey = newAccessKey();
          while (current.entries.some((e) => e.accessKey === accessKey)) accessKey = newAccessKey();
          const added: RawEntry = { accessKey, secretKey: newSecret(), ...(agent !== undefined && { agent }), ...(parsed.switches.has('--admin') && { admin: true }), ...(policy !== undefined && { policy }) };
          writeCredentials(file, current, [...current.entries, added]);
          return added;
        });
        io.stdout.write(secretLines(file, entry, json, 'key added'));
        return 0;
      }
      case 'list': {
        allowOnly(parsed, ['--json'], 0);
        const { entries } = readCredentials(file);
        const rows = entries.map((e) => ({ accessKey: e.accessKey, agent: typeof e.agent === 'string' ? e.agent : null, admin: e.admin === true, policy: e.policy !== undefined }));
        if (json) {
          io.stdout.write(`${JSON.stringify(rows)}\n`);
          return 0;
        }
        if (rows.length === 0) {
          io.stdout.write(`no keys in ${file}\n`);
          return 0;
        }
        const width = Math.max(10, ...rows.map((r) => r.accessKey.length));
        io.stdout.write(`${'ACCESS KEY'.padEnd(width)}  ADMIN  POLICY  AGENT\n`);
        for (const r of rows) io.stdout.write(`${r.accessKey.padEnd(width)}  ${(r.admin ? 'yes' : 'no').padEnd(5)}  ${(r.policy ? 'yes' : 'no').padEnd(6)}  ${r.agent ?? '-'}\n`);
        return 0;
      }
      case 'rotate': {
        allowOnly(parsed, ['--json'], 1);
        const accessKey = parsed.positional[0]!;
        const entry = await withLock(file, () => {
          const current = readCredentials(file);
          const i = find(current.entries, accessKey, file);
          const rotated: RawEntry = { ...current.entries[i]!, secretKey: newSecret() };
          writeCredentials(file, current, current.entries.map((e, j) => (j === i ? rotated : e)));
          return rotated;
        });
        io.stdout.write(secretLines(file, entry, json, 'new secret'));
        return 0;
      }
      case 'remove': {
        allowOnly(parsed, [], 1);
        const accessKey = parsed.positional[0]!;
        await withLock(file, () => {
          const current = readCredentials(file);
          const i = find(current.entries, accessKey, file);
          // casket refuses a file without credentials and keeps the old ones: the key would go on working.
          if (current.entries.length === 1) throw new KeysUsageError(`${accessKey} is the last key in ${file}: add another first (casket keeps its keys when the file has none)`);
          writeCredentials(file, current, current.entries.filter((_, j) => j !== i));
        });
        io.stdout.write(`removed ${accessKey} from ${file}\n`);
        return 0;
      }
      case undefined:
      case '--help':
      case '-h':
        io.stdout.write(KEYS_USAGE);
        return parsed.command === undefined ? 2 : 0;
      default:
        throw new KeysUsageError(`unknown keys command "${parsed.command}"`);
    }
  } catch (e) {
    if (e instanceof KeysUsageError) {
      io.stderr.write(`casket keys: ${e.message}\n${KEYS_USAGE}`);
      return 2;
    }
    if (e instanceof ConfigError) {
      io.stderr.write(`casket keys: ${e.message}\n`);
      return 2;
    }
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'ENOENT' || code === 'ENOTDIR' || code === 'EROFS') {
      io.stderr.write(`casket keys: ${(e as Error).message}\n`);
      return 2;
    }
    throw e;
  }
}
