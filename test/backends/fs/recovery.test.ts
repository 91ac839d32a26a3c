/**
 * Crash safety of the embedded store: garbage collection of orphaned blob
 * files at open, the single-owner lock, and a real crash: a child process
 * writing large, small and multipart objects concurrently is killed with
 * SIGKILL mid-write, then the store is reopened and every object must read
 * back whole, matching its ETag, and be a version the child had committed or
 * was committing.
 *
 * The child runs the backend compiled by tsc into node_modules/.cache (the
 * suite has no TypeScript loader for child processes; the project build may
 * be mid-edit elsewhere, so only this backend and what it imports are built).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DataDirInUse, multipartETag, openFsBackend, type FsBackend } from '../../../src/backends/fs/index.js';
import { blobFiles, bytes, payloadOf, PUT_DEFAULTS, readAll, tempDataDir } from './helpers.js';

let temp: ReturnType<typeof tempDataDir>;
beforeEach(() => {
  temp = tempDataDir();
});
afterEach(() => temp.cleanup());

describe('open', () => {
  it('deletes blob files no row references and keeps the rest', async () => {
    let store = openFsBackend({ dataDir: temp.dir, fsync: false, minPartSize: 1 });
    await store.createBucket('bkt');
    await store.putObject('bkt', 'big', payloadOf(bytes(100_000)), PUT_DEFAULTS);
    const { uploadId } = await store.createMultipartUpload('bkt', 'mp', {}, {});
    await store.uploadPart('bkt', 'mp', uploadId, 1, payloadOf('part', { md5: true }));
    await store.close();
    expect(store.recovery).toEqual({ orphansRemoved: 0, missingBlobs: 0 });
    const kept = blobFiles(temp.dir).sort();
    expect(kept).toHaveLength(2);
    // What a crash leaves: a half-written blob, plus anything else.
    writeFileSync(join(temp.dir, 'blobs', 'ab', 'ab' + '0'.repeat(30)), 'half-written');
    writeFileSync(join(temp.dir, 'blobs', '00', 'junk.tmp'), 'junk');
    store = openFsBackend({ dataDir: temp.dir, fsync: false });
    try {
      expect(store.recovery).toEqual({ orphansRemoved: 2, missingBlobs: 0 });
      expect(blobFiles(temp.dir).sort()).toEqual(kept);
      expect((await readAll((await store.getObject('bkt', 'big'))!.open())).equals(bytes(100_000))).toBe(true);
      expect((await store.listParts('bkt', 'mp', uploadId, { partNumberMarker: 0, maxParts: 10 })).parts).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it('lets one store own a data directory at a time', async () => {
    const first = openFsBackend({ dataDir: temp.dir });
    expect(() => openFsBackend({ dataDir: temp.dir })).toThrow(DataDirInUse);
    await first.close();
    const second = openFsBackend({ dataDir: temp.dir });
    await second.close();
  });
});

/** Reads every object and checks its bytes against its ETag; returns key → ETag. */
async function verifyAll(store: FsBackend, bucket: string): Promise<Map<string, string>> {
  const current = new Map<string, string>();
  const { objects, isTruncated } = await store.listObjects(bucket, { prefix: '', maxKeys: 1000 });
  expect(isTruncated).toBe(false);
  for (const listed of objects) {
    const reader = (await store.getObject(bucket, listed.key))!;
    expect(reader.info).toEqual(listed);
    const body = await readAll(reader.open());
    expect(body.length).toBe(listed.size);
    if (listed.partSizes) {
      let offset = 0;
      const digests = listed.partSizes.map((size) => {
        const digest = createHash('sha256').update(body.subarray(offset, offset + size)).digest();
        offset += size;
        return digest;
      });
      expect(multipartETag(digests)).toBe(listed.etag);
    } else {
      expect(createHash('sha256').update(body).digest('hex')).toBe(listed.etag);
    }
    current.set(listed.key, listed.etag);
  }
  return current;
}

/**
 * One round of the crash writer's reports, in the order it printed them,
 * judging which version of a key may be current after the crash. A write the
 * child reported done may be current unless another write to that key began
 * after it was done and was reported done too (that one committed later). A
 * write begun and never reported done may or may not have committed. What a
 * key held before the round counts as done before everything in it: a round
 * that never finished a write to a key leaves it at the previous round's
 * version, or at one of the writes in flight.
 */
