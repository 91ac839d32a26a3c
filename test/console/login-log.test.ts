/**
 * No secret in a log line (docs/design.md §5, §9): a console login, taken and
 * refused, leaves the access key id in the log and never the secret key,
 * which travels only in the login form's body.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/config.js';
import { startCasket, type Casket } from '../../src/server.js';

describe('console login and the log', () => {
  const lines: string[] = [];
  const admin = { accessKeyId: 'AKCONSOLELOGADMIN', secretAccessKey: 'console-log-secret-0123456789', admin: true };
  const person = { accessKeyId: 'AKCONSOLELOGPERSON', secretAccessKey: 'console-log-person-secret-987' };
  let casket: Casket;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'casket-console-log-'));
    const sink = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } });
    casket = await startCasket(buildConfig({ listen: '127.0.0.1:0', dataDir, state: 'memory', fsync: 'false' }), [admin, person], pino({ level: 'debug' }, sink));
  });

  afterAll(async () => {
    await casket?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('logs who logged in or was refused, never a secret', async () => {
    const login = (cred: { accessKeyId: string; secretAccessKey: string }) =>
      fetch(`${casket.url}/_casket/console/login`, { method: 'POST', redirect: 'manual', headers: { origin: casket.url }, body: new URLSearchParams(cred) });
    expect((await login(admin)).status).toBe(303);
    expect((await login(person)).status).toBe(403);
    expect((await login({ accessKeyId: admin.accessKeyId, secretAccessKey: 'typo-secret-not-logged' })).status).toBe(401);
    const log = lines.join('');
    expect(log).toContain('console login');
    expect(log).toContain(admin.accessKeyId);
    expect(log).toContain(person.accessKeyId);
    for (const secret of [admin.secretAccessKey, person.secretAccessKey, 'typo-secret-not-logged']) expect(log).not.toContain(secret);
  });
});
