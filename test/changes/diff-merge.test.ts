/**
 * The pure parts of "what changed, and merging" (docs/design.md §6): unified and
 * binary diffs with their budget, and the three-way merge's clean and
 * conflicting outcomes.
 */
import { describe, expect, it } from 'vitest';
import { diffVersions, editLengthBudget, isText } from '../../src/changes/diff.js';
import { mergeText } from '../../src/changes/merge.js';

const base = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n') + '\n';
const labels = { sent: 'sent', base: 'base', current: 'current' };

describe('mergeText', () => {
  it('edits of different sections merge into both', () => {
    const current = base.replace('line 2\n', 'line 2 by A\n');
    const sent = base.replace('line 30\n', 'line 30 by B\n');
    const m = mergeText(base, sent, current, labels);
    expect(m.clean).toBe(true);
    expect(m.text).toBe(base.replace('line 2\n', 'line 2 by A\n').replace('line 30\n', 'line 30 by B\n'));
  });

  it('edits of the same line conflict, with markers naming both sides', () => {
    const m = mergeText(base, base.replace('line 5\n', 'B\n'), base.replace('line 5\n', 'A\n'), labels);
    expect(m.clean).toBe(false);
    expect(m.text).toContain('<<<<<<< current\nA\n');
    expect(m.text).toContain('=======\nB\n>>>>>>> sent\n');
  });

  it('the same edit made twice is a conflict, not a silent success', () => {
    const edited = base.replace('line 5\n', 'same\n');
    expect(mergeText(base, edited, edited, labels).clean).toBe(false);
  });

  it('a conflict on a last line without a line end still ends with the closing marker on a line of its own', () => {
    const m = mergeText('a\nb\nc', 'a\nb\nC by sent', 'a\nb\nC by current', labels);
    expect(m).toEqual({ clean: false, text: 'a\nb\n<<<<<<< current\nC by current\n=======\nC by sent\n>>>>>>> sent\n' });
  });

  it('an empty base: both sides adding text conflict; one side adding it merges clean', () => {
    expect(mergeText('', 'sent\n', '', labels)).toEqual({ clean: true, text: 'sent\n' });
    expect(mergeText('', 'sent\n', 'current\n', labels).clean).toBe(false);
  });

  it('keeps CRLF line ends and a last line without one', () => {
    const b = 'a\r\nb\r\nc\r\nd\r\ne\r\nf';
    const m = mergeText(b, b.replace('f', 'F'), b.replace('a\r\n', 'A\r\n'), labels);
    expect(m).toEqual({ clean: true, text: 'A\r\nb\r\nc\r\nd\r\ne\r\nF' });
  });
});

describe('diffVersions', () => {
  it('text: a unified diff with both ETags and writers in the header lines', () => {
    const d = diffVersions('notes.md', { etag: 'e1', content: Buffer.from(base) }, { etag: 'e2', writer: 'bob', content: Buffer.from(base.replace('line 7\n', 'seven\n')) }, 65536);
    expect(d.contentType).toMatch(/^text\/x-diff/);
    expect(d.body).toContain('--- a/notes.md\t"e1" (written by a request without an agent)');
    expect(d.body).toContain('+++ b/notes.md\t"e2" (written by agent "bob")');
    expect(d.body).toContain('-line 7\n+seven\n');
    expect(d.truncated).toBe(false);
  });

  it("a version a person's request wrote is named by its access key, as in a 412", () => {
    const d = diffVersions('notes.md', { etag: 'e1', writerAccessKey: 'AKIAPERSON', content: Buffer.from(base) }, { etag: 'e2', writer: 'bob', writerAccessKey: 'AKIABOB', content: Buffer.from(base.replace('line 7\n', 'seven\n')) }, 65536);
    expect(d.body).toContain('--- a/notes.md\t"e1" (written by access key "AKIAPERSON")');
    // An agent's version is named by the agent, whatever key it used.
    expect(d.body).toContain('+++ b/notes.md\t"e2" (written by agent "bob")');
    const bin = JSON.parse(diffVersions('x.bin', { etag: 'e1', writerAccessKey: 'AKIAPERSON', content: Buffer.from([0, 1]) }, { etag: 'e2', writer: 'bob', writerAccessKey: 'AKIABOB', content: Buffer.from([0, 2]) }, 65536).body);
    expect([bin.from.writerAccessKey, bin.to.writer, bin.to.writerAccessKey]).toEqual(['AKIAPERSON', 'bob', undefined]);
  });

  it('a diff over the budget is cut at a line end, with a note', () => {
    const big = Array.from({ length: 300 }, (_, i) => `row ${i} ${'x'.repeat(40)}`).join('\n');
    const d = diffVersions('k', { etag: 'e1', content: Buffer.from(big) }, { etag: 'e2', content: Buffer.from(big.replace(/row/g, 'ROW')) }, 1000);
    expect(d.truncated).toBe(true);
    expect(Buffer.byteLength(d.body)).toBeLessThan(1200);
    expect(d.body).toMatch(/\n# casket: diff cut at 1000 bytes/);
  });

  it('the budget is work, not time: the same two versions always get the same answer', () => {
    // 1,500 lines against 1,500 others (3,000 edits) fit the budget; 2,400
    // against 2,400 (4,800 edits, under the 5,000 cap but over the 4,166
    // that work allows at that size) do not.
    const rows = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} ${i}`).join('\n') + '\n';
    const fits = () => diffVersions('k', { etag: 'e1', content: Buffer.from(rows(1500, 'a')) }, { etag: 'e2', content: Buffer.from(rows(1500, 'b')) }, 1 << 20);
    const over = () => diffVersions('k', { etag: 'e1', content: Buffer.from(rows(2400, 'a')) }, { etag: 'e2', content: Buffer.from(rows(2400, 'b')) }, 1 << 20);
    for (let i = 0; i < 2; i++) {
      const shown = fits();
      expect(shown.body).not.toContain('differ too much');
      expect(shown.body.split('\n').filter((l) => /^[-+][ab] /.test(l))).toHaveLength(3000);
      expect(over().body).toContain('# casket: the versions differ too much to show a diff');
    }
    expect(editLengthBudget(3000)).toBe(5000);
    expect(editLengthBudget(4800)).toBe(4166);
  });

  it('binary past the budget: one changed range covering both versions', () => {
    const a = Buffer.alloc(100_000, 0);
    const b = Buffer.alloc(100_000, 0xff);
    expect(JSON.parse(diffVersions('x.bin', { etag: 'e1', content: a }, { etag: 'e2', content: b }, 65536).body).changes).toEqual([{ from: [0, 100_000], to: [0, 100_000] }]);
  });

  it('binary: sizes and the changed byte ranges as JSON', () => {
    const d = diffVersions('x.bin', { etag: 'e1', content: Buffer.from([0, 1, 2, 3, 4, 5]) }, { etag: 'e2', content: Buffer.from([0, 1, 9, 3, 4, 5, 6]) }, 65536);
    expect(d.contentType).toBe('application/json');
    expect(JSON.parse(d.body)).toMatchObject({ from: { size: 6 }, to: { size: 7 }, changes: [{ from: [2, 3], to: [2, 3] }, { from: [6, 6], to: [6, 7] }] });
  });

  it('text means valid UTF-8 without NUL', () => {
    expect(isText(Buffer.from('héllo'))).toBe(true);
    expect(isText(Buffer.from([0x68, 0, 0x69]))).toBe(false);
    expect(isText(Buffer.from([0xff, 0xfe]))).toBe(false);
  });
});