class WriteHistory {
  private seq = 0;
  private readonly writes = new Map<string, Array<{ etag: string; begun: number; done?: number }>>();

  constructor(before: Map<string, string>) {
    for (const [key, etag] of before) this.writes.set(key, [{ etag, begun: -2, done: -1 }]);
  }

  begin(key: string, etag: string): void {
    this.of(key).push({ etag, begun: this.seq++ });
  }

  done(key: string, etag: string): void {
    // The earliest unfinished write of these bytes (deletes all read '-').
    const write = this.of(key).find((w) => w.etag === etag && w.done === undefined);
    if (write === undefined) throw new Error(`done ${key} ${etag} without its begin`);
    write.done = this.seq++;
  }

  allowed(key: string): Set<string> {
    const writes = this.of(key);
    const finished = writes.filter((w) => w.done !== undefined);
    return new Set(writes.filter((w) => w.done === undefined || !finished.some((later) => later.begun > w.done!)).map((w) => w.etag));
  }

  pendingCount(): number {
    return [...this.writes.values()].reduce((n, ws) => n + ws.filter((w) => w.done === undefined).length, 0);
  }

  private of(key: string) {
    const writes = this.writes.get(key) ?? [];
    this.writes.set(key, writes);
    return writes;
  }
}

describe('kill -9', () => {
  const buildDir = resolve('node_modules/.cache/casket-fs-crash-test');
  let modulePath: string;

  beforeAll(() => {
    mkdirSync(buildDir, { recursive: true });
    writeFileSync(join(buildDir, 'package.json'), '{ "type": "module" }\n');
    execFileSync(
      process.execPath,
      [
        resolve('node_modules/typescript/bin/tsc'),
        ...['--outDir', buildDir, '--rootDir', 'src', '--module', 'NodeNext', '--moduleResolution', 'NodeNext'],
        ...['--target', 'ES2022', '--strict', '--skipLibCheck', '--types', 'node', '--declaration', 'false', '--sourceMap', 'false'],
        'src/backends/fs/index.ts',
      ],
      { stdio: 'inherit' },
    );
    modulePath = join(buildDir, 'backends', 'fs', 'index.js');
  }, 60_000);

  it('leaves every object whole and at a version that was committed or being committed', async () => {
    const fixture = resolve('test/backends/fs/fixtures/crash-writer.mjs');
    const keys = ['k0', 'k1', 'k2', 'k3', 'k4'];
    /** What each key held after the previous round's recovery ('-': absent). */
    let before = new Map(keys.map((k) => [k, '-']));
    let killedMidWrite = 0;
    let orphansRemoved = 0;
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, [fixture, modulePath, temp.dir, String(round)], { stdio: ['ignore', 'pipe', 'inherit'] });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      const history = new WriteHistory(before);
      const lines = createInterface({ input: child.stdout! });
      // Every line the child wrote before it died, read to the end of its stdout.
      const allRead = new Promise<void>((resolve) => lines.once('close', () => resolve()));
      let done = 0;
      const killAfter = 10 + round * 4;
      await new Promise<void>((resolve, reject) => {
        child.once('exit', () => reject(new Error('child exited before it was killed')));
        lines.on('line', (line) => {
          const [event, key, etag] = line.split(' ');
          if (key !== undefined && etag !== undefined && (event === 'begin' || event === 'done')) history[event](key, etag);
          if (event === 'done' && ++done === killAfter) setTimeout(() => {
            child.kill('SIGKILL');
            resolve();
          }, round * 5);
        });
      });
      expect(await exited).toBe('SIGKILL');
      await allRead;
      killedMidWrite += history.pendingCount();

      const store = openFsBackend({ dataDir: temp.dir, minPartSize: 1 });
      try {
        expect(store.recovery.missingBlobs).toBe(0);
        orphansRemoved += store.recovery.orphansRemoved;
        const current = await verifyAll(store, 'crash');
        for (const key of keys) expect(history.allowed(key), `${key} after round ${round}`).toContain(current.get(key) ?? '-');
        before = new Map(keys.map((k) => [k, current.get(k) ?? '-']));
        // Exactly the referenced files remain: the current objects' and in-progress uploads' parts.
        let referenced = 0;
        for (const key of current.keys()) {
          const info = (await store.headObject('crash', key))!;
          referenced += info.partSizes ? info.partSizes.length : info.size > 64 * 1024 ? 1 : 0;
        }
        for (const upload of (await store.listMultipartUploads('crash', { prefix: '', maxUploads: 1000 })).uploads) {
          referenced += (await store.listParts('crash', upload.key, upload.uploadId, { partNumberMarker: 0, maxParts: 1000 })).parts.length;
        }
        expect(blobFiles(temp.dir)).toHaveLength(referenced);
      } finally {
        await store.close();
      }
    }
    // The kills did land while writes were in flight, and left files for the collector.
    expect(killedMidWrite).toBeGreaterThan(0);
    expect(orphansRemoved).toBeGreaterThan(0);
  }, 60_000);

  it('keeps every version a versioned bucket acknowledged, each whole, and no version nobody wrote (docs/design.md §10)', async () => {
    const fixture = resolve('test/backends/fs/fixtures/crash-writer.mjs');
    /** Per key: ETags the child began writing, and those it was told were committed. */
    const begun = new Map<string, Set<string>>();
    const done = new Map<string, Set<string>>();
    const note = (map: Map<string, Set<string>>, key: string, etag: string) => map.set(key, (map.get(key) ?? new Set()).add(etag));
    let killedMidWrite = 0;
    for (let round = 0; round < 3; round++) {
      const child = spawn(process.execPath, [fixture, modulePath, temp.dir, String(round), 'versioned'], { stdio: ['ignore', 'pipe', 'inherit'] });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      const lines = createInterface({ input: child.stdout! });
      const allRead = new Promise<void>((resolve) => lines.once('close', () => resolve()));
      const pending = new Map<string, number>();
      let count = 0;
      await new Promise<void>((resolve, reject) => {
        child.once('exit', () => reject(new Error('child exited before it was killed')));
        lines.on('line', (line) => {
          const [event, key, etag] = line.split(' ');
          if (key === undefined || etag === undefined || etag === '-') return;
          const id = `${key} ${etag}`;
          if (event === 'begin') (note(begun, key, etag), pending.set(id, (pending.get(id) ?? 0) + 1));
          if (event === 'done') (note(done, key, etag), pending.set(id, pending.get(id)! - 1));
          if (event === 'done' && ++count === 12 + round * 4) setTimeout(() => {
            child.kill('SIGKILL');
            resolve();
          }, round * 5);
        });
      });
      expect(await exited).toBe('SIGKILL');
      await allRead;
      killedMidWrite += [...pending.values()].filter((n) => n > 0).length;

      const store = openFsBackend({ dataDir: temp.dir, minPartSize: 1 });
      try {
        expect(store.recovery.missingBlobs).toBe(0);
        const listed = (await store.listObjectVersions('crash', { prefix: '', maxKeys: 1000 }))!;
        expect(listed.isTruncated).toBe(false);
        const held = new Map<string, string[]>();
        for (const entry of listed.entries) {
          if (!entry.info) continue;
          // Each version reads back whole, its bytes matching its ETag.
          const reader = (await store.getObject('crash', entry.key, entry.versionId))!;
          const body = await readAll(reader.open());
          expect(body.length).toBe(entry.info.size);
          const parts = entry.info.partSizes;
          if (parts) {
            let offset = 0;
            expect(multipartETag(parts.map((size) => createHash('sha256').update(body.subarray(offset, (offset += size))).digest()))).toBe(entry.info.etag);
          } else expect(createHash('sha256').update(body).digest('hex')).toBe(entry.info.etag);
          held.set(entry.key, [...(held.get(entry.key) ?? []), entry.info.etag]);
        }
        for (const [key, etags] of held) {
          // Nothing invented: every version is one the child wrote.
          for (const etag of etags) expect(begun.get(key), `${key} holds ${etag}`).toContain(etag);
          // One IsLatest per key.
          expect(listed.entries.filter((e) => e.key === key && e.isLatest)).toHaveLength(1);
        }
        // Nothing acknowledged is lost: every committed write is still a version of its key.
        for (const [key, etags] of done) for (const etag of etags) expect(held.get(key), `${key} lost ${etag}`).toContain(etag);
      } finally {
        await store.close();
      }
    }
    expect(killedMidWrite).toBeGreaterThan(0);
  }, 60_000);
});
