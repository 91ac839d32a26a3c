/**
 * The JSON text of an MCP answer, as JSON.stringify would write it, with each
 * long string escaped once however often the answer holds it.
 *
 * Why: a read_text_file answer carries the file's text twice — in `content`
 * and in `structuredContent.content`, because clients show their model one
 * view or the other (docs/design.md §12). On Node 20, JSON.stringify escapes
 * about 370 MB/s (27 µs for a 10 KiB file, measured), so the second copy was
 * ~27 µs of a ~460 µs read at c=8. Strings are compared by `===`: the two fields
 * hold the same string, which V8 compares by its pointer first.
 */

/** Strings at least this long are escaped once per answer; shorter ones are not worth the lookup. */
const LONG = 512;

export function answerJson(value: unknown): string {
  const escaped: Array<[string, string]> = [];
  const string = (s: string): string => {
    // Stryker disable next-line ConditionalExpression,EqualityOperator: which strings are looked up is speed only: a string's JSON is the same escaped once or again
    if (s.length < LONG) return JSON.stringify(s);
    // Stryker disable next-line ConditionalExpression: a string never found again is escaped again, to the same JSON (a wrong one found is killed by answer-json.test.ts)
    for (const [seen, json] of escaped) if (seen === s) return json;
    const json = JSON.stringify(s);
    escaped.push([s, json]);
    return json;
  };
  // As JSON.stringify (ECMA-262 §25.5.2.2 SerializeJSONProperty): toJSON first; undefined, functions and
  // symbols left out of objects and written null in arrays.
  const write = (v: unknown, inArray: boolean): string | undefined => {
    if (typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON === 'function') v = (v as { toJSON(): unknown }).toJSON();
    switch (typeof v) {
      // Stryker disable next-line ConditionalExpression: without its case a string falls to JSON.stringify below: the same text, only escaped at each place
      case 'string':
        return string(v);
      case 'number':
      case 'boolean':
        return JSON.stringify(v);
      case 'bigint':
        throw new TypeError('Do not know how to serialize a BigInt');
      case 'object': {
        if (v === null) return 'null';
        // In an array every element is written (inArray: null for what an object leaves out).
        if (Array.isArray(v)) return `[${v.map((x) => write(x, true) as string).join(',')}]`;
        const members: string[] = [];
        for (const k of Object.keys(v)) {
          const json = write((v as Record<string, unknown>)[k], false);
          if (json !== undefined) members.push(`${JSON.stringify(k)}:${json}`);
        }
        return `{${members.join(',')}}`;
      }
      default:
        return inArray ? 'null' : undefined;
    }
  };
  // Stryker disable next-line BooleanLiteral: nothing to write at the top is null either way, as an array element or by the ?? (JSON text cannot be empty)
  return write(value, false) ?? 'null';
}
