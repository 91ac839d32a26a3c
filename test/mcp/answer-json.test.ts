/**
 * answerJson (src/mcp/answer-json.ts) writes every MCP answer casket sends
 * over HTTP: it must be JSON.stringify's text exactly — a client parses it,
 * and a field dropped or a string swapped would reach the model — while it
 * escapes a long string once however often the answer holds it.
 */
import { describe, expect, it } from 'vitest';
import { answerJson } from '../../src/mcp/answer-json.js';

const text = (seed: string, lines: number) => Array.from({ length: lines }, (_, i) => `${seed} ${i}: "quoted" \\ back\tslash é 🙂`).join('\n') + '\n';

describe('answerJson', () => {
  it('writes a read_text_file answer, its text in both views, as JSON.stringify does', () => {
    const t = text('line', 300);
    const answer = { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: t }, { type: 'text', text: '[docs/plan.md: etag "abc", all 300 lines, a full read]' }], structuredContent: { path: 'docs/plan.md', etag: '"abc"', lines: { from: 1, to: 300, total: 300 }, read: 'full', last_writer: undefined, content: t } } };
    expect(answerJson(answer)).toBe(JSON.stringify(answer));
    expect(JSON.parse(answerJson(answer)).result.structuredContent.content).toBe(t);
  });

  it('keeps apart long strings of the same length, and a string that equals one only by content', () => {
    const a = text('aaaa', 100);
    const b = text('bbbb', 100);
    const again = `${a.slice(0, 10)}${a.slice(10)}`;
    expect(b.length).toBe(a.length);
    const v = [a, b, again, { a, b }, [b, a]];
    expect(answerJson(v)).toBe(JSON.stringify(v));
  });

  it('leaves out what JSON.stringify leaves out and writes null where it does', () => {
    const v = {
      kept: [undefined, () => 1, Symbol('s'), null, Number.NaN, -0, Number.POSITIVE_INFINITY, true, false, 0.1, 1e21],
      dropped: undefined,
      fn: () => 2,
      sym: Symbol('t'),
      at: new Date(Date.UTC(2026, 10, 29, 12, 0, 0)),
      custom: { toJSON: () => ({ shown: 'as toJSON says' }) },
      lone: 'half a pair: \ud800 and \udfff',
      controls: '\u0000\u0001\u001f\u007f\u2028',
      nested: { deeper: { deepest: [[], {}, ''] } },
    };
    expect(answerJson(v)).toBe(JSON.stringify(v));
  });

  it('refuses a BigInt, as JSON.stringify does, in its words', () => {
    let words = '';
    try {
      JSON.stringify({ n: 1n });
    } catch (e) {
      words = (e as Error).message;
    }
    expect(() => answerJson({ n: 1n })).toThrow(new TypeError(words));
  });

  it('writes null for nothing at the top, where JSON.stringify would write no text at all', () => {
    expect(answerJson(undefined)).toBe('null');
    expect(answerJson(() => 1)).toBe('null');
  });
});
