/**
 * apply_patch {patch}: a unified diff of one or more files (`--- a/bucket/key`,
 * `+++ b/bucket/key`; /dev/null creates or deletes). Each file is
 * conditioned on the version this agent last read in full (docs/design.md §8), and
 * is committed whole by one conditional write, so no file is ever
 * half-patched.
 *
 * Two phases. First every file's hunks are applied, in casket, to the
 * version the agent read: a patch that does not apply to that version is the
 * model's mistake, and then nothing at all is written. Then each file is
 * committed under If-Match of that version (If-None-Match: * for a new
 * file): a file someone changed since is refused with its diff, the others
 * land, and the answer lists both.
 */
import { applyPatch, parsePatch, type StructuredPatch } from 'diff';
import { z } from 'zod';
import type { S3Failure } from '../door.js';
import { BadArgument, requireFile, showPath, type ObjectPath } from '../paths.js';
import { ok, toolError } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { guarded, refused, type RegisterTool, type ToolEnv } from '../tool.js';
import { changedSince } from './edit_file.js';

const NULL = '/dev/null';

/** A header path as git writes it (`a/…`, `b/…`) or bare. */
function headerPath(name: string | undefined, side: 'a/' | 'b/'): string | undefined {
  if (name === undefined || name === NULL || name === '') return undefined;
  const bare = name.replace(/\t.*$/, '');
  return bare.startsWith(side) ? bare.slice(2) : bare;
}

interface Planned {
  path: ObjectPath & { key: string };
  /** The version it replaces (quoted); undefined: created. */
  base?: string;
  /** New content; undefined: deleted. */
  content?: Buffer;
}

type Prepared = { planned: Planned } | { conflict: S3Failure; path: ObjectPath; base?: string };

async function prepare(env: ToolEnv, file: StructuredPatch): Promise<Prepared> {
  const oldPath = headerPath(file.oldFileName, 'a/');
  const newPath = headerPath(file.newFileName, 'b/');
  const named = newPath ?? oldPath;
  if (!named) throw new BadArgument('A file in the patch names no path: use --- a/bucket/key and +++ b/bucket/key headers.');
  const path = requireFile(named);
  if (oldPath !== undefined && newPath !== undefined && oldPath !== newPath) throw new BadArgument(`The patch renames ${oldPath} to ${newPath}: use move_file for that, then patch.`);
  if (oldPath === undefined) {
    // A new file: its content is the hunks' added lines.
    const made = applyPatch('', file);
    if (made === false) throw new BadArgument(`The patch's hunks for new file ${named} do not form a file.`);
    return { planned: { path, content: Buffer.from(made, 'utf8') } };
  }
  const agent = env.caller.agent;
  const stamp = agent !== undefined ? await env.door.stamp(agent, path.bucket, path.key) : undefined;
  const base = stamp ? `"${stamp.etag}"` : undefined;
  const got = await env.door.s3(env.caller, { method: 'GET', bucket: path.bucket, key: path.key, headers: base ? { 'if-match': base } : {} }, { maxBytes: env.maxTextBytes, stamp: 'none' });
  if (got.failure) {
    if (got.failure.code === 'PreconditionFailed' && base) return { conflict: await changedSince(env, path, base), path, base };
    return { conflict: got.failure, path, ...(base && { base }) };
  }
  // The guard refuses at commit when the agent's read was partial, or it never read the file.
  const version = base ?? got.headers.etag!;
  if (newPath === undefined) return { planned: { path, base: version } };
  const patched = applyPatch(got.body!.toString('utf8'), file);
  if (patched === false) throw new BadArgument(`The patch does not apply to ${named} as you last read it (version ${version}): its context or removed lines differ. Read the file again and make the patch from what it holds.`);
  return { planned: { path, base: version, content: Buffer.from(patched, 'utf8') } };
}

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({
  landed: z.array(z.object({ path: pathField, etag: z.string().nullable().describe('the new version; null: deleted') })),
  refused: z.array(z.record(z.string(), z.unknown())).describe('each refused file, as a single refusal of it'),
  written: z.boolean(),
});

export const register: RegisterTool = (server, env) => {
  server.registerTool(
    'apply_patch',
    {
      title: 'Apply a unified diff (compare-and-swap per file)',
      description:
        'Apply a unified diff to one or more files in casket. Headers name files as --- a/bucket/key and +++ b/bucket/key (--- /dev/null creates a file, +++ /dev/null deletes one). Each file is patched only if it is still the version you last read in full; a patch that does not apply writes nothing at all. Files someone changed since your read are refused with their diff; the answer lists which files landed and which did not.',
      inputSchema: { patch: z.string().min(1).describe('unified diff text') },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ patch }) =>
      guarded(async () => {
        let files: StructuredPatch[];
        try {
          files = parsePatch(patch);
        } catch (e) {
          throw new BadArgument(`The patch does not parse as a unified diff: ${(e as Error).message}`);
        }
        files = files.filter((f) => f.hunks.length > 0 || f.oldFileName === NULL || f.newFileName === NULL);
        if (files.length === 0) throw new BadArgument('The patch has no hunks: give --- / +++ headers and @@ hunks.');
        const seen = new Set<string>();
        const prepared: Prepared[] = [];
        for (const file of files) {
          const p = await prepare(env, file);
          const where = showPath('planned' in p ? p.planned.path : p.path);
          if (seen.has(where)) throw new BadArgument(`The patch names ${where} twice: merge its hunks into one file section.`);
          seen.add(where);
          prepared.push(p);
        }
        const landed: Array<{ path: string; etag: string | null }> = [];
        const refusedFiles: Array<Record<string, unknown>> = [];
        const texts: string[] = [];
        const refuse = async (path: ObjectPath, failure: S3Failure, base?: string) => {
          const r = await refused(env, 'apply_patch', path, failure, base);
          refusedFiles.push({ ...r.structuredContent });
          texts.push(r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n'));
        };
        for (const p of prepared) {
          if ('conflict' in p) {
            await refuse(p.path, p.conflict, p.base);
            continue;
          }
          const { path, base, content } = p.planned;
          const condition: Record<string, string> = base ? { 'if-match': base } : { 'if-none-match': '*' };
          const res = content
            ? await env.door.s3(env.caller, { method: 'PUT', bucket: path.bucket, key: path.key, headers: { ...condition, 'content-type': 'text/plain; charset=utf-8' }, body: content })
            : await env.door.s3(env.caller, { method: 'DELETE', bucket: path.bucket, key: path.key, headers: condition });
          if (res.failure) await refuse(path, res.failure, base);
          else {
            landed.push({ path: showPath(path), etag: content ? res.headers.etag! : null });
            texts.unshift(`Landed: ${showPath(path)}${content ? ` (new etag ${res.headers.etag})` : ' (deleted)'}`);
          }
        }
        const structured = { landed, refused: refusedFiles, written: landed.length > 0 };
        if (refusedFiles.length === 0) return ok(texts, structured);
        const summary = `${landed.length} of ${prepared.length} file(s) landed; ${refusedFiles.length} refused (nothing written to those):`;
        return toolError([summary, ...texts].join('\n\n'), { ...structured, error: 'some-files-refused' });
      }),
  );
};
