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
    let killedMidWrite = 0;
    let orphansRemoved = 0;
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, [fixture, modulePath, temp.dir, String(round)], { stdio: ['ignore', 'pipe', 'inherit'] });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      /** Per key: the state last reported done, and states begun but not reported done. */
      const states = new Map<string, { done?: string; pending: string[] }>();
      let done = 0;
      const killAfter = 10 + round * 4;
      await new Promise<void>((resolve, reject) => {
        child.once('exit', () => reject(new Error('child exited before it was killed')));
        createInterface({ input: child.stdout! }).on('line', (line) => {
          const [event, key, etag] = line.split(' ');
          if (event === 'ready' || key === undefined || etag === undefined) return;
          const state = states.get(key) ?? { pending: [] };
          states.set(key, state);
          if (event === 'begin') state.pending.push(etag);
          else {
            state.done = etag;
            state.pending.splice(state.pending.indexOf(etag), 1);
            if (++done === killAfter) setTimeout(() => {
              child.kill('SIGKILL');
              resolve();
            }, round * 5);
          }
        });
      });
      expect(await exited).toBe('SIGKILL');
      killedMidWrite += [...states.values()].reduce((n, s) => n + s.pending.length, 0);

      const store = openFsBackend({ dataDir: temp.dir, minPartSize: 1 });
      try {
        expect(store.recovery.missingBlobs).toBe(0);
        orphansRemoved += store.recovery.orphansRemoved;
        const current = await verifyAll(store, 'crash');
        for (const [key, state] of states) {
          const allowed = new Set([state.done ?? '-', ...state.pending]);
          expect(allowed, `${key} after round ${round}`).toContain(current.get(key) ?? '-');
        }
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
});
