/**
 * Real clients pointed at a running casket: @aws-sdk/client-s3 (path style,
 * optionally tagging every request with the agent header, signed, as the
 * SDK middleware in README "Clients" does) and minio-js.
 */
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import * as Minio from 'minio';
import type { Cred } from './casket.js';

export function sdk(url: string, cred: Cred, options: { agentHeader?: string; retries?: number } = {}): S3Client {
  const client = new S3Client({
    endpoint: url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: cred,
    maxAttempts: options.retries ?? 1,
  });
  if (options.agentHeader) {
    const agent = options.agentHeader;
    client.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { headers: Record<string, string> };
        request.headers['x-agent-id'] = agent;
        return next(args);
      },
      { step: 'build', name: 'agentHeader' },
    );
  }
  return client;
}

export function minio(url: string, cred: Cred): Minio.Client {
  const u = new URL(url);
  return new Minio.Client({
    endPoint: u.hostname,
    port: Number(u.port),
    useSSL: u.protocol === 'https:',
    accessKey: cred.accessKeyId,
    secretKey: cred.secretAccessKey,
    region: 'us-east-1',
    pathStyle: true,
  });
}

/** Drains an SDK body into a Buffer. */
export async function bytes(body: unknown): Promise<Buffer> {
  const b = body as { transformToByteArray(): Promise<Uint8Array> };
  return Buffer.from(await b.transformToByteArray());
}

/** Runs an SDK call expected to fail; returns the error's name and HTTP status. */
export async function failure(p: Promise<unknown>): Promise<{ name: string; status: number | undefined; error: Record<string, unknown> }> {
  try {
    await p;
  } catch (e) {
    const err = e as { name: string; $metadata?: { httpStatusCode?: number } } & Record<string, unknown>;
    return { name: err.name, status: err.$metadata?.httpStatusCode, error: err };
  }
  throw new Error('expected the call to fail, it succeeded');
}

/** The object's bytes as UTF-8 text, or undefined when the key does not exist (NoSuchKey). */
export async function storedText(s3: S3Client, bucket: string, key: string): Promise<string | undefined> {
  try {
    return (await bytes((await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();
  } catch (e) {
    if ((e as { name?: string }).name === 'NoSuchKey') return undefined;
    throw e;
  }
}
