/**
 * A real redis-server on a loopback port, for tests of the Redis state store
 * and of several caskets sharing it. Started by its PID, stopped by its PID;
 * `stop()` then `start()` again brings it back on the same port (an outage,
 * as a replica sees it). Optional on a user's machine, required in CI
 * (helpers/tools.ts `need`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasCommand } from './tools.js';
import { freePort } from './upstream.js';

export const REDIS_SERVER = 'redis-server';

export function hasRedis(): boolean {
  return hasCommand(REDIS_SERVER);
}

export interface RunningRedis {
  url: string;
  port: number;
  proc: ChildProcess;
  /** SIGKILL: the server is gone at once, as in a crash. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence). */
  start(): Promise<void>;
}

/** Resolves true once the server replies +PONG to a raw RESP PING. */
export function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.setTimeout(500, () => (socket.destroy(), resolve(false)));
    socket.on('error', () => resolve(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => (socket.destroy(), resolve(d.toString().startsWith('+PONG'))));
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function launch(port: number): Promise<{ proc: ChildProcess; exited: Promise<void> }> {
  // A dir of its own: a server made a replica (REPLICAOF) writes the RDB it
  // receives there, and the repo is no place for it.
  const dir = mkdtempSync(join(tmpdir(), 'casket-redis-'));
  const proc = spawn(REDIS_SERVER, ['--save', '', '--appendonly', 'no', '--dir', dir, '--port', String(port), '--bind', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  proc.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => (rmSync(dir, { recursive: true, force: true }), resolve())));
  const deadline = Date.now() + 10_000;
  while (!(await ping(port))) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`redis-server did not answer PING on port ${port}\n${output}`);
    }
    await sleep(50);
  }
  return { proc, exited };
}

export async function startRedis(port?: number): Promise<RunningRedis> {
  const chosen = port ?? (await freePort());
  let current = await launch(chosen);
  const running: RunningRedis = {
    url: `redis://127.0.0.1:${chosen}`,
    port: chosen,
    proc: current.proc,
    async stop() {
      const { proc, exited } = current;
      if (proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid!, 'SIGKILL');
      await exited;
    },
    async start() {
      current = await launch(chosen);
      running.proc = current.proc;
    },
  };
  return running;
}
