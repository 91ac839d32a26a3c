/**
 * edit_file {path, edits:[{oldText,newText}], expected_etag?, dryRun?, merge?}:
 * the edits are applied here, in casket, to the version the condition names
 * — expected_etag, else the agent's last read — and committed with that
 * version as the If-Match condition (docs/design.md §8). The backend checks it
 * atomically at commit, so of two edits of one version exactly one lands,
 * even when both make the same text (docs/design.md §3: a failed condition is a
 * refusal whatever the bytes).
 *
 * Reading the base to apply the edits records no read stamp: it is casket's
 * read, not the agent's, so the guard still judges the write on what the
 * agent itself read (a partial or stale read is refused as over S3).
 * merge: true sends the write as a three-way merge (x-casket-merge: text,
 * docs/design.md §6): when someone changed the file since the base, casket merges
 * the two when they touch different lines.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { S3Failure } from '../door.js';
import { parseETagArgument, requireFile, showPath, unquote, type ObjectPath } from '../paths.js';
import { ok } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { applyEdits, gitDiff, type Edit } from '../text.js';
import { guarded, refused, tooLarge, type RegisterTool, type ToolEnv } from '../tool.js';

/**
 * The refusal of a call whose named version is no longer current, with the
 * current one's state (a HEAD), and whether the current content is what the
 * call would have written (`attempted`, its SHA-256) — docs/design.md §3's
 * "identical", so the model can tell a landed earlier call of its own.
 */
export async function changedSince(env: ToolEnv, p: ObjectPath, base: string, attempted?: string): Promise<S3Failure> {
  const head = await env.door.s3(env.caller, { method: 'HEAD', bucket: p.bucket, key: p.key });
  // Stryker disable next-line ObjectLiteral,StringLiteral: every caller's condition was just refused with 412 by a file that exists, so this HEAD fails only for a file deleted between the two requests, a race no test can order
  if (head.failure) return { ...head.failure, fields: { ...head.failure.fields, Reason: 'precondition-failed' } };
  const h = head.headers;
  return {
    status: 412,
    // Stryker disable next-line StringLiteral: every caller hands this to refused() (tool.ts), whose words follow the Reason field set below; code and message are read only for failures without one (refusals.ts)
    code: 'PreconditionFailed',
    // Stryker disable next-line StringLiteral: as code above
    message: `The file is no longer version ${base}.`,
    fields: {
      Reason: 'precondition-failed',
      CurrentETag: h.etag,
      ...(h['x-casket-writer'] !== undefined && { LastWriter: h['x-casket-writer'] }),
      ...(h['last-modified'] !== undefined && { LastModified: new Date(h['last-modified']).toISOString() }),
      // Stryker disable next-line ConditionalExpression: no ETag is "undefined" quoted, so without `attempted` the comparison after it is false all the same
      ...(attempted !== undefined && h.etag === `"${attempted}"` && { IdenticalContent: 'true' }),
    },
  };
}

