/**
 * What changed between two versions of an object (docs/design.md §6): for text
 * (valid UTF-8 without NUL) a unified diff, the format of diff -u and git
 * (https://www.gnu.org/software/diffutils/manual/html_node/Unified-Format.html),
 * with both ETags and their writers in the `---`/`+++` header lines (in a
 * 412's words, vocabulary/writer.ts); for anything else JSON with both sizes
 * and the byte ranges that changed.
 * Either is cut at `maxBytes` with a note saying so.
 *
 * The diffs are jsdiff's (`diff` on npm, the library most JavaScript diff
 * tools build on), bounded by a work budget (not a time limit) so two
 * unrelated large versions cannot hold the event loop; past it, the answer
 * says they differ too much.
 */
import { createTwoFilesPatch, diffArrays } from 'diff';
import { writtenBy } from '../vocabulary/writer.js';

export interface Version {
  etag: string;
  /** The agent whose write made it, when known. */
  writer?: string;
  /** The access key id of the request without an agent that made it, when the write log knows it. */
  writerAccessKey?: string;
  /** null: the key is deleted. */
  content: Buffer | null;
}

export interface RenderedDiff {
  contentType: string;
  body: string;
  truncated: boolean;
}

/**
 * The most work one diff may do, so that it cannot hold the event loop and
 * the same two versions always get the same answer, however busy the
 * machine: jsdiff's Myers diff does about (N + M) × D steps for N and M
 * tokens (lines of text, bytes of binary) and D differing tokens, so D is
 * capped at what the budget allows for the sizes at hand. Past the cap the
 * answer says the versions differ too much ("rewritten" for binary).
 * Measured on two busy cores: the costliest diffs the budget allows (2,000
 * lines against 2,000 others; repetitive lines) take 0.3–0.6 s, and a diff
 * past it is refused in well under that.
 */
const MAX_EDIT_LENGTH = 5_000;
const WORK_BUDGET = 20_000_000;

/** The largest edit length (D) a diff of `tokens` tokens in all may explore. */
export function editLengthBudget(tokens: number): number {
  return Math.min(MAX_EDIT_LENGTH, Math.floor(WORK_BUDGET / Math.max(tokens, 1)));
}

/** Lines as jsdiff counts them: every line end, and a last line without one. */
function lineCount(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.length > 0 && !text.endsWith('\n') ? n + 1 : n;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Text, for diffs and merges: valid UTF-8 and no NUL byte (git's test for binary is a NUL). */
export function isText(content: Buffer): boolean {
  if (content.includes(0)) return false;
  try {
    utf8.decode(content);
    return true;
  } catch {
    return false;
  }
}

function label(v: Version): string {
  // The same words as a 412 (s3/refusal-error.ts): the agent, else the person's access key.
  const by = `written by ${writtenBy({ ...(v.writer && { agent: v.writer }), ...(v.writerAccessKey && { accessKey: v.writerAccessKey }) })}`;
  return v.content === null ? `"${v.etag}" (deleted)` : `"${v.etag}" (${by})`;
}

/** `path` is bucket/key: the diff's file names are a/bucket/key and b/bucket/key, as the MCP tools' diffs. */
export function diffVersions(path: string, from: Version, to: Version, maxBytes: number): RenderedDiff {
  const a = from.content ?? Buffer.alloc(0);
  const b = to.content ?? Buffer.alloc(0);
  if (isText(a) && isText(b)) return unified(path, from, to, a.toString('utf8'), b.toString('utf8'), maxBytes);
  return binary(from, to, a, b, maxBytes);
}

function unified(key: string, from: Version, to: Version, a: string, b: string, maxBytes: number): RenderedDiff {
  const patch = createTwoFilesPatch(`a/${key}`, `b/${key}`, a, b, label(from), label(to), { context: 3, maxEditLength: editLengthBudget(lineCount(a) + lineCount(b)) });
  const body = patch ?? `--- a/${key}\t${label(from)}\n+++ b/${key}\t${label(to)}\n# casket: the versions differ too much to show a diff; read the object instead.\n`;
  if (Buffer.byteLength(body) <= maxBytes) return { contentType: 'text/x-diff; charset=utf-8', body, truncated: false };
  // Cut at a line end within the budget, so every line shown is whole.
  const cut = Buffer.from(body).subarray(0, maxBytes).toString('utf8');
  const whole = cut.slice(0, Math.max(cut.lastIndexOf('\n') + 1, 0));
  return {
    contentType: 'text/x-diff; charset=utf-8',
    body: `${whole}# casket: diff cut at ${maxBytes} bytes (of ${Buffer.byteLength(body)}); read the object for the rest.\n`,
    truncated: true,
  };
}

interface ByteChange {
  /** [start, end) in the older version. */
  from: [number, number];
  /** [start, end) in the newer version. */
  to: [number, number];
}

function binary(from: Version, to: Version, a: Buffer, b: Buffer, maxBytes: number): RenderedDiff {
  const changes: ByteChange[] = [];
  const parts = diffArrays([...a], [...b], { maxEditLength: editLengthBudget(a.length + b.length) });
  if (parts === undefined) {
    changes.push({ from: [0, a.length], to: [0, b.length] });
  } else {
    let i = 0;
    let j = 0;
    let open: ByteChange | undefined;
    for (const part of parts) {
      const n = part.count;
      if (!part.added && !part.removed) {
        if (open) changes.push(open);
        open = undefined;
        i += n;
        j += n;
        continue;
      }
      open ??= { from: [i, i], to: [j, j] };
      if (part.removed) open.from[1] = i += n;
      else open.to[1] = j += n;
    }
    if (open) changes.push(open);
  }
  const side = (v: Version, c: Buffer) => ({ etag: v.etag, size: c.length, ...(v.writer && { writer: v.writer }), ...(!v.writer && v.writerAccessKey && { writerAccessKey: v.writerAccessKey }), ...(v.content === null && { deleted: true }) });
  const doc = { from: side(from, a), to: side(to, b), changes, truncated: false as boolean };
  let body = JSON.stringify(doc);
  while (Buffer.byteLength(body) > maxBytes && doc.changes.length > 0) {
    doc.changes = doc.changes.slice(0, Math.floor(doc.changes.length / 2));
    doc.truncated = true;
    body = JSON.stringify({ ...doc, note: `cut at ${maxBytes} bytes: only the first ${doc.changes.length} changed ranges are listed` });
  }
  return { contentType: 'application/json', body, truncated: doc.truncated };
}
