/**
 * One moto per test file for the s3 backend's in-process tests: started
 * before the first test, with an SDK client straight to it (to write around
 * casket) and a factory for backends over it, each with its own spool dir;
 * everything stopped and removed after the last test.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll } from 'vitest';
import { openS3Backend, type S3Backend, type S3BackendOptions } from '../../../src/backends/s3/index.js';
import { MemoryStateStore } from '../../../src/state/memory.js';
import { DEFAULT_STATE_LIMITS } from '../../../src/state/types.js';
import { startMoto, type Upstream } from '../../helpers/upstream.js';

export interface MotoSuite {
  moto: Upstream;
  /** An SDK client talking to moto directly, around casket. */
  direct: S3Client;
  backend(options?: Partial<S3BackendOptions>): S3Backend;
}

export function motoSuite(): MotoSuite {
  const dirs: string[] = [];
  const backends: S3Backend[] = [];
  const suite = {
    backend(options: Partial<S3BackendOptions> = {}): S3Backend {
      const dir = mkdtempSync(join(tmpdir(), 'casket-s3-'));
      dirs.push(dir);
      const { moto } = suite;
      const b = openS3Backend({ url: moto.url, accessKey: moto.accessKey, secretKey: moto.secretKey, region: moto.region, state: new MemoryStateStore(DEFAULT_STATE_LIMITS), spoolDir: join(dir, 'spool'), ...options });
      backends.push(b);
      return b;
    },
  } as MotoSuite;
  beforeAll(async () => {
    suite.moto = await startMoto();
    suite.direct = new S3Client({ endpoint: suite.moto.url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: suite.moto.accessKey, secretAccessKey: suite.moto.secretKey } });
  });
  afterAll(async () => {
    suite.direct?.destroy();
    for (const b of backends) await b.close();
    await suite.moto?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return suite;
}

export async function bytes(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
