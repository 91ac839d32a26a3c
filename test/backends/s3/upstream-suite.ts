/**
 * One upstream per test file for the s3 backend's in-process tests: moto by
 * default, the shared Ceph RGW with CASKET_TEST_UPSTREAM=rgw (a fresh tenant
 * of its own, test/helpers/upstream.ts). Started before the first test, with
 * an SDK client straight to it (to write around casket) and a factory for
 * backends over it, each with its own spool dir; everything stopped and
 * removed after the last test.
 *
 * `measured` is what each upstream is known to enforce (the capability probe
 * must find exactly that, backend.test.ts), and `kind` lets a test state
 * where the two upstreams really differ, as S3 implementations do.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll } from 'vitest';
import { openS3Backend, type Capabilities, type S3Backend, type S3BackendOptions } from '../../../src/backends/s3/index.js';
import { MemoryStateStore } from '../../../src/state/memory.js';
import { DEFAULT_STATE_LIMITS } from '../../../src/state/types.js';
import { startUpstream, upstreamKindFromEnv, type Upstream, type UpstreamKind } from '../../helpers/upstream.js';

/**
 * Conditional writes each upstream enforces, measured on these machines
 * (src/backends/s3/capabilities.ts): moto 5 ignores If-Match on
 * CompleteMultipartUpload; Ceph RGW 16 matches If-Match on PUT only unquoted
 * and ignores If-Match on DELETE and every condition on Complete. SSE-C:
 * moto 5 stores the bytes in plaintext and serves them without the key; RGW
 * (scripts/ceph-rgw-up.sh: rgw crypt require ssl = false) encrypts and refuses.
 * Neither enforces a condition on CopyObject (x-amz-copy-source-if-match,
 * If-Match, If-None-Match: * — each answered 200 with the destination
 * replaced; RGW pins the source only under its own name x-amz-copy-if-match).
 */
export const MEASURED: Record<UpstreamKind, Capabilities> = {
  moto: { ifMatchPut: 'quoted', ifNoneMatchPut: true, ifMatchDelete: true, ifMatchComplete: false, ifNoneMatchComplete: true, copySourceIfMatch: false, ifMatchCopy: false, ifNoneMatchCopy: false, customerKeys: false },
  rgw: { ifMatchPut: 'unquoted', ifNoneMatchPut: true, ifMatchDelete: false, ifMatchComplete: false, ifNoneMatchComplete: false, copySourceIfMatch: false, ifMatchCopy: false, ifNoneMatchCopy: false, customerKeys: true },
};

export interface UpstreamSuite {
  kind: UpstreamKind;
  upstream: Upstream;
  /** What this upstream enforces (MEASURED[kind]). */
  measured: Capabilities;
  /** An SDK client talking to the upstream directly, around casket. */
  direct: S3Client;
  backend(options?: Partial<S3BackendOptions>): S3Backend;
}

export function upstreamSuite(): UpstreamSuite {
  const kind = upstreamKindFromEnv() ?? 'moto';
  const dirs: string[] = [];
  const backends: S3Backend[] = [];
  const suite = {
    kind,
    measured: MEASURED[kind],
    backend(options: Partial<S3BackendOptions> = {}): S3Backend {
      const dir = mkdtempSync(join(tmpdir(), 'casket-s3-'));
      dirs.push(dir);
      const { upstream } = suite;
      const b = openS3Backend({ url: upstream.url, accessKey: upstream.accessKey, secretKey: upstream.secretKey, region: upstream.region, state: new MemoryStateStore(DEFAULT_STATE_LIMITS), spoolDir: join(dir, 'spool'), ...options });
      backends.push(b);
      return b;
    },
  } as UpstreamSuite;
  beforeAll(async () => {
    suite.upstream = await startUpstream(kind);
    suite.direct = new S3Client({ endpoint: suite.upstream.url, region: suite.upstream.region, forcePathStyle: true, credentials: { accessKeyId: suite.upstream.accessKey, secretAccessKey: suite.upstream.secretKey } });
  });
  afterAll(async () => {
    suite.direct?.destroy();
    for (const b of backends) await b.close();
    await suite.upstream?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return suite;
}

export async function bytes(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A client body that delivers `first` and then dies, as a client that
 * disconnects mid-upload: the error comes when the reader asks for more,
 * so it lands mid-stream whatever the machine's speed.
 */
export function dyingSource(first: Buffer): Readable {
  let served = false;
  return new Readable({
    highWaterMark: 16 * 1024,
    read() {
      if (!served) {
        served = true;
        this.push(first);
      } else process.nextTick(() => this.destroy(new Error('client went away')));
    },
  });
}
