/**
 * What a casket on its own data dir keeps resident: the Redis client loads
 * only when the state is shared, the MCP SDK (with zod and the tools) on the
 * first request to /_casket/mcp. Together they were ~30 MiB of the idle
 * process (README, Performance: idle RSS 102 → 75 MiB), which the 1 GiB
 * streaming goal (< 150 MiB peak) has to fit in. The test watches which
 * packages the process resolves, through a module hook given with --import
 * (https://nodejs.org/api/module.html#customization-hooks).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/casket.js';
import { mintToken } from '../helpers/mcp.js';
import { until } from '../helpers/poll.js';
import { raw } from '../helpers/raw.js';

const admin = { accessKeyId: 'MEMORYTESTADMIN', secretAccessKey: 'memory-test-secret' };

/** A preload that appends every resolved package specifier (not relative, not node:) to `log`. */
function watcher(dir: string, log: string): string {
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (!specifier.startsWith('.') && !specifier.startsWith('node:') && !specifier.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, specifier + '\\n');
  return next(specifier, context);
}
`,
  );
  const preload = join(dir, 'preload.mjs');
  writeFileSync(preload, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  return preload;
}

describe('what a casket loads', () => {
  it('loads neither ioredis nor the MCP SDK until asked; an MCP request loads the SDK and is answered', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'casket-memory-'));
    const log = join(dir, 'resolved.txt');
    writeFileSync(log, '');
    const proc = spawn(process.execPath, ['--import', watcher(dir, log), CLI, '--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--access-key', admin.accessKeyId, '--secret-key', admin.secretAccessKey], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((r) => proc.once('exit', r));
    try {
      await until(() => /"msg":"casket is ready"/.test(out), 'casket ready', 15_000);
      const url = /"endpoint":"([^"]+)"/.exec(out)![1]!;
      expect((await raw(url, admin, { method: 'PUT', path: '/mem' })).status).toBe(200);
      expect((await raw(url, admin, { method: 'PUT', path: '/mem/k', body: 'x' })).status).toBe(200);
      expect((await raw(url, admin, { method: 'GET', path: '/mem/k' })).status).toBe(200);
      const before = readFileSync(log, 'utf8').split('\n');
      expect(before).toContain('pino'); // the hook sees packages at all
      expect(before.filter((s) => s === 'ioredis' || s.startsWith('@modelcontextprotocol/') || s === 'zod')).toEqual([]);

      const init = await fetch(`${url}/_casket/mcp`, {
        method: 'POST',
        // Credentials: without them initialize is 401 (the start of an OAuth login).
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${mintToken(admin)}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'memory-test', version: '1' } } }),
      });
      expect(init.status).toBe(200);
      expect(((await init.json()) as { result: { serverInfo: { name: string } } }).result.serverInfo.name).toBe('casket');
      const after = readFileSync(log, 'utf8').split('\n');
      expect(after.some((s) => s.startsWith('@modelcontextprotocol/sdk/'))).toBe(true);
      expect(after).not.toContain('ioredis');
    } finally {
      proc.kill('SIGTERM');
      await exited;
    }
  });
});
