/**
 * what_changed {since?}: this agent's changes feed (docs/design.md §6) — the files
 * it read that someone else has written since, with who, when, the diff
 * from what it read (capped, when casket kept that version) and a cursor
 * for the next call. Reads as an orchestrator would poll
 * /_casket/agents/{agent}/changes, without a wait.
 */
import { z } from 'zod';
import { ok, toolError } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { guarded, type RegisterTool } from '../tool.js';
import { writtenBy } from '../../vocabulary/writer.js';

interface Change {
  bucket: string;
  key: string;
  readETag: string;
  currentETag: string | null;
  writer: string | null;
  writerAccessKey?: string | null;
  operation: string;
  at: string;
  diff: string | null;
}

/** Diffs shown in one answer, at most: the rest are named, to read. */
const MAX_DIFFS = 10;

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({
  cursor: z.string().describe('pass it as since next time'),
  changes: z.array(
    z.object({
      path: pathField,
      your_version: z.string(),
      current_etag: z.string().nullable().describe('null: deleted'),
      writer: z.string().nullable().describe('the agent that wrote it, or null for a person'),
      writer_access_key: z.string().optional().describe("the access key of a person's write (never a secret)"),
      operation: z.string(),
      at: z.string(),
      diff: z.string().optional(),
      diff_truncated: z.boolean().optional(),
    }),
  ),
});

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'what_changed',
    {
      title: 'What others changed in files you read',
      description: 'List the files you read that someone else has changed (or deleted) since, with who changed them, when, and the diff from the version you read. Pass the cursor of the previous answer as since to see only newer changes.',
      inputSchema: { since: z.string().optional().describe('cursor from a previous what_changed answer') },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ since }, extra) =>
      guarded(shared, extra, async (env) => {
        const res = await env.door.changes(env.caller, since);
        const body = res.body as { cursor?: string; changes?: Change[]; error?: string; message?: string };
        if (res.status !== 200) return toolError(`Refused: ${body.message ?? body.error ?? 'the changes feed failed'}`, { error: body.error ?? 'changes-failed' });
        const changes = body.changes ?? [];
        const out = [];
        const lines: string[] = [];
        for (const [i, c] of changes.entries()) {
          const diff = i < MAX_DIFFS && c.currentETag ? await env.door.diff(env.caller, c.bucket, c.key, c.readETag.replace(/"/g, ''), c.currentETag.replace(/"/g, '')) : undefined;
          // The same words as the diff's header lines and a refusal's message (vocabulary/writer.ts).
          const who = writtenBy({ ...(c.writer && { agent: c.writer }), ...(c.writerAccessKey && { accessKey: c.writerAccessKey }) });
          lines.push(`${c.bucket}/${c.key}: ${c.currentETag ? `changed to ${c.currentETag}` : 'deleted'} by ${who} at ${c.at} (you read ${c.readETag})${diff ? `\n${diff.text}` : ''}`);
          out.push({ path: `${c.bucket}/${c.key}`, your_version: c.readETag, current_etag: c.currentETag, writer: c.writer, ...(!c.writer && c.writerAccessKey && { writer_access_key: c.writerAccessKey }), operation: c.operation, at: c.at, ...(diff && { diff: diff.text, diff_truncated: diff.truncated }) });
        }
        const head = changes.length ? `${changes.length} file(s) changed by others since you read them:` : 'Nothing you read has changed since.';
        return ok([head, ...lines, `[cursor: ${body.cursor}; pass it as since next time]`], { cursor: body.cursor, changes: out });
      }),
  );
};
