/**
 * What the door (src/mcp-door.ts `commit`) does with the bodies write_files
 * stages on disk (<data-dir>/changesets/<id>/): it removes them when it
 * never handed the changeset to the engine (a disk that fills up while
 * staging), and leaves them to the engine when it did — past the decision
 * point a changeset lands whole, now or on the engine's retry
 * (src/changesets/commit.ts), and the retry writes from those bodies. The
 * disk and the backend are made to fail on cue, so casket runs in this
 * process (test/helpers/in-process.ts).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChangesetDir } from '../../src/changesets/intent.js';
import { S3Error } from '../../src/vocabulary/errors.js';
import { inProcessWithBucket } from '../helpers/in-process.js';
import type { InProcessCasket } from '../helpers/in-process.js';
import { call, data, httpClient, mintToken } from '../helpers/mcp.js';
import { missing, viewsOf } from '../helpers/model-view.js';

const bucket = 'landing';
const stops: Array<() => Promise<void>> = [];
let c: InProcessCasket;
let ana: Client;

beforeAll(async () => {
  ({ c } = await inProcessWithBucket(bucket, stops, ['ana']));
  ana = await httpClient(c, mintToken(c.agents.ana!), 'ana');
});
afterAll(async () => {
  await ana?.close();
  for (const s of stops.splice(0).reverse()) await s();
});

describe('write_files whose disk fills up while it stages', () => {
  it('fails, writes nothing, and leaves no staged body behind', async () => {
    const stage = ChangesetDir.prototype.stage;
    let staged = 0;
    ChangesetDir.prototype.stage = function (this: ChangesetDir, ...args: Parameters<typeof stage>) {
      if (staged++ === 1) return Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
      return stage.apply(this, args);
    };
    let r;
    try {
      r = await call(ana, 'write_files', { files: [{ path: `${bucket}/full-1.txt`, content: 'one\n', create_only: true }, { path: `${bucket}/full-2.txt`, content: 'two\n', create_only: true }] });
    } finally {
      ChangesetDir.prototype.stage = stage;
    }
    expect(staged).toBe(2);
    expect(r.isError).toBe(true);
    expect((await call(ana, 'get_file_info', { path: `${bucket}/full-1.txt` })).isError).toBe(true);
    // The first file's body was staged before the disk filled up: nothing of it stays on disk.
    expect(readdirSync(join(c.dataDir, 'changesets'))).toEqual([]);
  });
});

describe('write_files whose backend fails once it is decided', () => {
  it('is answered as landing, and lands whole a moment later', async () => {
    const backend = c.casket.services.backend;
    const putObject = backend.putObject.bind(backend);
    let failed = 0;
    backend.putObject = async (b, k, p, o) => (k === 'b.txt' && failed++ === 0 ? Promise.reject(new S3Error('SlowDown')) : putObject(b, k, p, o));
    let r;
    try {
      r = await call(ana, 'write_files', { files: [{ path: `${bucket}/a.txt`, content: 'a\n', create_only: true }, { path: `${bucket}/b.txt`, content: 'b\n', create_only: true }] });
    } finally {
      // The engine's retry (finishLater, a second on) goes to the backend as it is.
      backend.putObject = putObject;
    }
    expect(failed).toBe(1);
    // Decided is written: a model told "nothing was written" would send the files again.
    expect(missing(r, ['it lands whole', 'Do not send it again'])).toEqual([]);
    expect(JSON.stringify(r)).not.toContain('Nothing was written');
    expect(viewsOf(r!).structuredOnly!.text).toContain('"written":true');
    // Until it lands, casket holds the changeset's keys (a read through it waits): the backend is asked directly.
    let landed = false;
    for (let i = 0; i < 50 && !landed; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      landed = (await backend.headObject(bucket, 'b.txt')) !== null;
    }
    expect(landed, 'b.txt landed within 5 s').toBe(true);
    expect(data(await call(ana, 'read_text_file', { path: `${bucket}/b.txt` })).content).toBe('b\n');
    expect(data(await call(ana, 'read_text_file', { path: `${bucket}/a.txt` })).content).toBe('a\n');
  });
});
