/**
 * A refused tool call, written for the model that made it (docs/design.md §8):
 * what happened, that nothing was written, who changed the file and when,
 * whether the current content equals what was sent, the diff since this
 * agent last read it (capped, docs/design.md §6), and the exact next call. Built
 * from the S3 error casket's own path answered (its Reason, CurrentETag,
 * LastWriter, IdenticalContent and Diff fields), so a tool refuses for the
 * same reasons an S3 client is refused.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Caller, CasketDoor, S3Failure } from './door.js';
import type { ObjectPath } from './paths.js';
import { showPath } from './paths.js';
import { toolError } from './results.js';
import { writtenBy } from '../vocabulary/writer.js';

export interface RefusalContext {
  door: CasketDoor;
  caller: Caller;
  /** The tool that was refused, for the "next call" line. */
  tool: string;
  path: ObjectPath;
  /** The version the refused call was conditioned on. */
  base?: string;
  /** The call named no version: `base` is the agent's last read, which the tool conditioned it on. */
  derived?: boolean;
  /** The refused tool's argument that names the version of `path`, for the next call (default expected_etag; move_file's destination: destination_etag). */
  etagArgument?: string;
}

/** The diff a refusal links (`/_casket/diff?...&from=&to=`), fetched for the model. */
async function linkedDiff(ctx: RefusalContext, link: string | undefined, from: string | undefined, to: string | undefined): Promise<{ text: string; truncated: boolean } | undefined> {
  if (link) {
    const q = new URL(link, 'http://casket').searchParams;
    from = q.get('from') ?? undefined;
    to = q.get('to') ?? undefined;
  }
  if (!from || !to || from === to) return undefined;
  return ctx.door.diff(ctx.caller, ctx.path.bucket, ctx.path.key, from.replace(/"/g, ''), to.replace(/"/g, ''));
}

/** A write to a bucket that does not exist: the bucket named, since a changeset may span several. */
function noSuchBucket(bucket: string): { text: string; next: string } {
  return { text: `Refused: there is no bucket "${bucket}". Nothing was written.`, next: 'list_directory on a bucket that exists (paths are bucket/key)' };
}

/** An S3 error's message as a sentence: AWS words AccessDenied without a full stop ("... because no policy allows the action"). */
function sentence(message: string): string {
  return /[.!?]$/.test(message) ? message : `${message}.`;
}

/**
 * Which version "changed since" names, the agent's last read or the call's own:
 * a call that names a version it never read whole is refused as a stale read of
 * the one it did read (guard.ts agentRules), and the sentence says both.
 */
function since(ctx: RefusalContext, lastReadETag: string | undefined): string {
  if (ctx.derived === true) return 'the one you last read';
  if (
    lastReadETag !== undefined &&
    // Stryker disable next-line ConditionalExpression: a call with no base either named no version (derived, answered above) or carries no LastReadETag (a read's refusal; a create refused on If-None-Match says "already exists" before this is asked)
    ctx.base !== undefined &&
    lastReadETag !== ctx.base
  )
    return `the one you last read (you named ${ctx.base}, which you have not read whole)`;
  return 'the one you named';
}

