/**
 * A write whose commit landed while the state store failed (README, "When
 * the state store is down"; src/state/unavailable.ts), with casket in this
 * process on a SQLite state store closed from under it. Under --guard off
 * an agent's write asks the store nothing before its commit, so it commits;
 * recording the agent's new read stamp then fails, and the answer is still
 * the commit's (200, the new ETag) — with an error in the log naming the key
 * and the request, for the operator, since the log is the only place the
 * lost record shows. (With the guard on, the stamp lookup before the commit
 * fails first: 503, nothing written — test/state/unavailable.test.ts.)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/config.js';
import { startCasket, type Casket } from '../../src/server.js';
import type { Cred } from '../helpers/casket.js';
import { raw } from '../helpers/raw.js';
import { etagOf } from '../helpers/suite.js';

const bucket = 'unrecorded';
const key = (): Cred => ({ accessKeyId: `AK${randomBytes(8).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(20).toString('hex') });
const admin = key();
const alice = key();
const lines: Array<Record<string, unknown>> = [];
let casket: Casket;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'casket-core-'));
  // casket's JSON log lines, as an operator's collector would read them.
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const config = buildConfig({ listen: '127.0.0.1:0', dataDir, state: 'sqlite', guard: 'off', fsync: 'false', logLevel: 'error' });
  casket = await startCasket(config, [{ ...admin, admin: true }, { ...alice, agent: 'alice' }], pino({ level: 'error' }, sink));
  await raw(casket.url, admin, { method: 'PUT', path: `/${bucket}` });
});
afterAll(async () => {
  // The state store is closed already: closing casket closes it again.
  await casket?.close().catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
});

const put = (who: Cred, key: string, body: string) => raw(casket.url, who, { method: 'PUT', path: `/${bucket}/${key}`, body });

describe('the state store fails after the commit', () => {
  it("an agent's PutObject: 200 with the new ETag, the content written, and an error logged naming the key and request", async () => {
    expect((await put(alice, 'doc', 'one')).status).toBe(200);
    expect(lines).toEqual([]);
    await casket.services.state.close();
    const r = await put(alice, 'doc', 'two');
    expect([r.status, r.headers.etag], r.body).toEqual([200, etagOf('two')]);
    expect((await raw(casket.url, admin, { method: 'GET', path: `/${bucket}/doc` })).body).toBe('two');
    const logged = lines.filter((l) => l.msg === 'write committed, but not recorded in the state store');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ bucket, key: 'doc', requestId: r.headers['x-amz-request-id'] });
    expect(logged[0]!.err).toBeDefined();
  });
});
