/**
 * get_file_info {path}: size, etag, last modified, last writer, and this
 * agent's read stamp of the file — none, partial, full, or stale (it last
 * read another version) — so a model knows whether it may write before it
 * tries. A HEAD: reads nothing, stamps nothing (docs/design.md §4).
 */
import { z } from 'zod';
import { requireFile, showPath } from '../paths.js';
import { ok } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { guarded, refused, type RegisterTool } from '../tool.js';

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({
  path: pathField,
  size: z.number(),
  etag: etagField,
  last_modified: z.string().nullable(),
  last_writer: z.string().nullable(),
  content_type: z.string().nullable(),
  your_read: z.enum(['none', 'partial', 'full', 'stale', 'not an agent']),
  your_read_etag: z.string().describe('the version you last read'),
});

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'get_file_info',
    {
      title: 'File metadata and your read stamp',
      description:
        'Size, etag, last modified time and last writer of a file in casket, and whether you may write it: your read of it is "none" (never read), "partial" (only part: read it whole first), "full" (you may write with expected_etag = etag) or "stale" (someone changed it since you read it). Reads no content.',
      inputSchema: { path: z.string().describe('bucket/key or s3://bucket/key') },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ path }, extra) =>
      guarded(shared, extra, async (env) => {
        const p = requireFile(path);
        const head = await env.door.s3(env.caller, { method: 'HEAD', bucket: p.bucket, key: p.key });
        if (head.failure) return refused(env, 'get_file_info', p, head.failure);
        const h = head.headers;
        const etag = h.etag!;
        const stamp = env.caller.agent !== undefined ? await env.door.stamp(env.caller.agent, p.bucket, p.key) : undefined;
        const read = env.caller.agent === undefined ? 'not an agent' : !stamp ? 'none' : `"${stamp.etag}"` !== etag ? 'stale' : stamp.full ? 'full' : 'partial';
        const info = {
          path: showPath(p),
          size: Number(h['content-length'] ?? 0),
          etag,
          last_modified: h['last-modified'] ? new Date(h['last-modified']).toISOString() : null,
          last_writer: h['x-casket-writer'] ?? null,
          content_type: h['content-type'] ?? null,
          your_read: read,
          ...(stamp && { your_read_etag: `"${stamp.etag}"` }),
        };
        return ok(Object.entries(info).map(([k, v]) => `${k}: ${v}`).join('\n'), info);
      }),
  );
};
