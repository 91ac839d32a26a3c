/**
 * apply_patch {patch}: a unified diff of one or more files (`--- a/bucket/key`,
 * `+++ b/bucket/key`; /dev/null creates or deletes). Each file is
 * conditioned on the version this agent last read in full (docs/design.md §8), and
 * and the whole patch is committed as one changeset (src/changesets/,
 * issue 39): every file lands, or none does.
 *
 * Two phases. First every file's hunks are applied, in casket, to the
 * version the agent read: a patch that does not apply to that version is the
 * model's mistake, and then nothing at all is written. Then the files are
 * committed together, each under If-Match of that version (If-None-Match: *
 * for a new file): when any file was changed since, nothing is written and
 * the answer lists every such file with its diff — never a half-applied
 * patch that other agents read and build on.
 */
import { applyPatch, parsePatch, type StructuredPatch } from 'diff';
import { z } from 'zod';
import type { ChangesetFile, S3Failure } from '../door.js';
import { BadArgument, requireFile, showPath, type ObjectPath } from '../paths.js';
import { ok, toolError } from '../results.js';
import { answerSchema, etagField, pathField } from '../output-schema.js';
import { guarded, refused, type RegisterTool, type ToolEnv } from '../tool.js';
import { changesetUnfinished } from '../refusals.js';
import { changedSince } from './edit_file.js';

const NULL = '/dev/null';

/** A header path as git writes it (`a/…`, `b/…`) or bare. */
function headerPath(name: string | undefined, side: 'a/' | 'b/'): string | undefined {
  if (name === undefined || name === NULL || name === '') return undefined;
  // Stryker disable next-line Regex,StringLiteral: jsdiff's parsePatch ends a header's file name at the tab before git's timestamp, so no name here holds a tab (test/mcp/apply-patch.test.ts passes with this line made `name`)
  const bare = name.replace(/\t.*$/, '');
  return bare.startsWith(side) ? bare.slice(2) : bare;
}

interface Planned {
  path: ObjectPath & { key: string };
  /** The version it replaces (quoted); undefined: created. */
  base?: string;
  /** New content; undefined: deleted. */
  content?: Buffer;
  /** The patched file's Content-Type, kept as edit_file keeps it; a new file is text. */
  contentType?: string;
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
  const contentType = got.headers['content-type'];
  return { planned: { path, base: version, content: Buffer.from(patched, 'utf8'), ...(contentType && { contentType }) } };
}

/** Built once: the server is built per request (tools.ts). */
const OUTPUT_SCHEMA = answerSchema({
  landed: z.array(z.object({ path: pathField, etag: z.string().nullable().describe('the new version; null: deleted') })),
  refused: z.array(z.record(z.string(), z.unknown())).describe('each refused file, as a single refusal of it: when any file is refused, none is written'),
  written: z.boolean(),
});

export const register: RegisterTool = (server, shared) => {
  server.registerTool(
    'apply_patch',
    {
      title: 'Apply a unified diff (all files or none, compare-and-swap)',
      description:
        'Apply a unified diff to one or more files in casket. Headers name files as --- a/bucket/key and +++ b/bucket/key (--- /dev/null creates a file, +++ /dev/null deletes one). Each file is patched only if it is still the version you last read in full, and the files land together or not at all: a patch that does not apply, or a file someone changed since your read, writes nothing at all. The answer lists every refused file with its diff.',
      inputSchema: { patch: z.string().min(1).describe('unified diff text') },
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ patch }, extra) =>
      guarded(shared, extra, async (env) => {
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
          // A patch names no version: its base is the agent's last read (derived), which the refusal says.
          const r = await refused(env, 'apply_patch', path, failure, base, true);
          refusedFiles.push({ ...r.structuredContent });
          texts.push(r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n'));
        };
        // A file already known stale is refused with the rest: the changeset then writes nothing.
        for (const p of prepared) if ('conflict' in p) await refuse(p.path, p.conflict, p.base);
        if (refusedFiles.length === 0) {
          const planned = prepared.map((p) => (p as { planned: Planned }).planned);
          const files: ChangesetFile[] = planned.map(({ path, base, content, contentType }) => ({
            bucket: path.bucket,
            key: path.key,
            headers: (base ? { 'if-match': base } : { 'if-none-match': '*' }) as Record<string, string>,
            ...(content && { content, contentType: contentType ?? 'text/plain; charset=utf-8' }),
          }));
          const answer = await env.door.commit(env.caller, files);
          if ('failure' in answer || 'landing' in answer) return changesetUnfinished(answer);
          if ('refused' in answer) {
            for (const r of answer.refused) {
              const path = planned.find((p) => p.path.bucket === r.bucket && p.path.key === r.key)!;
              await refuse(path.path, r.failure, path.base);
            }
          } else {
            for (const l of answer.landed) {
              const where = showPath({ bucket: l.bucket, key: l.key });
              landed.push({ path: where, etag: l.etag });
              texts.push(`Landed: ${where}${l.etag !== null ? ` (new etag ${l.etag})` : ' (deleted)'}`);
            }
            return ok(texts, { landed, refused: [], written: true });
          }
        }
        const summary = `Nothing was written: the patch lands whole or not at all, and ${refusedFiles.length} of its ${prepared.length} file(s) ${refusedFiles.length === 1 ? 'was' : 'were'} refused:`;
        return toolError([summary, ...texts].join('\n\n'), { landed: [], refused: refusedFiles, written: false, error: 'some-files-refused' });
      }),
  );
};
