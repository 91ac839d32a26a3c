/**
 * move_file {source, destination, expected_etag?, destination_etag?}:
 * conditional on both ends (docs/design.md §8). S3 has no rename, so a move is two
 * guarded writes: CopyObject of exactly the source version the agent read
 * (x-amz-copy-source-if-match) to a destination that must not exist (or
 * must still be destination_etag), then DeleteObject of the source under
 * If-Match of that same version. When the source changes between the two,
 * the copy stays and the source is kept, and the answer says so: nobody's
 * newer content is deleted.
 */
import { z } from 'zod';
import { parseETagArgument, requireFile, showPath } from '../paths.js';
import { ok, toolError } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { guarded, refused, type RegisterTool } from '../tool.js';
import { changedSince } from './edit_file.js';

function copySource(bucket: string, key: string): string {
  return `/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
}

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({
  source: pathField,
  destination: pathField,
  etag: etagField.describe('the version moved, now at destination'),
  written: z.boolean(),
  path: pathField,
  copied_to: z.string().describe('on a half-done move: where the copy landed'),
  source_deleted: z.boolean(),
});

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'move_file',
    {
      title: 'Move or rename a file (compare-and-swap on both ends)',
      description:
        'Move a file in casket to a new path (bucket/key). Moves only the version you read: pass expected_etag (its etag); without it, your last full read is used. The destination must not exist, unless you pass destination_etag, the version there you read and mean to replace.',
      inputSchema: {
        source: z.string().describe('bucket/key of the file to move'),
        destination: z.string().describe('bucket/key to move it to'),
        expected_etag: z.string().optional().describe('the etag of the source version you read'),
        destination_etag: z.string().optional().describe('replace the destination only if it is this version'),
      },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ source, destination, expected_etag, destination_etag }, extra) =>
      guarded(shared, extra, async (env) => {
        const from = requireFile(source);
        const to = requireFile(destination);
        let version = expected_etag !== undefined ? parseETagArgument(expected_etag) : undefined;
        if (version === undefined && env.caller.agent !== undefined) {
          const stamp = await env.door.stamp(env.caller.agent, from.bucket, from.key);
          if (stamp?.full) version = `"${stamp.etag}"`;
        }
        if (version === undefined) {
          return toolError(`Refused: you have not read ${showPath(from)} in full, so there is no version to move. Nothing was written.\nNext: read_text_file {"path": "${showPath(from)}"}, then move_file again.`, { error: 'not-read', path: showPath(from), written: false });
        }
        // The source's DELETE is the move's last step: a refusal it is sure to meet (a version named that
        // was never read whole, a key the policy may not delete) comes first, or the copy would be left behind.
        const unmovable = await env.door.mayDelete(env.caller, from.bucket, from.key, { 'if-match': version });
        if (unmovable) return refused(env, 'move_file', from, unmovable, version, expected_etag === undefined);
        const target: Record<string, string> = destination_etag !== undefined ? { 'if-match': parseETagArgument(destination_etag, 'destination_etag') } : { 'if-none-match': '*' };
        const copy = await env.door.s3(env.caller, { method: 'PUT', bucket: to.bucket, key: to.key, headers: { 'x-amz-copy-source': copySource(from.bucket, from.key), 'x-amz-copy-source-if-match': version, ...target } });
        if (copy.failure) {
          // A failed source condition is the source's change; anything else is the destination's.
          const onSource = copy.failure.fields.Condition?.startsWith('x-amz-copy-source') || copy.failure.code === 'NoSuchKey';
          if (!onSource) return refused(env, 'move_file', to, copy.failure, target['if-match'], false, 'destination_etag');
          // Without expected_etag the version is the agent's last read: the refusal says so (refusals.ts since()).
          return refused(env, 'move_file', from, copy.failure.code === 'NoSuchKey' ? copy.failure : await changedSince(env, from, version), version, expected_etag === undefined);
        }
        const removed = await env.door.s3(env.caller, { method: 'DELETE', bucket: from.bucket, key: from.key, headers: { 'if-match': version } });
        if (removed.failure) {
          // Stryker disable next-line ConditionalExpression,EqualityOperator,StringLiteral: the copy just found this version current, so the DELETE is refused as changed only when a write lands between the two, a race no test can order; the tool's name is said only in such a refusal's next call (refusals.ts), never in the AccessDenied one a test can cause
          const why = await refused(env, 'move_file', from, removed.failure, version, expected_etag === undefined);
          // Stryker disable next-line StringLiteral: a refusal (refusals.ts) answers one text part, so what stands for another part is never read; the 'text' test itself is killed by move-file.test.ts
          const first = why.content[0]!.type === 'text' ? why.content[0]!.text : '';
          // Stryker disable next-line Regex: every refusal's text starts "Refused: " (refusals.ts), so the first match is the one at the start, anchored or not
          return toolError(`Copied ${showPath(from)} (version ${version}) to ${showPath(to)}, but the source was not deleted: ${first.replace(/^Refused: /, '')}`, { ...why.structuredContent, copied_to: showPath(to), source_deleted: false });
        }
        return ok(`Moved ${showPath(from)} (version ${version}) to ${showPath(to)}.`, { source: showPath(from), destination: showPath(to), etag: version, written: true });
      }),
  );
};
