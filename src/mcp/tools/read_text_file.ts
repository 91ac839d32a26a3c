/**
 * read_text_file {path, head?, tail?, offset?, limit?}: the text, its ETag,
 * and the lines shown. A read that shows every line is a full read stamp;
 * head, tail or offset/limit showing less is partial and entitles no write
 * (docs/design.md §4), exactly like a Range GET.
 */
import { z } from 'zod';
import { BadArgument, requireFile, showPath } from '../paths.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { ok } from '../results.js';
import { guarded, refused, type RegisterTool } from '../tool.js';
import { lineCount, splitLines } from '../text.js';

const line = z.number().int().nonnegative();

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({
  path: pathField,
  etag: etagField,
  lines: z.object({ from: z.number(), to: z.number(), total: z.number() }).describe('the lines shown, 1-based, and how many the file has'),
  read: z.enum(['full', 'partial']).describe('full: you may write the file with expected_etag = etag; partial: read it whole first'),
  last_writer: z.string(),
  content: z.string().describe('the text shown'),
});

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'read_text_file',
    {
      title: 'Read a text file',
      description:
        'Read a text file from casket as UTF-8. path is bucket/key (or s3://bucket/key). The answer ends with the file\'s etag: pass it as expected_etag to write_file, edit_file or delete_file. head/tail (first/last N lines) or offset/limit (0-based line window) read only part of the file, and a partial read does not allow a write: read the whole file before editing it.',
      inputSchema: {
        path: z.string().describe('bucket/key or s3://bucket/key'),
        head: line.optional().describe('only the first N lines'),
        tail: line.optional().describe('only the last N lines'),
        offset: line.optional().describe('first line to show, 0-based'),
        limit: line.optional().describe('how many lines to show from offset'),
      },
      // The text itself is in structuredContent too, as the reference server's `content`: clients
      // that show a model only structuredContent (docs/design.md §12) would otherwise show no text.
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ path, head, tail, offset, limit }, extra) =>
      guarded(shared, extra, async (env) => {
        const p = requireFile(path);
        if (head !== undefined && tail !== undefined) throw new BadArgument('Give head or tail, not both.');
        let shown: { text: string; from: number; to: number; total: number } | undefined;
        const select = (body: Buffer) => {
          const whole = body.toString('utf8');
          // A whole read needs only the count, which is splitLines(whole).length without making every line.
          // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: speed only: without it the window of no head, tail, offset or limit is every line, answered and stamped the same (read-windows.test.ts)
          if (head === undefined && tail === undefined && offset === undefined && limit === undefined) {
            const total = lineCount(whole);
            shown = { text: whole, from: 0, to: total, total };
            return 'full';
          }
          const lines = splitLines(whole);
          const total = lines.length;
          let from = 0;
          let to = total;
          if (head !== undefined) to = Math.min(head, total);
          else if (tail !== undefined) from = Math.max(total - tail, 0);
          if (offset !== undefined) from = Math.min(offset, total);
          if (limit !== undefined) to = Math.min(from + limit, total);
          const all = from === 0 && to === total;
          const text = all ? whole : lines.slice(from, to).join('\n') + (to > from ? '\n' : '');
          shown = { text, from, to, total };
          return all ? 'full' : 'partial';
        };
        const res = await env.door.s3(env.caller, { method: 'GET', bucket: p.bucket, key: p.key }, { maxBytes: env.maxTextBytes, stamp: select });
        if (res.failure) return refused(env, 'read_text_file', p, res.failure);
        const s = shown!;
        const etag = res.headers.etag!;
        const full = s.from === 0 && s.to === s.total;
        const wholeRead = `read_text_file {"path": "${showPath(p)}"} (no head, tail, offset or limit)`;
        const writer = res.headers['x-casket-writer'];
        const by = writer ? `, last written by agent "${writer}"` : '';
        const note = full
          ? `[${showPath(p)}: etag ${etag}${by}, all ${s.total} lines, a full read]`
          : `[${showPath(p)}: etag ${etag}${by}, lines ${s.from + 1}-${s.to} of ${s.total}: a partial read, which does not allow writing this file — read it whole first: ${wholeRead}]`;
        // Metadata before the text, so a long file cut short by a client still shows its etag.
        return ok([s.text, note], {
          path: showPath(p),
          etag,
          lines: { from: s.from + 1, to: s.to, total: s.total },
          read: full ? 'full' : 'partial',
          ...(writer && { last_writer: writer }),
          ...(!full && { next: `${wholeRead} before writing this file` }),
          content: s.text,
        });
      }),
  );
};
