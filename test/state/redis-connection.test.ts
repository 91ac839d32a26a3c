/**
 * How casket opens, keeps and closes its Redis connection
 * (src/state/redis-connection.ts), against real redis-server and
 * redis-sentinel processes on loopback ports: what an operator reads when
 * Redis is not there, a password never in that message, a Sentinel group
 * behind passwords, a primary demoted under casket's feet (READONLY), a client
 * that ended by itself connected again, a close that stays closed, and WAIT's
 * answer when fewer replicas confirm than asked.
 *
 * Redis and Sentinel are optional on a user's machine and required in CI
 * (test/helpers/tools.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closeRedis,
  confirmReplicated,
  describeTarget,
  openRedis,
  ReplicationNotConfirmed,
} from '../../src/state/redis-connection.js';
import { until } from '../helpers/poll.js';
import { ask, hasSentinel, REDIS_SENTINEL } from '../helpers/redis-sentinel.js';
import { hasRedis, REDIS_SERVER, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';
import { freePort } from '../helpers/upstream.js';

const haveRedis = need('redis-server', hasRedis());
const haveSentinel = need('redis-sentinel', hasSentinel());

/** How many clients are connected to the server on `port`, besides the one asking. */
async function otherClients(port: number): Promise<number> {
  return String(await ask(port, 'CLIENT', 'LIST')).trim().split('\n').length - 1;
}

