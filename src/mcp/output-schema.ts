/**
 * A tool's outputSchema (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#output-schema):
 * the fields of its answer, a refusal's fields, and the "changed since you
 * read" reminder every answer may carry (changed-since-read.ts).
 *
 * One object schema covers both answers a tool gives. The SDK Client checks
 * `structuredContent` against the outputSchema whenever it is present, a
 * refusal's too (client/index.js callTool), and the schema it is sent has
 * `additionalProperties: false`; JSON Schema's `required` cannot say "these
 * when it succeeded". So a tool's own fields are declared optional here, a
 * refusal's fields beside them, and test/mcp/model-view.test.ts checks that
 * every success carries its fields and every view of it holds them.
 */
import { z, type ZodType } from 'zod';
import { changedSinceReadShape } from './changed-since-read.js';

/** What refusals.ts and results.ts's toolError put in structuredContent; the same words are in the text. */
const refusalShape = {
  error: z.string().optional().describe("present only on a refusal: why, in casket's words (precondition-failed, stale-read, partial-read, not-read, no-such-key, invalid-argument, …) or else S3's error code (NoSuchBucket, AccessDenied, …)"),
  message: z.string().optional().describe('the refusal as the text says it, with the next call'),
  path: z.string().optional().describe('the file refused'),
  bucket: z.string().optional().describe('the bucket that does not exist, when a call naming several files is refused for it'),
  current_etag: z.string().optional().describe('the version the file is now'),
  last_writer: z.string().optional().describe('who wrote the current version'),
  last_writer_access_key: z.string().optional().describe("the access key of a person who wrote the current version (never a secret)"),
  last_modified: z.string().optional().describe('when the current version was written'),
  your_version: z.string().optional().describe('the version your call was conditioned on'),
  identical: z.boolean().optional().describe('the current content is byte-for-byte what you sent'),
  diff: z.string().optional().describe('unified diff'),
  diff_truncated: z.boolean().optional().describe('the diff was cut short'),
  next: z.string().optional().describe('the exact call to make next'),
  written: z.boolean().optional().describe('whether anything was written'),
  bytes: z.number().nullable().optional(),
  max_bytes: z.number().optional(),
};

/** The outputSchema of a tool whose own answer has `fields`. */
export function answerSchema(fields: Record<string, ZodType>): Record<string, ZodType> {
  const optional = Object.fromEntries(Object.entries(fields).map(([name, schema]) => [name, schema.optional()]));
  return { ...refusalShape, ...optional, ...changedSinceReadShape };
}

export const etagField = z.string().describe('the SHA-256 ETag, quoted: pass it as expected_etag');
export const pathField = z.string().describe('bucket/key');
