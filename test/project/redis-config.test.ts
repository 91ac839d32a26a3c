/**
 * Redis by URL or by Sentinel (docs/design.md §11, README "Several caskets and Redis
 * Sentinel"), as configuration: which flags go together, what each mode waits
 * for by default, and passwords that come from the environment or the config
 * file but never from a flag, which every user of the machine can read.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig, parseArgs, withFile } from '../../src/config.js';
import { CLI } from '../helpers/casket.js';

const build = (argv: string[], env: Record<string, string> = {}, file?: Record<string, unknown>) => buildConfig(withFile(parseArgs(argv, env), file));

describe('Redis configuration', () => {
  it('Sentinel: the group, its sentinels, passwords from env or file, one replica waited for by default', () => {
    const c = build(['--state', 'redis', '--redis-sentinels', '10.0.0.1:26379,[::1]:26380', '--redis-sentinel-name', 'casket'], { CASKET_REDIS_PASSWORD: 'data-secret' }, { redisSentinelPassword: 'sentinel-secret' });
    expect(c.redis).toEqual({
      target: { sentinels: [{ host: '10.0.0.1', port: 26379 }, { host: '::1', port: 26380 }], name: 'casket', password: 'data-secret', sentinelPassword: 'sentinel-secret' },
      replication: { replicas: 1, timeoutMs: 1000 },
    });
    expect(build([], { CASKET_STATE: 'redis', CASKET_REDIS_SENTINELS: 'h:1', CASKET_REDIS_SENTINEL_NAME: 'g', CASKET_REDIS_MIN_REPLICAS: '2', CASKET_REDIS_REPLICA_TIMEOUT: '250' }).redis?.replication).toEqual({ replicas: 2, timeoutMs: 250 });
  });

  it('a URL waits for no replica unless asked', () => {
    expect(build(['--state', 'redis', '--redis-url', 'redis://127.0.0.1:6379']).redis).toEqual({ target: { url: 'redis://127.0.0.1:6379' }, replication: { replicas: 0, timeoutMs: 1000 } });
    expect(build(['--state', 'redis', '--redis-url', 'redis://h:1', '--redis-min-replicas', '1']).redis?.replication.replicas).toBe(1);
  });

  it('refuses what does not go together', () => {
    expect(() => build(['--state', 'redis'])).toThrow('--state redis needs --redis-url or --redis-sentinels');
    expect(() => build(['--state', 'redis', '--redis-url', 'redis://h:1', '--redis-sentinels', 'h:2', '--redis-sentinel-name', 'g'])).toThrow('alternatives');
    expect(() => build(['--state', 'redis', '--redis-sentinels', 'h:2'])).toThrow('go together');
    expect(() => build(['--state', 'redis', '--redis-sentinels', 'h', '--redis-sentinel-name', 'g'])).toThrow('HOST:PORT');
    expect(() => build(['--state', 'redis', '--redis-url', 'redis://h:1'], { CASKET_REDIS_PASSWORD: 'x' })).toThrow('goes in the URL');
    // A WAIT longer than the command timeout would be cut off as an error.
    expect(() => build(['--state', 'redis', '--redis-url', 'redis://h:1', '--redis-replica-timeout', '5000'])).toThrow('at most 2000');
  });

  // Bounded (20 s): a casket that took the flag would go on trying to reach the sentinels.
  it('a password given as a flag is refused, and not echoed', { timeout: 30_000 }, () => {
    const r = spawnSync(process.execPath, [CLI, '--data-dir', mkdtempSync(join(tmpdir(), 'casket-config-')), '--state', 'redis', '--redis-sentinels', 'h:1', '--redis-sentinel-name', 'g', '--redis-password', 'hunter2'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('CASKET_REDIS_PASSWORD');
    expect(r.stderr).not.toContain('hunter2');
  });
});
