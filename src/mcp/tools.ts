/**
 * casket's MCP server: the file tools, one file each under tools/, named as
 * the reference filesystem server names them where it has one (docs/design.md §8),
 * each answer wrapped with the caller's "changed since you read" reminders
 * (reminders.ts). The HTTP endpoint (stateless, http.ts) pools these servers;
 * the caller is not theirs but each call's (request-caller.ts), and no
 * session state ties an agent to one replica.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { remindOn } from './reminders.js';
import type { ToolCalls } from './tool-calls.js';
import type { RegisterTool, SharedEnv } from './tool.js';
import { register as apply_patch } from './tools/apply_patch.js';
import { register as delete_file } from './tools/delete_file.js';
import { register as edit_file } from './tools/edit_file.js';
import { register as get_file_info } from './tools/get_file_info.js';
import { register as list_directory } from './tools/list_directory.js';
import { register as move_file } from './tools/move_file.js';
import { register as read_media_file } from './tools/read_media_file.js';
import { register as read_text_file } from './tools/read_text_file.js';
import { register as search_files } from './tools/search_files.js';
import { register as what_changed } from './tools/what_changed.js';
import { register as write_file } from './tools/write_file.js';
import { register as write_files } from './tools/write_files.js';

export const TOOLS: readonly RegisterTool[] = [read_text_file, read_media_file, write_file, write_files, edit_file, apply_patch, list_directory, search_files, get_file_info, move_file, delete_file, what_changed];

export const SERVER_INFO = { name: 'casket', version: '0.1.0' };

/**
 * What the initialize answer tells the model (docs/design.md §12): how etags,
 * partial reads, refusals and "changed since you read" work, one rule a line,
 * in the words the tools' answers use.
 */
export const INSTRUCTIONS = [
  'Files live in casket buckets: a path is bucket/key.',
  '- Every read answers the file\'s etag. Every write, edit, move or delete is compare-and-swap: pass the etag you read as expected_etag (for a new file, create_only: true).',
  '- Read a file whole (no head, tail, offset or limit) before you change it: a partial read does not allow a write.',
  '- A refusal writes nothing. It says who changed the file, when, the diff since your version, and the exact next call: make that call (read the file again, then retry with the new etag). Never retry with the old etag.',
  '- When an answer carries changed_since_read, files you read were since changed by someone else: read them again before you rely on your copy or edit them. what_changed lists all such changes.',
].join('\n');

/** `calls`, when given, keeps the tools for answering a tools/call directly (tool-calls.ts, over HTTP). */
export function toolServer(shared: SharedEnv, calls?: ToolCalls): McpServer {
  // Stryker disable next-line ObjectLiteral: the SDK's McpServer declares the tools capability itself when the first tool is registered (registerTool), so an empty capabilities answers initialize the same
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  calls?.capture(server);
  // Every tool's answer carries the "changed since you read" reminders due (reminders.ts).
  remindOn(server, shared);
  for (const register of TOOLS) register(server, shared);
  return server;
}
