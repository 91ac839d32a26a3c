/**
 * The retainer keeps a version after the response that wrote it (src/retention/retainer.ts),
 * so a merge or a diff asked for right after that write — an agent's
 * three-way merge over the version another agent just replaced — must not
 * find its base "not kept" merely because the keep is still being written:
 * that refused merges that would succeed (seen under load in CI). A read of
 * an ETag waits for this process's keep of it in flight.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileRetention } from '../../src/retention/files.js';
import { Retainer } from '../../src/retention/retainer.js';
import { sha256Hex, type VersionOf } from '../../src/retention/types.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const v = (content: Buffer): VersionOf => ({ bucket: 'notes', key: 'doc.txt', etag: sha256Hex(content) });

function retainer(): Retainer {
  const dir = mkdtempSync(join(tmpdir(), 'casket-retainer-'));
  dirs.push(dir);
  return new Retainer(new FileRetention(dir, { maxBytes: 1 << 20, ttlMs: 60_000 }), 1 << 20, { warn: () => {} });
}

describe('Retainer: a read right after a keep', () => {
  it('get and touch of a version being kept see it once kept, not "not kept"', async () => {
    const r = retainer();
    const base = Buffer.from('line 1\nline 2\n');
    r.keep(v(base), base);
    expect(await r.get(v(base))).toEqual(base);
    const other = Buffer.from('another version\n');
    r.keep(v(other), other);
    expect(await r.touch(v(other))).toBe(true);
  });

  it('a version never kept, or too large to keep, is still "not kept" at once', async () => {
    const r = retainer();
    const big = Buffer.alloc((1 << 20) + 1, 1);
    r.keep(v(big), big);
    expect(await r.get(v(big))).toBeUndefined();
    expect(await r.get(v(Buffer.from('never')))).toBeUndefined();
    expect(await r.touch(v(Buffer.from('never')))).toBe(false);
  });
});
