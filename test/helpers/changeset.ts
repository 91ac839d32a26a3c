/**
 * A client of POST /_casket/commit (src/changesets/endpoint.ts), as a
 * program would write one: a multipart/form-data body (RFC 7578) with the
 * JSON manifest first and one part per body, named after its entry's index,
 * signed with SigV4 by @smithy/signature-v4 (test/helpers/raw.ts).
 */
import { randomBytes } from 'node:crypto';
import type { Cred } from './casket.js';
import { raw } from './raw.js';

export interface CommitEntry {
  key: string;
  /** The new content; absent: delete. */
  body?: string | Buffer;
  'if-match'?: string;
  'if-none-match'?: string;
  'content-type'?: string;
}

export function multipart(entries: CommitEntry[]): { body: Buffer; contentType: string } {
  const boundary = `casket-${randomBytes(8).toString('hex')}`;
  const manifest = {
    entries: entries.map(({ body, ...e }) => ({ ...e, ...(body === undefined && { delete: true }) })),
  };
  const parts: Buffer[] = [Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="manifest"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(manifest)}\r\n`)];
  entries.forEach((e, i) => {
    if (e.body === undefined) return;
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${i}"; filename="${i}"\r\nContent-Type: application/octet-stream\r\n\r\n`), Buffer.from(e.body), Buffer.from('\r\n'));
  });
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

export interface CommitAnswer {
  status: number;
  json: {
    changeset?: string;
    landed?: Array<{ key: string; etag: string | null }>;
    refused?: Array<Record<string, string>>;
    error?: string;
    message?: string;
  };
}

export async function commit(url: string, cred: Cred, bucket: string, entries: CommitEntry[], headers: Record<string, string> = {}): Promise<CommitAnswer> {
  const { body, contentType } = multipart(entries);
  const res = await raw(url, cred, { method: 'POST', path: `/_casket/commit?bucket=${encodeURIComponent(bucket)}`, headers: { 'content-type': contentType, ...headers }, body });
  return { status: res.status, json: JSON.parse(res.body) as CommitAnswer['json'] };
}
