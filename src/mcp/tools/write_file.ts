/**
 * write_file {path, content, expected_etag?, create_only?}: replaces or
 * creates a file, always conditionally (docs/design.md §8): on expected_etag
 * (If-Match), on create_only (If-None-Match: *), or — given neither — on the
 * agent's last read of the file, exactly as the S3 guard derives it: a
 * version the agent read becomes If-Match (the guard refuses it when that
 * read was partial or is stale); a file the agent never read is created
 * only; under --agent-writes require, an existing file it never read is
 * refused with the guard's 428, as an unconditional S3 PUT would be.
 */
import { z } from 'zod';
import { BadArgument, parseETagArgument, requireFile, showPath } from '../paths.js';
import { ok } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { guarded, refused, tooLarge, type RegisterTool, type ToolEnv } from '../tool.js';
import type { ObjectPath } from '../paths.js';

/** The S3 condition headers of a write that named neither expected_etag nor create_only. */
export async function derivedCondition(env: ToolEnv, p: ObjectPath): Promise<Record<string, string>> {
  const agent = env.caller.agent;
  // A person: plain S3 semantics, as an unconditional PUT (docs/design.md §4).
  if (agent === undefined) return {};
  // Under read-stamp the guard derives the condition itself.
  if (env.door.agentWrites === 'read-stamp') return {};
  const stamp = await env.door.stamp(agent, p.bucket, p.key);
  if (stamp) return { 'if-match': `"${stamp.etag}"` };
  const head = await env.door.s3(env.caller, { method: 'HEAD', bucket: p.bucket, key: p.key });
  // Exists and never read: no condition, so the guard answers its 428 with the current version.
  // Stryker disable next-line StringLiteral: an empty If-None-Match names no version and holds, as * does, for the file the HEAD just found missing: only one created between the HEAD and the PUT tells them apart, a race no test can order
  return head.failure ? { 'if-none-match': '*' } : {};
}

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({ path: pathField, etag: etagField.describe('the new version: pass it as expected_etag to write again'), bytes: z.number(), written: z.boolean() });

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'write_file',
    {
      title: 'Write a file (compare-and-swap)',
      description:
        'Create or replace a file in casket. path is bucket/key. To replace a file, pass expected_etag: the etag read_text_file answered; the write is refused if anyone changed the file since. To create a new file, pass create_only: true (refused if it exists). With neither, the write is conditioned on your last full read of the file. A refusal says what changed and what to call next; nothing is written.',
      inputSchema: {
        path: z.string().describe('bucket/key or s3://bucket/key'),
        content: z.string().describe('the whole new content, UTF-8'),
        expected_etag: z.string().optional().describe('the etag of the version you read and are replacing'),
        create_only: z.boolean().optional().describe('create the file; refuse if it exists'),
      },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ path, content, expected_etag, create_only }, extra) =>
      guarded(shared, extra, async (env) => {
        const p = requireFile(path);
        const body = Buffer.from(content, 'utf8');
        if (body.length > env.maxTextBytes) return tooLarge('content', body.length, env.maxTextBytes);
        if (expected_etag !== undefined && create_only) throw new BadArgument('Give expected_etag or create_only, not both.');
        const headers = expected_etag !== undefined ? { 'if-match': parseETagArgument(expected_etag) } : create_only ? { 'if-none-match': '*' } : await derivedCondition(env, p);
        const res = await env.door.s3(env.caller, { method: 'PUT', bucket: p.bucket, key: p.key, headers: { ...headers, 'content-type': 'text/plain; charset=utf-8' }, body });
        if (res.failure) return refused(env, 'write_file', p, res.failure, headers['if-match'], expected_etag === undefined);
        const etag = res.headers.etag!;
        return ok(`Wrote ${body.length} bytes to ${showPath(p)}: new etag ${etag}.`, { path: showPath(p), etag, bytes: body.length, written: true });
      }),
  );
};
