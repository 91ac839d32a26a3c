/**
 * "Changed since you read" in every tool's answer (docs/design.md §12): after
 * a tool has run, the files the agent read whole that someone else has changed
 * since (door.changedSinceRead, each told once) are added to its result in
 * both views — `structuredContent.changed_since_read` (what Claude Code, VS
 * Code, Codex show a model on success) and a text block (what clients that
 * prefer `content` show, and Claude Code on an error, claude-code issue 86032).
 * The check runs after the tool, so a read of the changed file itself answers
 * no reminder for it: the agent has just read the new version.
 *
 * Applied once, where the tools are registered (tools.ts): no tool knows of it.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CHANGED_SINCE_READ, type ChangedSinceReadEntry } from './changed-since-read.js';
import type { ChangedFile } from './door.js';
import { callEnv, type HandlerExtra, type SharedEnv, type ToolEnv } from './tool.js';

/** A reminder's diff, at most: past it, `next` points to what_changed. */
const MAX_DIFF_LINES = 40;
const MAX_DIFF_BYTES = 4096;

/** Cuts a diff to MAX_DIFF_LINES lines and MAX_DIFF_BYTES bytes (on a line, or a character, boundary). */
export function capDiff(text: string): { diff: string; truncated: boolean } {
  const lines = text.split('\n');
  let out = lines.slice(0, MAX_DIFF_LINES).join('\n');
  let truncated = lines.length > MAX_DIFF_LINES && !(lines.length === MAX_DIFF_LINES + 1 && lines[MAX_DIFF_LINES] === '');
  if (Buffer.byteLength(out) > MAX_DIFF_BYTES) {
    const cut = Buffer.from(out).subarray(0, MAX_DIFF_BYTES).toString('utf8').replace(/\uFFFD$/, '');
    const nl = cut.lastIndexOf('\n');
    out = nl > 0 ? cut.slice(0, nl) : cut;
    truncated = true;
  }
  return { diff: out, truncated };
}

async function entryFor(env: ToolEnv, c: ChangedFile): Promise<ChangedSinceReadEntry> {
  const path = `${c.bucket}/${c.key}`;
  const read = `read_text_file {"path": ${JSON.stringify(path)}}`;
  if (c.etag === undefined) {
    return { path, etag: '', changed_by: c.changedBy, changed_at: c.changedAt, diff: '', diff_truncated: false, next: `it was deleted: write_file with create_only: true to make it again` };
  }
  const whole = await env.door.diff(env.caller, c.bucket, c.key, c.readETag, c.etag);
  if (!whole) return { path, etag: `"${c.etag}"`, changed_by: c.changedBy, changed_at: c.changedAt, diff: '', diff_truncated: true, next: `${read} (casket no longer keeps the version you read, so no diff)` };
  const { diff, truncated } = capDiff(whole.text);
  const cut = truncated || whole.truncated;
  return { path, etag: `"${c.etag}"`, changed_by: c.changedBy, changed_at: c.changedAt, diff, diff_truncated: cut, next: cut ? `what_changed {} for the whole diff, then ${read}` : `${read} before you edit it` };
}

/** The text view of the reminders: everything the structured one holds. */
export function reminderText(entries: readonly ChangedSinceReadEntry[]): string {
  const parts = entries.map((e) => {
    const what = e.etag === '' ? 'was deleted' : `changed (etag now ${e.etag})`;
    const diff = e.diff === '' ? '' : `\n${e.diff}${e.diff_truncated ? '\n[... diff cut short]' : ''}`;
    return `- ${e.path} ${what} by ${e.changed_by} at ${e.changed_at}. Diff from the version you read:${diff || ' (none kept)'}\n  Next: ${e.next}`;
  });
  return [`Changed since you read (someone else wrote these files after you read them whole; your copy is stale):`, ...parts].join('\n');
}

/** The result with the reminders added, in both views. */
export function withReminders(result: CallToolResult, entries: readonly ChangedSinceReadEntry[]): CallToolResult {
  if (entries.length === 0) return result;
  return {
    ...result,
    content: [...(result.content ?? []), { type: 'text', text: reminderText(entries) }],
    structuredContent: { ...(result.structuredContent ?? {}), [CHANGED_SINCE_READ]: [...entries] },
  };
}

/** The reminders due to the caller now; none when the look fails (a reminder never fails a tool). */
async function due(env: ToolEnv): Promise<ChangedSinceReadEntry[]> {
  if (env.caller.agent === undefined) return [];
  try {
    const changed = await env.door.changedSinceRead(env.caller);
    return await Promise.all(changed.map((c) => entryFor(env, c)));
  } catch {
    return [];
  }
}

type Handler = (...args: unknown[]) => CallToolResult | Promise<CallToolResult>;

/**
 * Makes every tool `server` registers from now on answer with the reminders
 * due: its handler runs, then the look. The wrapper keeps the handler's
 * arity-free signature ((args, extra) or (extra)), which the SDK calls as is.
 */
export function remindOn(server: McpServer, shared: SharedEnv): void {
  const register = server.registerTool.bind(server) as (name: string, config: unknown, cb: Handler) => unknown;
  (server as { registerTool: unknown }).registerTool = (name: string, config: unknown, cb: Handler) =>
    register(name, config, async (...args: unknown[]) => {
      // The SDK's `extra` comes last, after the arguments of a tool that takes any: it carries the call's caller.
      const env = callEnv(shared, args[args.length - 1] as HandlerExtra);
      return withReminders(await cb(...args), await due(env));
    });
}
