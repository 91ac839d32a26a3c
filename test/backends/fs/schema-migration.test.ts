/**
 * A data dir made by an earlier casket opens unchanged (schema.ts migrations):
 * a version-1 database (before the checksum columns) keeps its objects,
 * uploads and parts, and takes checksums from then on.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openFsBackend } from '../../../src/backends/fs/index.js';
import { openSqlite } from '../../../src/sqlite.js';
import { payloadOf, PUT_DEFAULTS, readAll, tempDataDir } from './helpers.js';

let temp: ReturnType<typeof tempDataDir>;
beforeEach(() => {
  temp = tempDataDir();
});
afterEach(() => temp.cleanup());

it('opens a version-1 data dir: objects and uploads survive, new writes store checksums', async () => {
  const db = openSqlite(join(temp.dir, 'casket.db'));
  db.exec(readFileSync(resolve(import.meta.dirname, 'fixtures/schema-v1.sql'), 'utf8'));
  db.pragma('user_version = 1');
  db.prepare('INSERT INTO buckets (name, created) VALUES (?, ?)').run('old', 1_700_000_000_000);
  db.prepare("INSERT INTO objects (bucket, key, etag, size, last_modified, writer, headers, metadata, part_sizes, blobs, body) VALUES ('old', 'k', 'e', 5, 1700000000000, 'ana', '{\"contentType\":\"text/plain\"}', NULL, NULL, NULL, ?)").run(Buffer.from('hello'));
  db.prepare("INSERT INTO uploads (upload_id, bucket, key, initiated, headers, metadata) VALUES ('u1', 'old', 'm', 1700000000000, NULL, NULL)").run();
  db.close();

  const store = openFsBackend({ dataDir: temp.dir, fsync: false, minPartSize: 1 });
  try {
    const reader = (await store.getObject('old', 'k'))!;
    expect(reader.info).toMatchObject({ etag: 'e', size: 5, writer: 'ana', headers: { contentType: 'text/plain' } });
    expect(reader.info.checksum).toBeUndefined();
    expect((await readAll(reader.open())).toString()).toBe('hello');
    expect((await store.listMultipartUploads('old', { prefix: '', maxUploads: 10 })).uploads.map((u) => u.uploadId)).toEqual(['u1']);
    const payload = payloadOf('new');
    const put = await store.putObject('old', 'new', { ...payload, digest: () => ({ ...payload.digest(), checksum: { algorithm: 'crc32', value: Buffer.from('DUoRhQ==', 'base64') } }) }, PUT_DEFAULTS);
    expect(put.checksum).toEqual({ algorithm: 'crc32', type: 'FULL_OBJECT', value: 'DUoRhQ==' });
    expect((await store.headObject('old', 'new'))?.checksum).toEqual(put.checksum);
  } finally {
    await store.close();
  }
});

it('opens a data dir made before versioning: its objects become their null versions (docs/design.md §10)', async () => {
  const db = openSqlite(join(temp.dir, 'casket.db'));
  db.exec(readFileSync(resolve(import.meta.dirname, 'fixtures/schema-v1.sql'), 'utf8'));
  db.pragma('user_version = 1');
  db.prepare('INSERT INTO buckets (name, created) VALUES (?, ?)').run('old', 1_700_000_000_000);
  db.prepare("INSERT INTO objects (bucket, key, etag, size, last_modified, writer, headers, metadata, part_sizes, blobs, body) VALUES ('old', 'k', 'e', 5, 1700000000000, 'ana', NULL, NULL, NULL, NULL, ?)").run(Buffer.from('hello'));
  db.close();

  const store = openFsBackend({ dataDir: temp.dir, fsync: false, minPartSize: 1 });
  try {
    // Unversioned still: no version id shows.
    expect((await store.headObject('old', 'k'))?.versionId).toBeUndefined();
    await store.putBucketVersioning('old', 'Enabled');
    expect(await store.headObject('old', 'k', 'null')).toMatchObject({ etag: 'e', versionId: 'null', writer: 'ana' });
    const next = await store.putObject('old', 'k', payloadOf('world'), PUT_DEFAULTS);
    const listed = (await store.listObjectVersions('old', { prefix: '', maxKeys: 10 }))!;
    expect(listed.entries.map((e) => [e.versionId, e.info?.etag, e.isLatest])).toEqual([
      [next.versionId, next.etag, true],
      ['null', 'e', false],
    ]);
    expect((await readAll((await store.getObject('old', 'k', 'null'))!.open())).toString()).toBe('hello');
  } finally {
    await store.close();
  }
});