/** The SHA-256 of what the edits make of `content`; undefined when they do not apply to it. */
function wouldWrite(content: Buffer, edits: readonly Edit[]): string | undefined {
  try {
    return createHash('sha256').update(applyEdits(content.toString('utf8'), edits), 'utf8').digest('hex');
  // Stryker disable next-line BlockStatement: a function that ends without a return answers undefined too
  } catch {
    return undefined;
  }
}

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({
  path: pathField,
  diff: z.string().describe('git-style unified diff of the edit'),
  etag: etagField.describe('the new version (on a dry run: the version the diff applies to)'),
  previous_etag: z.string().describe('the version the edit replaced'),
  merged: z.boolean().describe('true when merged into a version someone else wrote since yours'),
  written: z.boolean(),
});

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'edit_file',
    {
      title: 'Edit a file (compare-and-swap)',
      description:
        'Replace exact text in a file in casket, applied by casket to the version you read and committed only if the file is still that version. path is bucket/key. Each oldText must occur exactly once (include surrounding lines to make it unique). Pass expected_etag (the etag read_text_file answered); without it, your last full read of the file is used. Answers a git-style diff and the new etag. dryRun: true shows the diff without writing. merge: true merges your edit into a newer version when the two change different lines. A refusal says what changed and what to call next; nothing is written.',
      inputSchema: {
        path: z.string().describe('bucket/key or s3://bucket/key'),
        edits: z.array(z.object({ oldText: z.string().describe('text to find, exactly once'), newText: z.string().describe('text to put in its place') })).min(1).describe('the replacements, in order: each applies to the text the ones before it made'),
        expected_etag: z.string().optional().describe('the etag of the version you read'),
        dryRun: z.boolean().optional().describe('show the diff, write nothing'),
        merge: z.boolean().optional().describe('merge into a newer version when the changes do not overlap'),
      },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ path, edits, expected_etag, dryRun, merge }, extra) =>
      guarded(shared, extra, async (env) => {
        const p = requireFile(path);
        let base = expected_etag !== undefined ? parseETagArgument(expected_etag) : undefined;
        // Without expected_etag the condition is the agent's last read: a refusal says so, not "the one you named" (refusals.ts since()).
        const derived = expected_etag === undefined;
        if (base === undefined && env.caller.agent !== undefined) {
          const stamp = await env.door.stamp(env.caller.agent, p.bucket, p.key);
          if (stamp) base = `"${stamp.etag}"`;
        }
        const got = await env.door.s3(env.caller, { method: 'GET', bucket: p.bucket, key: p.key, headers: base ? { 'if-match': base } : {} }, { maxBytes: env.maxTextBytes, stamp: 'none' });
        let original: Buffer | undefined = got.body;
        let contentType = got.headers['content-type'];
        if (got.failure) {
          // The door stops reading past the limit; the GET's Content-Length still says the file's size.
          if (got.failure.code === 'EntityTooLarge') return tooLarge(showPath(p), Number(got.headers['content-length']), env.maxTextBytes);
          if (got.failure.code !== 'PreconditionFailed' || base === undefined) {
            // Stryker disable next-line StringLiteral: the tool's name is said only in a next call to it, which the refusals of a read name none of (NoSuchKey, NoSuchBucket, AccessDenied: refusals.ts)
            return refused(env, 'edit_file', p, got.failure, base, derived);
          }
          // The named version is no longer current. A merge can still start
          // from it when casket kept it (docs/design.md §6); a refusal says whether
          // the edit would have made the current content.
          const kept = await env.door.retained(env.caller, p.bucket, p.key, unquote(base));
          if (!kept || !merge || dryRun) return refused(env, 'edit_file', p, await changedSince(env, p, base, kept && wouldWrite(kept, edits)), base, derived);
          original = kept;
          // The merge lands on the current version: it keeps that version's Content-Type, as an edit of it would.
          contentType = (await env.door.s3(env.caller, { method: 'HEAD', bucket: p.bucket, key: p.key })).headers['content-type'];
        }
        base ??= got.headers.etag!;
        const before = original!.toString('utf8');
        const after = applyEdits(before, edits);
        const diff = gitDiff(showPath(p), before, after);
        if (dryRun) return ok([diff, `[dry run: nothing written; the file is version ${base}]`], { path: showPath(p), diff, etag: base, written: false });
        const body = Buffer.from(after, 'utf8');
        if (body.length > env.maxTextBytes) return tooLarge('the edited file', body.length, env.maxTextBytes);
        // Stryker disable next-line StringLiteral: the GET and HEAD above always name a Content-Type (s3/object-headers.ts: binary/octet-stream when the write gave none, as AWS answers), so the fallback is never reached
        const headers: Record<string, string> = { 'if-match': base, 'content-type': contentType || 'text/plain; charset=utf-8' };
        // Stryker disable next-line ConditionalExpression: with If-Match on the version current at the GET, a merge write is an ordinary write (s3/merge-write.ts); only a write landing between the GET and this PUT tells them apart, a race no test can order
        if (merge) headers['x-casket-merge'] = 'text';
        const put = await env.door.s3(env.caller, { method: 'PUT', bucket: p.bucket, key: p.key, headers, body });
        if (put.failure) return refused(env, 'edit_file', p, put.failure, base, derived);
        const etag = put.headers.etag!;
        const merged = put.headers['x-casket-merged'];
        const note = merged ? `[merged into version ${merged}, which someone else wrote since ${base}; new etag ${etag}]` : `[${showPath(p)}: new etag ${etag}]`;
        return ok([diff, note], { path: showPath(p), diff, etag, previous_etag: merged ?? base, ...(merged && { merged: true }), written: true });
      }),
  );
};
