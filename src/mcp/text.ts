/** Lines and edits of text files, pure: what read_text_file shows and edit_file applies. */
import { createTwoFilesPatch } from 'diff';
import { BadArgument } from './paths.js';

/** Lines as a file holds them: a final newline ends the last line rather than starting an empty one. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** splitLines(text).length, counted: a final newline ends the last line rather than starting an empty one. */
export function lineCount(text: string): number {
  if (text === '') return 0;
  let n = 0;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) n++;
  return text.endsWith('\n') ? n : n + 1;
}

export interface Edit {
  oldText: string;
  newText: string;
}

/**
 * Applies edits in order, each to the result of the ones before. oldText must
 * occur exactly once: missing or ambiguous is refused (the reference server
 * also refuses a miss; an ambiguous match edited silently would change the
 * wrong place).
 */
export function applyEdits(text: string, edits: readonly Edit[]): string {
  let out = text;
  edits.forEach((e, i) => {
    const n = `edits[${i}]`;
    if (e.oldText === '') throw new BadArgument(`${n}.oldText is empty: quote the exact text to replace.`);
    const at = out.indexOf(e.oldText);
    if (at < 0) throw new BadArgument(`${n}.oldText was not found in the file${i > 0 ? ' (after the edits before it)' : ''}: quote the text exactly as read_text_file showed it.`);
    // Every place it starts, overlapping ones too ("aa" is twice in "aaa"): split would count one.
    let count = 0;
    for (let next = at; next !== -1; next = out.indexOf(e.oldText, next + 1)) count++;
    if (count > 1) {
      throw new BadArgument(`${n}.oldText occurs ${count} times in the file: include more surrounding lines so that it matches exactly once.`);
    }
    out = out.slice(0, at) + e.newText + out.slice(at + e.oldText.length);
  });
  return out;
}

/** A git-style unified diff, as the reference server's edit_file answers. */
export function gitDiff(path: string, before: string, after: string): string {
  return createTwoFilesPatch(`a/${path}`, `b/${path}`, before, after, undefined, undefined, { context: 3 });
}
