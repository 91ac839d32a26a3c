/**
 * Three-way, line-based merge of two edits of one base (docs/design.md §6): the edit
 * an agent sends (base → sent) into the version current now (base →
 * current), with node-diff3 (the diff3 algorithm of Khanna, Kunal and Pierce,
 * as GNU diff3 and git merge-file use it). Lines keep their own line ends, so
 * the merged text is byte-for-byte the lines of its inputs.
 *
 * Both sides changing the same lines is a conflict even when they changed
 * them the same way (excludeFalseConflicts: false): two agents that made the
 * same edit made it twice, and telling the second it merged cleanly would hide
 * that (docs/design.md §3, "a failed condition is a refusal whatever the bytes").
 * Adjacent changes conflict too, as in diff3.
 */
import { merge } from 'node-diff3';

export interface MergeOutcome {
  clean: boolean;
  /** The merged text; with conflict markers when not clean. */
  text: string;
}

/** Lines with their line ends ("a\n", "b\r\n", a last line without one). */
function lines(text: string): string[] {
  // Stryker disable next-line ConditionalExpression,StringLiteral: an empty text as one empty line ('') merges as no lines does — the same text, clean or not (the empty line adds no bytes; every small case checked)
  return text === '' ? [] : text.split(/(?<=\n)/);
}

/** What the conflict markers name each side by. */
export interface MergeLabels {
  sent: string;
  base: string;
  current: string;
}

/** A merge whose text is kept only when clean (no markers) needs no names. */
const UNNAMED: MergeLabels = { sent: 'sent', base: 'base', current: 'current' };

export function mergeText(base: string, sent: string, current: string, labels: MergeLabels = UNNAMED): MergeOutcome {
  const result = merge(lines(current), lines(base), lines(sent), {
    excludeFalseConflicts: false,
    label: { a: labels.current, o: labels.base, b: labels.sent },
  });
  // Marker lines come without a line end; a last line without one gets one before a marker.
  let text = '';
  for (const item of result.result) {
    if (text !== '' && !text.endsWith('\n')) text += '\n';
    text += item;
  }
  if (result.conflict && !text.endsWith('\n')) text += '\n';
  return { clean: !result.conflict, text };
}
