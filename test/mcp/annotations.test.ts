/**
 * What a client is told at connect (docs/design.md §12): the initialize
 * `instructions`, and each tool's annotations and outputSchema as tools/list
 * answers them. Clients gate plan modes and auto-approval on the annotations
 * (https://modelcontextprotocol.io/specification/2025-11-25/schema#toolannotations):
 * a tool marked read-only runs without asking, so each hint must say what the
 * tool does.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { httpClient, mintToken, startMcpCasket } from '../helpers/mcp.js';

/**
 * A casket and client of the test's own. casket builds a tool server at the
 * first request that finds none idle (src/mcp/http.ts pools them), and
 * registers every tool's title, description, schemas and annotations then:
 * within the test that reads them, not in a beforeAll, which is where a
 * mutation run (stryker.rooms.config.mjs, with ignoreStatic and per-test
 * coverage) looks for the tests to run against a mutant of that code.
 */
async function connected(read: (client: Client) => Promise<void>): Promise<void> {
  const casket = await startMcpCasket({ agents: ['ann'] });
  try {
    const client = await httpClient(casket, mintToken(casket.agents.ann!), 'ann');
    try {
      await read(client);
    } finally {
      await client.close();
    }
  } finally {
    await casket.stop();
  }
}

const READS = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const WRITES = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false };

/**
 * Every tool, its hints, and why. Readers change no file (a read records the
 * agent's read stamp, which only decides what its later writes may do) and a
 * repeat answers the same. Writers replace or remove content others may hold,
 * and are not idempotent: a repeat can land a second change (an edit whose
 * newText contains its oldText applies again to the version it made; a write
 * of the same bytes is a new version in the history; a person's repeated
 * delete removes a file re-created since). Nothing reaches outside the
 * buckets casket serves: openWorldHint is false throughout.
 */
const EXPECTED: Record<string, typeof READS> = {
  read_text_file: READS,
  read_media_file: READS,
  list_directory: READS,
  search_files: READS,
  get_file_info: READS,
  what_changed: READS,
  write_file: WRITES,
  write_files: WRITES,
  edit_file: WRITES,
  apply_patch: WRITES,
  move_file: WRITES,
  delete_file: WRITES,
};

