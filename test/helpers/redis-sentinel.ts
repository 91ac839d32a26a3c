/**
 * A real Redis group that fails over: one primary, replicas, and three
 * redis-sentinel processes watching it (Debian's redis-server and
 * redis-sentinel), all on loopback ports, each started and ended by its own
 * PID. For the failover tests of docs/design.md §11.
 *
 * Every server runs from a config file of its own in a temp dir, so that
 * Sentinel's reconfiguration (REPLICAOF, then CONFIG REWRITE) has a file to
 * write. Every node carries the settings README "Several caskets and Redis
 * Sentinel" asks an operator for: `min-replicas-to-write 1` (a primary cut
 * off from every replica stops taking writes, so it cannot acknowledge what
 * the failover will throw away) with `min-replicas-max-lag 10`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { until } from './poll.js';
import { ping, REDIS_SERVER } from './redis.js';
import { hasCommand } from './tools.js';
import { freePort } from './upstream.js';

export const REDIS_SENTINEL = 'redis-sentinel';
/** The group name the sentinels monitor (casket's --redis-sentinel-name). */
export const GROUP = 'casket';

export function hasSentinel(): boolean {
  return hasCommand(REDIS_SERVER) && hasCommand(REDIS_SENTINEL);
}

interface Node {
  port: number;
  conf: string;
  proc?: ChildProcess;
  exited?: Promise<void>;
}

export interface RedisGroup {
  /** `HOST:PORT,…` of the sentinels, for --redis-sentinels. */
  sentinels: string;
  /** Ports of the data nodes (primary first, as started). */
  nodes: number[];
  /** The port the sentinels name as primary now. */
  primary(): Promise<number>;
  /** SIGKILL the data node on `port`: gone at once, as in a crash. */
  kill(port: number): Promise<void>;
  /** SIGSTOP / SIGCONT the data node on `port`: a replica that stops acknowledging, then catches up. */
  pause(port: number): void;
  resume(port: number): void;
  /** Starts the node on `port` again, empty (no persistence): Sentinel makes it a replica of the current primary. */
  restart(port: number): Promise<void>;
  /** Resolves once the sentinels name a primary other than `old`, and that primary has `replicas` replicas in sync. */
  failedOver(old: number, replicas: number): Promise<number>;
  /** Resolves once the primary on `port` has `replicas` replicas whose link is up, and every sentinel sees them. */
  inSync(port: number, replicas: number): Promise<void>;
  /**
   * Resolves to the primary, whichever it is, once it has `replicas` replicas
   * in sync seen by every sentinel. On a loaded machine the sentinels
   * (down-after-milliseconds 1000) may fail over once more on their own while
   * a returning node syncs: this follows that primary rather than waiting on
   * one that is no longer primary.
   */
  settled(replicas: number): Promise<number>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Ended with this worker, whatever happens to the test (as helpers/upstream.ts does for moto).
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of running) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
});

function control(port: number): Redis {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: true, retryStrategy: () => null, connectTimeout: 2000, commandTimeout: 2000 });
  r.on('error', () => {});
  return r;
}

/** Runs one command on a fresh connection (none kept across kills). */
export async function ask(port: number, ...args: string[]): Promise<unknown> {
  const r = control(port);
  try {
    return await r.call(args[0]!, ...args.slice(1));
  } finally {
    r.disconnect();
  }
}

function launch(node: Node, command: string): Promise<void> {
  const proc = spawn(command, [node.conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-4000));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  node.proc = proc;
  running.add(proc);
  node.exited = new Promise<void>((resolve) => proc.once('exit', () => (running.delete(proc), resolve())));
  return (async () => {
    const deadline = Date.now() + 10_000;
    while (!(await ping(node.port))) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`${command} did not answer PING on port ${node.port}\n${output}`);
      }
      await sleep(50);
    }
  })();
}

async function end(node: Node): Promise<void> {
  const proc = node.proc;
  if (!proc) return;
  if (proc.exitCode === null && proc.signalCode === null) {
    process.kill(proc.pid!, 'SIGKILL');
  }
  await node.exited;
}

/** INFO replication of the node on `port`, as fields. */
async function replicationInfo(port: number): Promise<Record<string, string>> {
  const text = String(await ask(port, 'INFO', 'replication'));
  return Object.fromEntries(text.split('\r\n').filter((l) => l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]));
}

