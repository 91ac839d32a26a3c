/**
 * search_files {path, pattern, excludePatterns?}: keys under a bucket/prefix
 * whose path relative to it matches a glob (`*` within one segment, `**`
 * across segments, `?` one character) — the reference server's search_files
 * over keys instead of a directory tree. Reads no content.
 */
import { z } from 'zod';
import { parsePath } from '../paths.js';
import { ok } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { guarded, refused, type RegisterTool } from '../tool.js';
import { listKeys } from './list_directory.js';

export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      // "**/" matches zero or more whole segments; a bare "**" anything.
      if (glob[i + 2] === '/') {
        re += '(?:.*/)?';
        i += 2;
      } else {
        re += '.*';
        i += 1;
      }
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({ matches: z.array(z.object({ path: pathField, size: z.number(), etag: etagField })), truncated: z.boolean() });

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'search_files',
    {
      title: 'Find files by name',
      description: 'Find files under a path in casket (a bucket, or bucket/prefix) whose path relative to it matches a glob pattern: * within one directory, ** across directories, ? one character (e.g. "**/*.md"). A pattern without "/" matches file names at any depth.',
      inputSchema: {
        path: z.string().describe('bucket or bucket/prefix to search under'),
        pattern: z.string().min(1).describe('glob, e.g. **/*.ts'),
        excludePatterns: z.array(z.string()).optional().describe('globs of paths to leave out'),
      },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ path, pattern, excludePatterns }, extra) =>
      guarded(shared, extra, async (env) => {
        const p = parsePath(path);
        const prefix = p.key === '' || p.key.endsWith('/') ? p.key : `${p.key}/`;
        const listed = await listKeys(env, p.bucket, prefix, undefined);
        if ('code' in listed) return refused(env, 'search_files', p, listed);
        const match = globToRegExp(pattern.includes('/') ? pattern : `**/${pattern}`);
        const excluded = (excludePatterns ?? []).map((g) => globToRegExp(g.includes('/') ? g : `**/${g}`));
        const found = listed.files.filter((f) => {
          const rel = f.key.slice(prefix.length);
          return match.test(rel) && !excluded.some((x) => x.test(rel));
        });
        const lines = found.map((f) => `${p.bucket}/${f.key} (etag ${f.etag})`);
        if (listed.truncated) lines.push('[... the listing stopped early: search a narrower path]');
        return ok(lines.length ? lines.join('\n') : 'No matches found', { matches: found.map((f) => ({ path: `${p.bucket}/${f.key}`, size: f.size, etag: f.etag })), truncated: listed.truncated });
      }),
  );
};