describe('what a client is told at connect', () => {
  // The first test to send a request loads src/mcp/tools.ts and the tools' modules (http.ts
  // imports them at the first request), so only it covers their constants — the server's name,
  // the instructions, each tool's outputSchema — in a mutation run's per-test coverage: what
  // they say is checked here.
  it('the server names itself, the instructions say how etags, partial reads, refusals and reminders work, and each answer\'s fields are declared and described in words', () => connected(async (client) => {
    expect(client.getServerVersion()).toMatchObject({ name: 'casket' });
    const said = client.getInstructions() ?? '';
    expect(said).toMatch(/^Files live in casket buckets: a path is bucket\/key\.\n/);
    expect(said).toMatch(/every read answers the file's etag/i);
    expect(said).toContain('expected_etag');
    expect(said).toContain('create_only: true');
    expect(said).toMatch(/partial read does not allow a write/);
    expect(said).toMatch(/refusal writes nothing.*exact next call/);
    expect(said).toMatch(/Never retry with the old etag/);
    expect(said).toMatch(/changed_since_read.*read them again/);
    // A few lines a model follows, not a manual.
    expect(said.split('\n').length).toBeLessThanOrEqual(8);
    expect(said.length).toBeLessThan(1200);
    const { tools } = await client.listTools();
    const unsaid: string[] = [];
    for (const t of tools) {
      if (t.name === 'read_media_file') {
        // Its answer is the image; structuredContent would replace it in Claude Code, Codex, opencode.
        expect(t.outputSchema, t.name).toBeUndefined();
        continue;
      }
      expect(t.outputSchema?.properties, t.name).toHaveProperty('changed_since_read');
      // An answer field may go without a description (bytes, written), but none has an empty one.
      for (const [name, prop] of Object.entries(t.outputSchema?.properties ?? {})) {
        const described = (prop as { description?: string }).description;
        if (described !== undefined && !/\w{3}/.test(described)) unsaid.push(`${t.name}: answer field ${name}`);
      }
    }
    expect(unsaid).toEqual([]);
    const answer = (name: string) => (tools.find((t) => t.name === name)?.outputSchema?.properties ?? {}) as Record<string, { description?: string }>;
    expect(Object.keys(answer('write_file'))).toEqual(expect.arrayContaining(['path', 'etag', 'bytes', 'written']));
    expect(Object.keys(answer('edit_file'))).toEqual(expect.arrayContaining(['path', 'diff', 'etag', 'previous_etag', 'merged', 'written']));
    expect(Object.keys(answer('delete_file'))).toEqual(expect.arrayContaining(['path', 'deleted', 'written']));
    // The etag a write answers is the one to hand back: its field says so.
    expect(answer('write_file').etag?.description).toContain('pass it as expected_etag');
    // write_files and move_file answer in their own fields: each file written with the etag to hand back, each file refused; the move's two ends.
    expect(Object.keys(answer('write_files'))).toEqual(expect.arrayContaining(['files', 'refused', 'written']));
    const filesWritten = answer('write_files').files as { items?: { properties?: Record<string, { description?: string }> } } | undefined;
    expect(Object.keys(filesWritten?.items?.properties ?? {})).toEqual(['path', 'etag']);
    expect(filesWritten?.items?.properties?.etag?.description).toContain('pass it as expected_etag');
    expect(Object.keys(answer('move_file'))).toEqual(expect.arrayContaining(['source', 'destination', 'etag', 'written', 'copied_to', 'source_deleted']));
  }));

  it('every tool\'s annotations say what it does', () => connected(async (client) => {
    const { tools } = await client.listTools();
    const listed = Object.fromEntries(tools.map((t) => [t.name, t.annotations && { readOnlyHint: t.annotations.readOnlyHint, destructiveHint: t.annotations.destructiveHint, idempotentHint: t.annotations.idempotentHint, openWorldHint: t.annotations.openWorldHint }]));
    expect(listed).toEqual(EXPECTED);
  }));

  it('every tool has a title and a description, and says what each argument is, in words', () => connected(async (client) => {
    const { tools } = await client.listTools();
    const unsaid: string[] = [];
    for (const t of tools) {
      if (!/\w{3}/.test(t.title ?? '')) unsaid.push(`${t.name}: title`);
      if ((t.description?.length ?? 0) < 80) unsaid.push(`${t.name}: description`);
      // Every argument is described: the model has nothing else to go by.
      for (const [name, prop] of Object.entries(t.inputSchema.properties ?? {})) if (!/\w{3}/.test((prop as { description?: string }).description ?? '')) unsaid.push(`${t.name}: argument ${name}`);
    }
    // edit_file's edits are objects: each of their fields is described too.
    const edits = tools.find((t) => t.name === 'edit_file')?.inputSchema.properties?.edits as { items?: { properties?: Record<string, { description?: string }> } } | undefined;
    for (const [name, prop] of Object.entries(edits?.items?.properties ?? { oldText: {}, newText: {} })) if (!/\w{3}/.test(prop.description ?? '')) unsaid.push(`edit_file: edits[].${name}`);
    // So are write_files' files.
    const files = tools.find((t) => t.name === 'write_files')?.inputSchema.properties?.files as { items?: { properties?: Record<string, { description?: string }> } } | undefined;
    for (const [name, prop] of Object.entries(files?.items?.properties ?? { path: {}, content: {}, expected_etag: {}, create_only: {} })) if (!/\w{3}/.test(prop.description ?? '')) unsaid.push(`write_files: files[].${name}`);
    expect(unsaid).toEqual([]);
    // Each compare-and-swap writer tells the model to hand back the etag it read.
    for (const name of ['write_file', 'write_files', 'edit_file', 'move_file', 'delete_file']) expect(tools.find((t) => t.name === name)?.description, name).toContain('expected_etag');
  }));
});