export async function startRedisGroup(options: { replicas?: number } = {}): Promise<RedisGroup> {
  const dir = mkdtempSync(join(tmpdir(), 'casket-sentinel-'));
  const replicaCount = options.replicas ?? 2;
  const data: Node[] = [];
  const sentinels: Node[] = [];
  const started: Node[] = [];
  try {
    for (let i = 0; i <= replicaCount; i++) {
      const port = await freePort();
      const conf = join(dir, `redis-${port}.conf`);
      const lines = [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `dbfilename dump-${port}.rdb`,
        'save ""',
        'appendonly no',
        'min-replicas-to-write 1',
        'min-replicas-max-lag 10',
        ...(i > 0 ? [`replicaof 127.0.0.1 ${data[0]!.port}`] : []),
      ];
      writeFileSync(conf, `${lines.join('\n')}\n`);
      const node = { port, conf };
      await launch(node, REDIS_SERVER);
      data.push(node);
      started.push(node);
    }
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const conf = join(dir, `sentinel-${port}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${GROUP} 127.0.0.1 ${data[0]!.port} 2`,
          // A primary silent for 1 s is down: a short election, for a short test.
          `sentinel down-after-milliseconds ${GROUP} 1000`,
          `sentinel failover-timeout ${GROUP} 10000`,
          `sentinel parallel-syncs ${GROUP} 1`,
          '',
        ].join('\n'),
      );
      const node = { port, conf };
      await launch(node, REDIS_SENTINEL);
      sentinels.push(node);
      started.push(node);
    }
  } catch (e) {
    for (const n of started) await end(n);
    throw e;
  }

  /** The primary on `port` has `replicas` replicas whose link is up, and every sentinel sees them. */
  const synced = async (port: number, replicas: number): Promise<boolean> => {
    const info = await replicationInfo(port).catch(() => undefined);
    if (info?.role !== 'master') return false;
    const up = Object.entries(info).filter(([k, v]) => /^slave\d+$/.test(k) && v.includes('state=online')).length;
    if (up < replicas) return false;
    // Every sentinel must know them too, or the next failover has no replica to pick.
    for (const s of sentinels) {
      const list = (await ask(s.port, 'SENTINEL', 'replicas', GROUP).catch(() => [])) as string[][];
      const healthy = list.filter((fields) => {
        const flags = fields[fields.indexOf('flags') + 1] ?? '';
        const link = fields[fields.indexOf('master-link-status') + 1];
        return !flags.includes('down') && !flags.includes('disconnected') && link === 'ok';
      });
      if (healthy.length < replicas) return false;
      const peers = (await ask(s.port, 'SENTINEL', 'sentinels', GROUP).catch(() => [])) as unknown[];
      if (peers.length < sentinels.length - 1) return false;
    }
    return true;
  };
  const group: RedisGroup = {
    sentinels: sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
    nodes: data.map((n) => n.port),
    async primary() {
      for (const s of sentinels) {
        const reply = (await ask(s.port, 'SENTINEL', 'get-master-addr-by-name', GROUP).catch(() => null)) as string[] | null;
        if (reply) return Number(reply[1]);
      }
      throw new Error('no sentinel answered');
    },
    async kill(port) {
      await end(data.find((n) => n.port === port)!);
    },
    pause(port) {
      process.kill(data.find((n) => n.port === port)!.proc!.pid!, 'SIGSTOP');
    },
    resume(port) {
      process.kill(data.find((n) => n.port === port)!.proc!.pid!, 'SIGCONT');
    },
    async restart(port) {
      await launch(data.find((n) => n.port === port)!, REDIS_SERVER);
    },
    async failedOver(old, replicas) {
      let now = old;
      await until(async () => (now = await group.primary().catch(() => old)) !== old, `the sentinels to promote a replica of ${old}`, 30_000);
      await group.inSync(now, replicas);
      return now;
    },
    async settled(replicas) {
      let settled = 0;
      await until(
        async () => {
          const now = await group.primary().catch(() => 0);
          if (now === 0 || !(await synced(now, replicas))) return false;
          settled = now;
          return true;
        },
        `a primary with ${replicas} replicas in sync, seen by every sentinel`,
        60_000,
      );
      return settled;
    },
    async inSync(port, replicas) {
      await until(
        () => synced(port, replicas),
        `the primary on ${port} to have ${replicas} replicas in sync, seen by every sentinel`,
        30_000,
      );
    },
    async stop() {
      for (const n of [...sentinels, ...data]) await end(n);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // Writes are refused (min-replicas-to-write) until a replica has synced and acknowledged.
  await group.inSync(data[0]!.port, replicaCount).catch(async (e: unknown) => {
    await group.stop();
    throw e;
  });
  return group;
}
