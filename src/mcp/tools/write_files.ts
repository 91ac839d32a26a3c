/**
 * write_files {files: [{path, content, expected_etag?, create_only?}]}:
 * several whole files written as one changeset (src/changesets/, issue 39) —
 * all land, or none does. Each file is conditioned exactly as write_file
 * conditions one (on expected_etag, on create_only, or on the agent's last
 * full read), and judged by the same guard. When any file is refused,
 * nothing is written and the answer lists every refused file, each as
 * write_file's own refusal of it would read (current etag, writer, diff, the
 * next call).
 */
import { z } from 'zod';
import type { ChangesetFile } from '../door.js';
import { BadArgument, parseETagArgument, requireFile, showPath } from '../paths.js';
import { ok, toolError } from '../results.js';
import { answerSchema, pathField } from '../output-schema.js';
import { guarded, refused, tooLarge, type RegisterTool } from '../tool.js';
import { changesetUnfinished } from '../refusals.js';
import { derivedCondition } from './write_file.js';

/** As a changeset's HTTP endpoint (src/changesets/commit.ts MAX_ENTRIES); a tool call's files are text, each within maxTextBytes. */
const MAX_FILES = 1000;

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({
  files: z.array(z.object({ path: pathField, etag: z.string().describe('the new version: pass it as expected_etag to write again') })).describe('every file, written'),
  refused: z.array(z.record(z.string(), z.unknown())).describe('each refused file, as write_file would refuse it; when any is refused, none is written'),
});

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'write_files',
    {
      title: 'Write several files, all or none (compare-and-swap)',
      description:
        'Create or replace several files in casket at once: they all land, or none does. Each file is {path, content, expected_etag?, create_only?}, conditioned as write_file conditions one: expected_etag (the etag you read), create_only: true for a new file, or neither (your last full read). If any file is refused, nothing is written, and the answer lists every refused file with what changed and the next call.',
      inputSchema: {
        files: z
          .array(
            z.object({
              path: z.string().describe('bucket/key or s3://bucket/key'),
              content: z.string().describe('the whole new content, UTF-8'),
              expected_etag: z.string().optional().describe('the etag of the version you read and are replacing'),
              create_only: z.boolean().optional().describe('create the file; refuse if it exists'),
            }),
          )
          .min(1)
          .describe('the files to write together'),
      },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ files }, extra) =>
      guarded(shared, extra, async (env) => {
        if (files.length > MAX_FILES) throw new BadArgument(`write_files takes at most ${MAX_FILES} files; split the ${files.length} into several calls.`);
        const seen = new Set<string>();
        const planned: Array<ChangesetFile & { where: string; base?: string; derived: boolean }> = [];
        for (const f of files) {
          const p = requireFile(f.path);
          const where = showPath(p);
          if (seen.has(where)) throw new BadArgument(`${where} is named twice: give each file once.`);
          seen.add(where);
          const content = Buffer.from(f.content, 'utf8');
          if (content.length > env.maxTextBytes) return tooLarge(`the content of ${where}`, content.length, env.maxTextBytes);
          if (f.expected_etag !== undefined && f.create_only) throw new BadArgument(`${where}: give expected_etag or create_only, not both.`);
          const headers = f.expected_etag !== undefined ? { 'if-match': parseETagArgument(f.expected_etag) } : f.create_only ? { 'if-none-match': '*' } : await derivedCondition(env, p);
          planned.push({ bucket: p.bucket, key: p.key, content, contentType: 'text/plain; charset=utf-8', headers, where, base: headers['if-match'], derived: f.expected_etag === undefined });
        }
        const answer = await env.door.commit(
          env.caller,
          planned.map(({ where: _, base: __, derived: ___, ...file }) => file),
        );
        if ('failure' in answer || 'landing' in answer) return changesetUnfinished(answer);
        if ('landed' in answer) {
          const written = answer.landed.map((l) => ({ path: showPath({ bucket: l.bucket, key: l.key }), etag: l.etag! }));
          const lines = written.map((w, i) => `${w.path}: ${planned[i]!.content!.length} bytes, new etag ${w.etag}`);
          return ok(`Wrote ${written.length} file(s), all together:\n${lines.join('\n')}`, { files: written, written: true });
        }
        const refusedFiles: Array<Record<string, unknown>> = [];
        const texts: string[] = [];
        for (const r of answer.refused) {
          const file = planned.find((p) => p.bucket === r.bucket && p.key === r.key)!;
          const one = await refused(env, 'write_files', { bucket: r.bucket, key: r.key }, r.failure, file.base, file.derived);
          refusedFiles.push({ ...one.structuredContent });
          // Stryker disable next-line StringLiteral: a refusal (refusals.ts) answers text parts only, so what stands for another part is never read; the 'text' test itself is killed by write-files.test.ts
          texts.push(one.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n'));
        }
        const summary = `Nothing was written: write_files lands all its files or none, and ${refusedFiles.length} of the ${planned.length} file(s) ${refusedFiles.length === 1 ? 'was' : 'were'} refused:`;
        return toolError([summary, ...texts].join('\n\n'), { refused: refusedFiles, written: false, error: 'some-files-refused' });
      }),
  );
};
