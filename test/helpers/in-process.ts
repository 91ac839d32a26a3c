/**
 * casket started inside the test process (src/server.ts) on port 0 with its
 * embedded store, driven over real HTTP by real clients. The same code a
 * spawned casket runs, but loaded from src: a mutation tool (npm run mutate)
 * can change it and see a test fail, which it cannot through dist/cli.js in
 * another process. Behaviour tests of whole products belong with the
 * spawned caskets (test/helpers/casket.ts); these are for the core's rules.
 */
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Credential } from '../../src/auth/credentials.js';
import { buildConfig } from '../../src/config.js';
import { startCasket, type Casket } from '../../src/server.js';
import type { Cred } from './casket.js';
import { sdk } from './clients.js';

export interface InProcessCasket {
  url: string;
  /** The embedded store's directory. */
  dataDir: string;
  casket: Casket;
  /** casket's log lines (JSON), as a spawned casket's stdout keeps them; none at the default level, silent. */
  logs: string[];
  admin: Cred;
  agents: Record<string, Cred>;
  /** Keys bound to no agent and not admin (a person's, a service's). */
  keys: Record<string, Cred>;
  stop(): Promise<void>;
}

const key = (): Cred => ({ accessKeyId: `AK${randomBytes(8).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(20).toString('hex') });

/**
 * `flags`: casket's own options by their config names (guard, agentWrites, state, …), as strings.
 * `credentials`: more keys as they are, e.g. with policies.
 */
export async function startInProcess(options: { agents?: string[]; keys?: string[]; flags?: Record<string, string>; credentials?: Credential[] } = {}): Promise<InProcessCasket> {
  const dataDir = mkdtempSync(join(tmpdir(), 'casket-core-'));
  const admin = key();
  const agents = Object.fromEntries((options.agents ?? []).map((a) => [a, key()]));
  const keys = Object.fromEntries((options.keys ?? []).map((name) => [name, key()]));
  const credentials: Credential[] = [{ ...admin, admin: true }, ...Object.entries(agents).map(([agent, c]) => ({ ...c, agent })), ...Object.values(keys), ...(options.credentials ?? [])];
  const config = buildConfig({ listen: '127.0.0.1:0', dataDir, state: 'memory', fsync: 'false', logLevel: 'silent', ...options.flags });
  const logs: string[] = [];
  const log = pino({ level: config.logLevel, base: { service: 'casket' } }, { write: (line: string) => void logs.push(line.trimEnd()) });
  const casket = await startCasket(config, credentials, log);
  return {
    url: casket.url,
    dataDir,
    casket,
    logs,
    admin,
    agents,
    keys,
    async stop() {
      await casket.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * An in-process casket with `bucket` made, an SDK client for the admin, one
 * per agent (sending its agent header) and one for a person's key; each
 * stopped through `stops` (call them in afterAll).
 */
export async function inProcessWithBucket(bucket: string, stops: Array<() => Promise<void>>, agents: string[], flags: Record<string, string> = {}): Promise<{ c: InProcessCasket; admin: S3Client; agents: Record<string, S3Client>; person: S3Client }> {
  const c = await startInProcess({ agents, keys: ['person'], flags });
  stops.push(() => c.stop());
  const admin = sdk(c.url, c.admin);
  const clients = Object.fromEntries(agents.map((a) => [a, sdk(c.url, c.agents[a]!, { agentHeader: a })]));
  const person = sdk(c.url, c.keys.person!);
  stops.push(async () => [admin, person, ...Object.values(clients)].forEach((x) => x.destroy()));
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  return { c, admin, agents: clients, person };
}
