/**
 * Lines and edits (src/mcp/text.ts), without a casket: the line numbers
 * read_text_file shows, the edits edit_file applies and the diff it answers.
 * A model quotes the text it was shown and reads the line numbers it was
 * given, so an off-by-one here or an edit applied in the wrong place is a
 * wrong file in its user's bucket. http-tools and read-windows show the same
 * through a casket.
 */
import { describe, expect, it } from 'vitest';
import { BadArgument } from '../../src/mcp/paths.js';
import { applyEdits, gitDiff, lineCount, splitLines } from '../../src/mcp/text.js';

describe('splitLines and lineCount', () => {
  const cases: Array<[string, string[]]> = [
    ['', []],
    ['one', ['one']],
    ['one\n', ['one']],
    ['one\ntwo', ['one', 'two']],
    ['one\ntwo\n', ['one', 'two']],
    // A blank line kept, wherever it is: only the final newline ends a line instead of starting one.
    ['\n', ['']],
    ['\none', ['', 'one']],
    ['one\n\n', ['one', '']],
    ['one\n\ntwo', ['one', '', 'two']],
    ['\n\n\n', ['', '', '']],
    // \r is part of a line (a CRLF file shows its \r), as the reference server's split on \n does.
    ['a\r\nb\r\n', ['a\r', 'b\r']],
  ];
  it.each(cases)('%j holds the lines %j', (text, lines) => {
    expect(splitLines(text)).toEqual(lines);
    expect(lineCount(text)).toBe(lines.length);
  });
});

describe('applyEdits', () => {
  const file = 'alpha\nbeta\ngamma\n';

  it('replaces each oldText where it is, at the start, inside and at the end', () => {
    expect(applyEdits(file, [{ oldText: 'alpha', newText: 'ALPHA' }])).toBe('ALPHA\nbeta\ngamma\n');
    expect(applyEdits(file, [{ oldText: 'et', newText: '' }])).toBe('alpha\nba\ngamma\n');
    expect(applyEdits(file, [{ oldText: 'gamma\n', newText: 'gamma\ndelta\n' }])).toBe('alpha\nbeta\ngamma\ndelta\n');
    expect(applyEdits(file, [])).toBe(file);
  });

  it('applies edits in order, each to the result of the ones before', () => {
    expect(applyEdits(file, [{ oldText: 'beta', newText: 'BETA beta' }, { oldText: 'A beta', newText: 'A, beta' }])).toBe('alpha\nBETA, beta\ngamma\n');
  });

  it('refuses an empty oldText, one not in the file and one that occurs more than once, naming the edit', () => {
    expect(() => applyEdits(file, [{ oldText: '', newText: 'x' }])).toThrow(new BadArgument('edits[0].oldText is empty: quote the exact text to replace.'));
    expect(() => applyEdits(file, [{ oldText: 'delta', newText: 'x' }])).toThrow(new BadArgument('edits[0].oldText was not found in the file: quote the text exactly as read_text_file showed it.'));
    expect(() => applyEdits(file, [{ oldText: 'alpha', newText: 'omega' }, { oldText: 'alpha', newText: 'x' }])).toThrow(
      new BadArgument('edits[1].oldText was not found in the file (after the edits before it): quote the text exactly as read_text_file showed it.'),
    );
    expect(() => applyEdits(file, [{ oldText: 'a\n', newText: 'x' }])).toThrow(new BadArgument('edits[0].oldText occurs 3 times in the file: include more surrounding lines so that it matches exactly once.'));
    expect(() => applyEdits('xaa', [{ oldText: 'aa', newText: 'b' }])).not.toThrow();
  });

  it('counts overlapping matches as the places they are', () => {
    // "aa" is in "aaa" at 0 and at 1: an edit would change one of two places, which the count must say.
    expect(() => applyEdits('aaa', [{ oldText: 'aa', newText: 'b' }])).toThrow(new BadArgument('edits[0].oldText occurs 2 times in the file: include more surrounding lines so that it matches exactly once.'));
    expect(() => applyEdits('x\n\n\n\ny', [{ oldText: '\n\n', newText: '\n' }])).toThrow(/occurs 3 times/);
  });

  it('is a BadArgument, which the tools answer as a tool error the model can act on', () => {
    expect(() => applyEdits(file, [{ oldText: 'delta', newText: 'x' }])).toThrow(BadArgument);
  });
});

describe('gitDiff', () => {
  it('answers a git-style unified diff of the path, with three lines of context', () => {
    const before = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
    const after = before.replace('line 6\n', 'line six\n');
    expect(gitDiff('b/notes.md', before, after)).toBe(
      '===================================================================\n--- a/b/notes.md\n+++ b/b/notes.md\n@@ -3,7 +3,7 @@\n line 3\n line 4\n line 5\n-line 6\n+line six\n line 7\n line 8\n line 9\n',
    );
  });
});