export async function refusal(ctx: RefusalContext, f: S3Failure): Promise<CallToolResult> {
  const where = showPath(ctx.path);
  // A missing file is `no-such-key` (the x-casket-reason word, docs/reference.md) however it was found:
  // refused by the guard, which names its Reason, or answered NoSuchKey by a read (move_file's source).
  const reason = f.fields.Reason ?? (f.code === 'NoSuchKey' ? 'no-such-key' : f.code);
  const current = f.fields.CurrentETag;
  // A refusal built from a HEAD (edit_file's changedSince) knows the agent only: the write log knows the person's key too.
  // Stryker disable next-line ConditionalExpression: the log names a version's writer as the refusal does, its agent else its access key (mcp-door.ts writerOf, s3/refusal-error.ts), so asking it when the refusal named one changes nothing
  const logged = !f.fields.LastWriter && !f.fields.LastWriterAccessKey && current ? await ctx.door.writerOf(ctx.path.bucket, ctx.path.key, current).catch(() => ({}) as { agent?: string; accessKey?: string }) : {};
  const writer = f.fields.LastWriter ?? logged.agent;
  const writerKey = f.fields.LastWriterAccessKey ?? logged.accessKey;
  const when = f.fields.LastModified;
  const identical = f.fields.IdenticalContent === 'true';
  const lastRead = f.fields.LastReadETag ?? ctx.base;
  // The same words as the diff's header lines and the S3 refusal (vocabulary/writer.ts): the agent, else the access key.
  const by = ` by ${writtenBy({ ...(writer && { agent: writer }), ...(writerKey && { accessKey: writerKey }) })}`;
  const at = when
    ? ` at ${when}`
    : // Stryker disable next-line StringLiteral: only the sentences of a current version say `at`, and every refusal with a current version carries its LastModified (s3/refusal-error.ts; changedSince's from the HEAD's Last-Modified)
      '';
  const reread = `read_text_file {"path": "${where}"} (the whole file: no head, tail, offset or limit)`;
  const etagArgument = ctx.etagArgument ?? 'expected_etag';
  // apply_patch takes no etag: a patch of the content read is its condition (as for If-None-Match below).
  const retry = current
    ? ctx.tool === 'apply_patch'
      ? ', then apply_patch again with a patch of its current content'
      : `, then ${ctx.tool} again with "${etagArgument}": "${current.replace(/"/g, '\\"')}"`
    : // Stryker disable next-line StringLiteral: the refusals that say `retry` name a current version: a partial-read or not-read refusal always does (the guard's explain refuses a write over a deleted file as stale-read or NoSuchKey), and the others test `current` first
      `, then ${ctx.tool} again`;
  let text: string;
  let next: string | undefined;
  switch (reason) {
    case 'precondition-failed':
    case 'stale-read':
    case 'merge-conflict':
      if (!current) {
        text = `Refused: ${where} no longer exists. Nothing was written.`;
        next = `write_file {"path": "${where}", "content": …, "create_only": true} to create it`;
        break;
      }
      if (f.fields.Condition === 'If-None-Match') {
        text = `Refused: ${where} already exists (version ${current}, written${by}${at}), and create_only only creates. Nothing was written.`;
        // The call that replaces it, in the refused tool's own terms: apply_patch takes no expected_etag, a patch of the file is its condition.
        next =
          ctx.tool === 'apply_patch'
            ? `${reread}, then apply_patch with a patch of its current content (not of /dev/null) to change it`
            : `${reread}, then ${ctx.tool} with "${etagArgument}": ${JSON.stringify(current)} to replace it`;
        break;
      }
      // A line-based three-way merge (changes/merge.ts, as diff3 and git) refuses
      // edits that overlap and edits of adjacent lines alike: what a merge conflict
      // truthfully says, since it cannot tell which of the two it was. (Said here,
      // not in a module constant: a mutant of a constant is counted only to the test
      // that first loads the module, which never reads it.)
      text =
        reason === 'merge-conflict'
          ? `Refused: your edit of ${where} and the current version ${current} (written${by}${at}) change the same or adjacent lines (a line merge needs an unchanged line between two edits), so they could not be merged. Nothing was written.`
          : `Refused: ${where} changed since ${
              lastRead
                ? `version ${lastRead}, ${since(ctx, f.fields.LastReadETag)}`
                : // Stryker disable next-line StringLiteral: said of a refusal with no version read or named, which no tool sends: a stale read carries the version read (LastReadETag), a failed If-Match the one named, and If-None-Match is answered above
                  'you read it'
            }: it is now ${current}, written${by}${at}. Nothing was written.`;
      next = `${reread}${retry}`;
      break;
    case 'partial-read':
      text = `Refused: you read only part of ${where} (version ${current}). A partial read does not entitle a write. Nothing was written.`;
      next = `${reread}${retry}`;
      break;
    case 'not-read':
      text = `Refused: you have not read ${where}, which exists (version ${current}, written${by}${at}). Nothing was written.`;
      next = `${reread}${retry}`;
      break;
    case 'precondition-required':
      // Without a current version: a tool's write named no version of a file that
      // does not exist, which no tool sends (derivedCondition makes it create-only
      // once its HEAD finds the file missing); only a file deleted between that HEAD
      // and the PUT is refused so, a race no test can order.
      text = current
        ? `Refused: agents write conditionally, and this write named no version of ${where} (current ${current}, written${by}${at}). Nothing was written.`
        : // Stryker disable next-line StringLiteral: a race no test can order, as above
          `Refused: agents write conditionally. Nothing was written.`;
      next = current
        ? `${reread}${retry}`
        : // Stryker disable next-line StringLiteral: as above
          `write_file {"path": "${where}", "content": …, "create_only": true}`;
      break;
    case 'no-such-key':
      text = `Refused: ${where} does not exist. Nothing was written.`;
      next = `write_file {"path": "${where}", "content": …, "create_only": true} to create it, or list_directory {"path": "${ctx.path.bucket}/"} to find the file`;
      break;
    case 'NoSuchBucket':
      ({ text, next } = noSuchBucket(ctx.path.bucket));
      break;
    case 'AccessDenied':
      text = `Refused: your credential may not do this on ${where}: ${sentence(f.message)} Nothing was written.`;
      break;
    default:
      text = `Refused: ${f.code}: ${sentence(f.message)} Nothing was written.`;
  }
  if (identical) {
    const who = writer ? `agent "${writer}"` : writerKey ? `access key "${writerKey}"` : 'someone else';
    // A delete's "same change" is a file already gone: there is no content to compare.
    text += current
      ? ` The current content is byte-for-byte what you sent: if that was your own earlier call, it landed; if not, ${who} made the same change, and yours would be a second one.`
      : ` The file is already deleted: if that was your own earlier call, it landed; if not, ${who} deleted it, and yours would be a second one.`;
  }
  const diff = current ? await linkedDiff(ctx, f.fields.Diff, lastRead, current).catch(() => undefined) : undefined;
  if (next) text += `\nNext: ${next}.`;
  if (diff) text += `\nWhat changed since ${lastRead}${diff.truncated ? ' (cut short)' : ''}:\n${diff.text}`;
  return toolError(text, {
    error: reason,
    path: where,
    // An own field set to undefined is left out of the answer's JSON (answer-json.ts, as JSON.stringify): no client sees it.
    // Stryker disable ConditionalExpression: as above
    ...(current !== undefined && { current_etag: current }),
    ...(writer !== undefined && { last_writer: writer }),
    ...(writerKey !== undefined && { last_writer_access_key: writerKey }),
    ...(when !== undefined && { last_modified: when }),
    ...(lastRead !== undefined && { your_version: lastRead }),
    // Stryker restore ConditionalExpression
    identical,
    ...(diff && { diff: diff.text, diff_truncated: diff.truncated }),
    ...(next && { next }),
    written: false,
  });
}

/**
 * A changeset the door did not commit (`failure`: nothing was written), or
 * one decided whose entries are still being applied (`landing`): every file
 * of it lands, so the model is told not to send it again, and `written` is
 * true — a model told "nothing was written" would write the files a second
 * time.
 */
export function changesetUnfinished(answer: { failure: S3Failure } | { landing: S3Failure }): CallToolResult {
  if ('landing' in answer) return toolError(`Not finished yet: ${sentence(answer.landing.message)} Do not send it again: read the files to see them landed.`, { error: answer.landing.code, written: true });
  const bucket = answer.failure.code === 'NoSuchBucket' ? answer.failure.fields.BucketName : undefined;
  if (bucket !== undefined) {
    const { text, next } = noSuchBucket(bucket);
    return toolError(`${text}\nNext: ${next}.`, { error: answer.failure.code, bucket, next, written: false });
  }
  return toolError(`Refused: ${sentence(answer.failure.message)} Nothing was written.`, { error: answer.failure.code, written: false });
}
