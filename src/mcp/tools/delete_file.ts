/**
 * delete_file {path, expected_etag?}: deletes a file, conditionally as any
 * write (docs/design.md §8): on expected_etag, else on the agent's last read of it
 * — an agent never deletes content it has not read in full, nor a version
 * newer than the one it read (docs/design.md §4).
 */
import { z } from 'zod';
import { parseETagArgument, requireFile, showPath } from '../paths.js';
import { ok } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { guarded, refused, type RegisterTool } from '../tool.js';
import { derivedCondition } from './write_file.js';

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({ path: pathField, deleted: z.boolean(), written: z.boolean() });

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'delete_file',
    {
      title: 'Delete a file (compare-and-swap)',
      description: 'Delete a file in casket, only if it is still the version you read: pass expected_etag (the etag read_text_file answered); without it, your last full read of the file is used. Refused, with what changed, if anyone changed it since.',
      inputSchema: {
        path: z.string().describe('bucket/key or s3://bucket/key'),
        expected_etag: z.string().optional().describe('the etag of the version you read and are deleting'),
      },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ path, expected_etag }, extra) =>
      guarded(shared, extra, async (env) => {
        const p = requireFile(path);
        let headers: Record<string, string>;
        if (expected_etag !== undefined) headers = { 'if-match': parseETagArgument(expected_etag) };
        else {
          headers = await derivedCondition(env, p);
          // A delete cannot "create only": the agent never read the key, which does not exist.
          if (headers['if-none-match'] !== undefined) {
            // Stryker disable next-line StringLiteral: an empty If-Match names no version, and the agent's delete of a key that does not exist is refused as no-such-key all the same: only a file created between derivedCondition's HEAD and this DELETE tells them apart, a race no test can order
            headers = { 'if-match': '*' };
          }
        }
        const res = await env.door.s3(env.caller, { method: 'DELETE', bucket: p.bucket, key: p.key, headers });
        if (res.failure) return refused(env, 'delete_file', p, res.failure, headers['if-match'], expected_etag === undefined);
        // Stryker disable next-line StringLiteral: If-Match is * only for a key derivedCondition found missing, whose delete is refused: a delete that lands with it needs a file created between the HEAD and the DELETE, a race no test can order
        const version = headers['if-match'] !== '*' ? headers['if-match'] : undefined;
        return ok(`Deleted ${showPath(p)}${version ? ` (version ${version})` : ''}.`, { path: showPath(p), deleted: true, written: true });
      }),
  );
};
