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

/** Bytes without long runs (a linear congruential sequence), so each changed byte is one changed range. */
function noise(n: number): Buffer {
  const out = Buffer.alloc(n);
  for (let i = 0, x = 1; i < n; i++) out[i] = (x = (x * 1103515245 + 12345) % 2 ** 31) >> 16;
  return out;
}

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

  it('a conflict on the first line starts the text with its marker', () => {
    const m = mergeText('a\nb\n', 'A by sent\nb\n', 'A by current\nb\n', labels);
    expect(m).toEqual({ clean: false, text: '<<<<<<< current\nA by current\n=======\nA by sent\n>>>>>>> sent\nb\n' });
  });

  it('both sides emptying the text is the same edit made twice: a conflict of two empty sides', () => {
    expect(mergeText('a\nb\n', '', '', labels)).toEqual({ clean: false, text: '<<<<<<< current\n=======\n>>>>>>> sent\n' });
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

  it('the budget counts every line, a last one without a line end too, and none of an empty version', () => {
    // Lines `tag i`, those in `shared` the same on both sides; every other line differs, so the
    // edit length is the lines of both minus twice the shared ones.
    const rows = (n: number, tag: string, shared: Set<number>, end: string) => Array.from({ length: n }, (_, i) => (shared.has(i) ? `shared ${i}` : `${tag} ${i}`)).join('\n') + end;
    const shown = (a: string, b: string) => !diffVersions('k', { etag: 'e1', content: Buffer.from(a) }, { etag: 'e2', content: Buffer.from(b) }, 1 << 21).body.includes('differ too much');
    // 4,473 lines, 4,471 edits: exactly what 20,000,000 / 4,473 allows. One line more counted would refuse it.
    const one = new Set([100]);
    expect(shown(rows(2237, 'a', one, ''), rows(2236, 'b', one, '\n'))).toBe(true);
    // 4,531 lines, 4,415 edits: one more than 20,000,000 / 4,531 allows. One line fewer counted would show it.
    const some = new Set(Array.from({ length: 58 }, (_, i) => i * 10));
    expect(shown(rows(2266, 'a', some, ''), rows(2265, 'b', some, '\n'))).toBe(false);
    // A new object of 4,472 lines against nothing: 4,472 edits, exactly what its size allows.
    expect(shown('', rows(4472, 'b', new Set(), '\n'))).toBe(true);
  });

  it('a diff of exactly the byte budget is shown whole; one byte less cuts it at the last whole line', () => {
    const from = { etag: 'e1', content: Buffer.from(base) };
    const to = { etag: 'e2', content: Buffer.from(base.replace('line 7\n', 'seven\n').replace('line 30\n', 'thirty\n')) };
    const full = diffVersions('k', from, to, 1 << 20).body;
    const size = Buffer.byteLength(full);
    expect(diffVersions('k', from, to, size)).toEqual({ contentType: 'text/x-diff; charset=utf-8', body: full, truncated: false });
    const cut = diffVersions('k', from, to, size - 1);
    expect(cut.truncated).toBe(true);
    expect(cut.contentType).toBe('text/x-diff; charset=utf-8');
    // Every line but the trailing one (its line end is the byte cut off) and then the note.
    const kept = full.slice(0, full.slice(0, -1).lastIndexOf('\n') + 1);
    expect(cut.body).toBe(`${kept}# casket: diff cut at ${size - 1} bytes (of ${size}); read the object for the rest.\n`);
  });

  it('binary: the work budget counts the bytes of both versions', () => {
    // 100,000 bytes each: 20,000,000 / 200,000 = 100 edits. Each changed byte is two (one out, one in).
    const a = noise(100_000);
    const changed = (n: number) => {
      const b = Buffer.from(a);
      for (let i = 0; i < n; i++) b[i * 1000 + 500] = 0xff - a[i * 1000 + 500]!;
      return b;
    };
    const changes = (b: Buffer) => JSON.parse(diffVersions('x.bin', { etag: 'e1', content: a }, { etag: 'e2', content: b }, 1 << 20).body).changes as unknown[];
    // Within it, the changed ranges (a byte's change may align as two); past it, one range over both.
    expect(changes(changed(50)).length).toBeGreaterThanOrEqual(50);
    expect(changes(changed(51))).toEqual([{ from: [0, 100_000], to: [0, 100_000] }]);
  });

  it('binary: a deleted version is named so, with size 0', () => {
    const d = JSON.parse(diffVersions('x.bin', { etag: 'e1', writer: 'bob', content: Buffer.from([0, 1, 2]) }, { etag: 'e2', writerAccessKey: 'AKIAPERSON', content: null }, 65536).body);
    expect(d.from).toEqual({ etag: 'e1', size: 3, writer: 'bob' });
    expect(d.to).toEqual({ etag: 'e2', size: 0, writerAccessKey: 'AKIAPERSON', deleted: true });
    expect(d.changes).toEqual([{ from: [0, 3], to: [0, 0] }]);
  });

  it('text to a deleted version: the header names it deleted', () => {
    const d = diffVersions('notes.md', { etag: 'e1', writer: 'bob', content: Buffer.from('one\ntwo\n') }, { etag: 'e2', writer: 'alice', content: null }, 65536);
    expect(d.body).toContain('--- a/notes.md\t"e1" (written by agent "bob")\n+++ b/notes.md\t"e2" (deleted)\n');
    expect(d.body).toContain('-one\n-two\n');
  });

  it('binary of exactly the byte budget is whole; a budget smaller than the sizes alone still answers, with no ranges', () => {
    const from = { etag: 'e1', content: Buffer.from([0, 1, 2, 3]) };
    const to = { etag: 'e2', content: Buffer.from([0, 9, 2, 3]) };
    const whole = diffVersions('x.bin', from, to, 1 << 20);
    expect(diffVersions('x.bin', from, to, Buffer.byteLength(whole.body))).toEqual(whole);
    expect(whole.truncated).toBe(false);
    const tiny = diffVersions('x.bin', from, to, 10);
    expect(tiny.truncated).toBe(true);
    expect(JSON.parse(tiny.body)).toMatchObject({ from: { size: 4 }, to: { size: 4 }, changes: [], truncated: true });
  });

  it('binary over the byte budget: only the first changed ranges, as many as fit, and a note saying so', () => {
    const a = noise(4000);
    const b = Buffer.from(a);
    for (let i = 0; i < 40; i++) b[i * 100 + 50] = 0xff - a[i * 100 + 50]!;
    const whole = JSON.parse(diffVersions('x.bin', { etag: 'e1', content: a }, { etag: 'e2', content: b }, 1 << 20).body);
    expect(whole.changes.length).toBeGreaterThanOrEqual(40);
    const d = diffVersions('x.bin', { etag: 'e1', content: a }, { etag: 'e2', content: b }, 800);
    expect(d.truncated).toBe(true);
    expect(Buffer.byteLength(d.body)).toBeLessThanOrEqual(800);
    const cut = JSON.parse(d.body);
    // Halved until it fits: 40-odd ranges, 20-odd, 10.
    expect(cut.changes).toEqual(whole.changes.slice(0, 10));
    expect(cut).toMatchObject({ truncated: true, note: 'cut at 800 bytes: only the first 10 changed ranges are listed' });
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