describe.skipIf(!haveRedis)('what an operator reads when Redis is not there', () => {
  it('an unreachable server: "cannot connect to Redis at HOST:PORT", the password nowhere, the cause kept', async () => {
    const port = await freePort(); // nothing listens there
    const error = await openRedis({ url: `redis://:hunter2-secret@127.0.0.1:${port}/0` }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toBe(`cannot connect to Redis at 127.0.0.1:${port}`);
    expect(String(error?.message)).not.toContain('hunter2');
    expect(error?.cause).toBeInstanceOf(Error);
  });

  it('a target is named by host:port (the default port when the URL has none), a Sentinel group by name and sentinels', () => {
    expect(describeTarget({ url: 'redis://:pw@redis.internal:6380/2' })).toBe('redis.internal:6380');
    expect(describeTarget({ url: 'redis://redis.internal' })).toBe('redis.internal:6379');
    expect(describeTarget({ url: 'not a url, pw=hunter2' })).toBe('the configured Redis');
    expect(
      describeTarget({ sentinels: [{ host: '10.0.0.1', port: 26379 }, { host: '10.0.0.2', port: 26380 }], name: 'casket', password: 'pw' }),
    ).toBe('the primary of Sentinel group "casket" (sentinels 10.0.0.1:26379, 10.0.0.2:26380)');
  });

  it('no sentinel answers: casket gives up within a bound, naming the group, instead of waiting for ever', async () => {
    const port = await freePort();
    const started = Date.now();
    const error = await openRedis({ sentinels: [{ host: '127.0.0.1', port }], name: 'casket' }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toBe(`cannot connect to Redis at the primary of Sentinel group "casket" (sentinels 127.0.0.1:${port})`);
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 40_000);
});

describe.skipIf(!haveRedis)('a connection that drops, ends or is demoted', () => {
  let primary: RunningRedis;
  let other: RunningRedis;
  beforeAll(async () => {
    primary = await startRedis();
    other = await startRedis();
  });
  afterAll(async () => {
    await primary?.stop();
    await other?.stop();
  });

  it('a primary demoted under casket (READONLY): the write fails, is never resent, and casket reconnects', async () => {
    const redis = await openRedis({ url: primary.url });
    try {
      await redis.set('demoted', 'before');
      const reconnecting = new Promise<void>((resolve) => redis.once('reconnecting', () => resolve()));
      await ask(primary.port, 'REPLICAOF', '127.0.0.1', String(other.port));
      await expect(redis.set('demoted', 'refused')).rejects.toThrow(/READONLY/);
      // The READONLY answer made the client drop this connection and open another.
      await reconnecting;
      await ask(primary.port, 'REPLICAOF', 'NO', 'ONE');
      await until(async () => (await redis.set('demoted', 'after').then(() => true, () => false)), 'a write after the primary is back');
      // Only what was acknowledged: the refused write was not replayed over it.
      await new Promise((r) => setTimeout(r, 300));
      expect(await redis.get('demoted')).toBe('after');
    } finally {
      await closeRedis(redis);
    }
  }, 30_000);

  it('any other error answer (a script error, a wrong type) fails that command and keeps the connection', async () => {
    const redis = await openRedis({ url: primary.url });
    try {
      let reconnects = 0;
      redis.on('reconnecting', () => reconnects++);
      await redis.set('a-string', 'x');
      await expect(redis.lpush('a-string', 'y')).rejects.toThrow(/WRONGTYPE/);
      await expect(redis.call('NOSUCHCOMMAND')).rejects.toThrow(/unknown command/);
      // Still the same connection: nothing dropped, nothing to reconnect.
      expect(await redis.get('a-string')).toBe('x');
      await new Promise((r) => setTimeout(r, 300));
      expect([reconnects, redis.status]).toEqual([0, 'ready']);
    } finally {
      await closeRedis(redis);
    }
  });

  it('a client that ended by itself (ioredis gave up) is connected again; one casket closed stays closed', async () => {
    const redis = await openRedis({ url: primary.url });
    redis.disconnect(); // 'end', as when ioredis stops reconnecting (see the file's comment)
    await until(() => redis.status === 'end', 'the client to end');
    await until(() => redis.status === 'ready', 'the ended client to be connected again');
    expect(await redis.set('reopened', '1')).toBe('OK');

    await closeRedis(redis);
    await until(() => redis.status === 'end', 'the closed client to end');
    await new Promise((r) => setTimeout(r, 1500)); // past the 1 s after which an ended client is reopened
    expect(redis.status).toBe('end');
    expect(await otherClients(primary.port)).toBe(0);
  }, 30_000);

  it('closed while Redis is down: the close resolves, and the client does not come back when Redis does', async () => {
    const down = await startRedis();
    try {
      const redis = await openRedis({ url: down.url });
      await down.stop();
      await until(() => redis.status !== 'ready', 'the client to see the server gone');
      await closeRedis(redis);
      await down.start();
      await new Promise((r) => setTimeout(r, 2500)); // past the longest reconnect delay (2 s)
      expect(await otherClients(down.port)).toBe(0);
      expect(redis.status).not.toBe('ready');
    } finally {
      await down.stop();
    }
  }, 30_000);
});

describe.skipIf(!haveRedis)('WAIT: casket acknowledges only what enough replicas hold', () => {
  let primary: RunningRedis;
  let replica: RunningRedis;
  let redis: Redis;
  beforeAll(async () => {
    primary = await startRedis();
    replica = await startRedis();
    await ask(replica.port, 'REPLICAOF', '127.0.0.1', String(primary.port));
    await until(async () => /slave0:.*state=online/.test(String(await ask(primary.port, 'INFO', 'replication'))), 'the replica in sync');
    redis = await openRedis({ url: primary.url });
  }, 30_000);
  afterAll(async () => {
    if (redis) await closeRedis(redis);
    await replica?.stop();
    await primary?.stop();
  });

  it('one replica asked, one in sync: confirmed', async () => {
    await redis.set('k', 'v');
    await expect(confirmReplicated(redis, { replicas: 1, timeoutMs: 5000 })).resolves.toBeUndefined();
  });

  it('two asked, one there: ReplicationNotConfirmed, saying how many of how many within how long', async () => {
    await redis.set('k', 'v2');
    const error = await confirmReplicated(redis, { replicas: 2, timeoutMs: 300 }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(ReplicationNotConfirmed);
    expect(error?.name).toBe('ReplicationNotConfirmed');
    expect(error?.message).toBe('1 of 2 Redis replicas confirmed the state change within 300 ms');
  });

  it('the one replica stalled: not confirmed, though it is connected', async () => {
    process.kill(replica.proc.pid!, 'SIGSTOP');
    try {
      await redis.set('k', 'v3');
      await expect(confirmReplicated(redis, { replicas: 1, timeoutMs: 300 })).rejects.toThrow('0 of 1 Redis replicas');
    } finally {
      process.kill(replica.proc.pid!, 'SIGCONT');
    }
  });
});

/** A redis-server or redis-sentinel of this test's own, ended by PID. */
interface Proc {
  proc: ChildProcess;
  exited: Promise<void>;
}

/** Resolves once the server on `port` answers PING after AUTH with `password`. */
function answers(port: number, password: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let seen = '';
    socket.setTimeout(500, () => (socket.destroy(), resolve(false)));
    socket.on('error', () => resolve(false));
    socket.on('connect', () => socket.write(`AUTH ${password}\r\nPING\r\n`));
    socket.on('data', (d) => {
      seen += d.toString();
      if (seen.includes('+PONG') || seen.includes('-')) socket.destroy(), resolve(seen.includes('+PONG'));
    });
  });
}

async function launch(command: string, args: string[], port: number, password: string): Promise<Proc> {
  const proc = spawn(command, args, { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await until(async () => proc.exitCode !== null || (await answers(port, password)), `${command} on ${port}`);
  if (proc.exitCode !== null) throw new Error(`${command} exited with ${proc.exitCode}`);
  return { proc, exited };
}

describe.skipIf(!haveSentinel)('a Sentinel group behind passwords', () => {
  const dir = mkdtempSync(join(tmpdir(), 'casket-redis-auth-'));
  const started: Proc[] = [];
  let sentinelPort: number;
  beforeAll(async () => {
    const dataPort = await freePort();
    started.push(await launch(REDIS_SERVER, ['--port', String(dataPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--requirepass', 'data-pw'], dataPort, 'data-pw'));
    sentinelPort = await freePort();
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor casket 127.0.0.1 ${dataPort} 1`,
        'sentinel auth-pass casket data-pw',
        'requirepass sentinel-pw',
        '',
      ].join('\n'),
    );
    started.push(await launch(REDIS_SENTINEL, [conf], sentinelPort, 'sentinel-pw'));
  }, 30_000);
  afterAll(async () => {
    for (const { proc, exited } of started) {
      if (proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid!, 'SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const target = () => ({ sentinels: [{ host: '127.0.0.1', port: sentinelPort }], name: 'casket' });

  it('with both passwords: casket reaches the primary the sentinel names, and writes there', async () => {
    const redis = await openRedis({ ...target(), password: 'data-pw', sentinelPassword: 'sentinel-pw' });
    try {
      expect(await redis.set('through-sentinel', '1')).toBe('OK');
      expect(await redis.get('through-sentinel')).toBe('1');
    } finally {
      await closeRedis(redis);
    }
  });

  it("without the primary's password, or the sentinels', casket does not start: a clear error", async () => {
    // Sentinel answers, so these fail on the primary's AUTH (or the sentinel's) rather than hang.
    const noData = await openRedis({ ...target(), sentinelPassword: 'sentinel-pw' }).then(() => undefined, (e: Error) => e);
    expect(noData?.message).toMatch(/^cannot connect to Redis at the primary of Sentinel group "casket"/);
    const noSentinel = await openRedis({ ...target(), password: 'data-pw' }).then(() => undefined, (e: Error) => e);
    expect(noSentinel?.message).toMatch(/^cannot connect to Redis at the primary of Sentinel group "casket"/);
  }, 40_000);
});
