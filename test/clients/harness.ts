/**
 * The client matrix's common ground: one casket per protocol per test file
 * (started with startCasket, so CI's upstream run swaps the store under it),
 * an admin SDK client that plays "another writer" and is the HeadObject
 * oracle, the person/agent credentials, and the checks every client shares:
 * SHA-256 of downloads, the ETag casket must show for an upload, and how many
 * writes a command made (read from casket's request log).
 */
import { CreateBucketCommand, HeadObjectCommand, HeadObjectCommandOutput, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { LookupFunction } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCasket, type Cred, type RunningCasket } from '../helpers/casket.js';
import type { Endpoint } from '../helpers/cli-tools.js';
import { until } from '../helpers/poll.js';
import { TEST_DOMAIN, testTls, tlsArgs } from '../helpers/tls.js';

export type Protocol = 'http' | 'https';
export type Role = 'person' | 'agent';
export const PROTOCOLS: Protocol[] = ['http', 'https'];
export const ROLES: Role[] = ['person', 'agent'];

export const MiB = 1024 * 1024;

/** Resolves `s3.casket.test` and every `<bucket>.s3.casket.test` to 127.0.0.1, anything else as usual. */
export const testDomainLookup: LookupFunction = (hostname, options, callback) => {
  if (hostname === TEST_DOMAIN || hostname.endsWith(`.${TEST_DOMAIN}`)) {
    if (options.all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
    else callback(null, '127.0.0.1', 4);
    return;
  }
  dnsLookup(hostname, options, callback as never);
};

export interface SdkOptions {
  /** Virtual-hosted style through https?://s3.casket.test:port (the SDK's default with a hostname endpoint). */
  virtualHosted?: boolean;
  /** Sent as x-agent-id on every request, signed (SDK middleware). */
  agentHeader?: string;
  /** Collects the Host of every request sent (to prove the addressing style). */
  hosts?: Set<string>;
}

/** @aws-sdk/client-s3 as a user sets it up against casket: endpoint, credentials, the CA to trust. */
export function sdkClient(endpoint: Endpoint, cred: Cred, options: SdkOptions = {}): S3Client {
  const u = new URL(endpoint.url);
  const ca = endpoint.caFile ? testTls().ca : undefined;
  const client = new S3Client({
    endpoint: options.virtualHosted ? `${u.protocol}//${TEST_DOMAIN}:${u.port}` : endpoint.url,
    forcePathStyle: !options.virtualHosted,
    region: 'us-east-1',
    credentials: cred,
    maxAttempts: 1,
    requestHandler: {
      httpAgent: new HttpAgent({ keepAlive: true, lookup: testDomainLookup }),
      httpsAgent: new HttpsAgent({ keepAlive: true, lookup: testDomainLookup, ...(ca && { ca }) }),
    },
  });
  if (options.agentHeader) {
    const agent = options.agentHeader;
    client.middlewareStack.add(
      (next) => async (args) => {
        (args.request as { headers: Record<string, string> }).headers['x-agent-id'] = agent;
        return next(args);
      },
      { step: 'build', name: 'agentHeader' },
    );
  }
  if (options.hosts) {
    const hosts = options.hosts;
    client.middlewareStack.add(
      (next) => async (args) => {
        hosts.add((args.request as { hostname: string }).hostname);
        return next(args);
      },
      { step: 'finalizeRequest', name: 'recordHost' },
    );
  }
  return client;
}

export interface ClientCasket {
  protocol: Protocol;
  casket: RunningCasket;
  endpoint: Endpoint;
  /** A scratch directory for this casket's tests, removed at stop. */
  dir: string;
  /** The admin, path style: another writer, and the HeadObject oracle. */
  admin: S3Client;
  cred(role: Role): Cred;
  /** The agent name bound to the agent key. */
  agentName: string;
  head(bucket: string, key: string): Promise<HeadObjectCommandOutput>;
  /** Another writer (a person) replaces the object. */
  overwrite(bucket: string, key: string, body: Buffer | string): Promise<string>;
  /** A mark in casket's request log; `writesSince(mark)` lists the object writes logged after it. */
  mark(): Promise<number>;
  writesSince(mark: number, bucket: string): Promise<string[]>;
  stop(): Promise<void>;
}

const WRITE_OPERATIONS = new Set(['PutObject', 'CopyObject', 'CompleteMultipartUpload', 'UploadPart', 'UploadPartCopy', 'DeleteObject', 'DeleteObjects']);

export interface ClientCasketOptions {
  /** Name of the client, used for the agent and the scratch dir. */
  client: string;
  /** casket's --agent-writes: `require` (default) or `read-stamp` for tools that cannot send If-Match on every write. */
  agentWrites?: 'require' | 'read-stamp';
  buckets: string[];
}

export async function startClientCasket(protocol: Protocol, options: ClientCasketOptions): Promise<ClientCasket> {
  const agentName = `${options.client}-agent`;
  const args = ['--domain', TEST_DOMAIN, '--agent-writes', options.agentWrites ?? 'require', ...(protocol === 'https' ? tlsArgs() : [])];
  const casket = await startCasket({ agents: [agentName], args });
  const endpoint: Endpoint = { url: casket.url, ...(protocol === 'https' && { caFile: testTls().caFile }) };
  const admin = sdkClient(endpoint, casket.admin);
  try {
    for (const bucket of options.buckets) await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (e) {
    admin.destroy();
    await casket.stop();
    throw e;
  }
  const dir = mkdtempSync(join(tmpdir(), `casket-${options.client}-${protocol}-`));
  const markerBucket = options.buckets[0]!;
  // A request whose log line comes after everything logged before it was sent.
  const mark = async (): Promise<number> => {
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    await admin.send(new HeadObjectCommand({ Bucket: markerBucket, Key: marker })).catch(() => {});
    await until(() => casket.logs.some((line) => line.includes(marker)), 'casket to log the marker request');
    return casket.logs.findIndex((line) => line.includes(marker));
  };
  return {
    protocol,
    casket,
    endpoint,
    dir,
    admin,
    agentName,
    cred: (role) => (role === 'person' ? casket.admin : casket.agents[agentName]!),
    head: (bucket, key) => admin.send(new HeadObjectCommand({ Bucket: bucket, Key: key })),
    overwrite: async (bucket, key, body) => (await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }))).ETag!,
    mark,
    writesSince: async (from, bucket) =>
      casket.logs.slice(from + 1, await mark()).flatMap((line) => {
        try {
          const entry = JSON.parse(line) as { operation?: string; bucket?: string; key?: string; status?: number };
          return entry.bucket === bucket && entry.operation && WRITE_OPERATIONS.has(entry.operation) ? [`${entry.operation} ${entry.key ?? ''} → ${entry.status}`] : [];
        } catch {
          return [];
        }
      }),
    stop: async () => {
      admin.destroy();
      await casket.stop();
      rmSync(dir, { recursive: true, force: true });
      // Whatever the clients saw, casket itself must not have failed (InternalError, level ≥ error).
      const failures = casket.logs.filter((line) => /"level":(50|60)\b/.test(line));
      if (failures.length > 0) throw new Error(`casket logged ${failures.length} error(s) while serving ${options.client} over ${protocol}:\n${failures.slice(0, 5).join('\n')}`);
    },
  };
}

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The ETag casket shows for content uploaded in one piece. */
export function plainETag(data: Buffer): string {
  return `"${sha256(data)}"`;
}

/** The ETag casket shows for content uploaded in parts of `partSize` (the last one shorter). */
export function multipartETag(data: Buffer, partSize: number): string {
  const digests: Buffer[] = [];
  for (let off = 0; off < data.length; off += partSize) digests.push(createHash('sha256').update(data.subarray(off, off + partSize)).digest());
  return `"${createHash('sha256').update(Buffer.concat(digests)).digest('hex')}-${digests.length}"`;
}

/** s3cmd and AWS SDK for Java v1 see a plain ETag with `-1` appended (etag-suffix auto). */
export function suffixed(etag: string): string {
  return etag.includes('-') ? etag : etag.replace(/"$/, '-1"');
}
