/**
 * list_directory {path}: the files and "directories" (common prefixes under
 * `/`) directly under a bucket/prefix, as the reference server's
 * `[FILE] name` / `[DIR] name` lines, with each file's etag. A listing reads
 * no content and entitles no write (docs/design.md §4).
 */
import { XMLParser } from 'fast-xml-parser';
import { z } from 'zod';
import { parsePath } from '../paths.js';
import { ok } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { guarded, refused, type RegisterTool, type ToolEnv } from '../tool.js';

// Keys stay strings ("007" is not 7).
const xml = new XMLParser({ parseTagValue: false, isArray: (name) => name === 'Contents' || name === 'CommonPrefixes' });
/** Pages of 1,000 keys a listing follows before it says it stopped. */
const MAX_PAGES = 10;

export interface Listed {
  files: Array<{ key: string; size: number; etag: string; lastModified: string }>;
  dirs: string[];
  truncated: boolean;
}

type ListPage = { ListBucketResult?: { Contents?: Array<{ Key: unknown; Size: number; ETag: string; LastModified: string }>; CommonPrefixes?: Array<{ Prefix: unknown }>; IsTruncated?: string; NextContinuationToken?: string } };

/** ListObjectsV2 through casket (policies apply, s3:prefix included), page after page. */
export async function listKeys(env: ToolEnv, bucket: string, prefix: string, delimiter: string | undefined) {
  const out: Listed = { files: [], dirs: [], truncated: false };
  let token: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const q = new URLSearchParams({ 'list-type': '2', prefix, ...(delimiter && { delimiter }), ...(token && { 'continuation-token': token }) });
    const res = await env.door.s3(env.caller, { method: 'GET', bucket, query: q.toString().replace(/\+/g, '%20') }, { maxBytes: 16 * 1024 * 1024, stamp: 'none' });
    if (res.failure) return res.failure;
    const r = (xml.parse(res.body!.toString('utf8')) as ListPage).ListBucketResult ?? {};
    for (const c of r.Contents ?? []) out.files.push({ key: String(c.Key), size: Number(c.Size), etag: String(c.ETag), lastModified: String(c.LastModified) });
    for (const d of r.CommonPrefixes ?? []) out.dirs.push(String(d.Prefix));
    token = r.IsTruncated === 'true' ? r.NextContinuationToken : undefined;
    if (!token) return out;
  }
  out.truncated = true;
  return out;
}

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({
  path: z.string().describe('bucket/prefix listed'),
  directories: z.array(z.string()),
  files: z.array(z.object({ name: z.string(), size: z.number(), etag: etagField, last_modified: z.string() })),
  truncated: z.boolean().describe('true when the listing stopped early'),
});

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'list_directory',
    {
      title: 'List a directory',
      description: 'List the files and directories directly under a path in casket: a bucket ("bucket" or "bucket/") or a prefix ("bucket/some/dir"). Each line is [FILE] or [DIR]; files show their size and etag.',
      inputSchema: { path: z.string().describe('bucket, bucket/, or bucket/prefix') },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ path }, extra) =>
      guarded(shared, extra, async (env) => {
        const p = parsePath(path);
        const prefix = p.key === '' || p.key.endsWith('/') ? p.key : `${p.key}/`;
        const listed = await listKeys(env, p.bucket, prefix, '/');
        if ('code' in listed) return refused(env, 'list_directory', p, listed);
        const name = (k: string) => k.slice(prefix.length);
        const lines = [...listed.dirs.map((d) => `[DIR] ${name(d)}`), ...listed.files.map((f) => `[FILE] ${name(f.key)} (${f.size} bytes, etag ${f.etag})`)];
        if (listed.truncated) lines.push('[... more entries: list a narrower prefix]');
        return ok(lines.length ? lines.join('\n') : `(empty: nothing under ${p.bucket}/${prefix})`, {
          path: `${p.bucket}/${prefix}`,
          directories: listed.dirs.map(name),
          files: listed.files.map((f) => ({ name: name(f.key), size: f.size, etag: f.etag, last_modified: f.lastModified })),
          truncated: listed.truncated,
        });
      }),
  );
};
