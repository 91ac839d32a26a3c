/**
 * What every tool handler is given: the door into casket, the caller the
 * endpoint authenticated, and the limits. One file per tool under tools/,
 * named after the tool verbatim, each with its zod schema next to its handler
 * (the reference filesystem server's layout).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Caller, CasketDoor, S3Failure } from './door.js';
import { BadArgument, type ObjectPath } from './paths.js';
import { refusal } from './refusals.js';
import { requestCaller } from './request-caller.js';
import { toolError } from './results.js';

/** What every tool server is built with: the door and the limits. It holds nothing of any request (tools.ts pools the servers). */
export interface SharedEnv {
  door: CasketDoor;
  /** Largest file a text tool reads or writes, bytes. */
  maxTextBytes: number;
}

/** What a tool handler works with during one call: the shared env and the caller of the request that made the call. */
export interface ToolEnv extends SharedEnv {
  readonly caller: Caller;
}

export function toolEnv(door: CasketDoor, maxTextBytes: number): SharedEnv {
  return { door, maxTextBytes };
}

export type RegisterTool = (server: McpServer, shared: SharedEnv) => void;

/** A handler's `extra` as the SDK gives it: what request-caller.ts reads the caller from. */
export type HandlerExtra = Parameters<typeof requestCaller>[0];

/** The env of one call: the shared one and the caller of the call's own request (request-caller.ts). */
export function callEnv(shared: SharedEnv, extra: HandlerExtra): ToolEnv {
  return { door: shared.door, maxTextBytes: shared.maxTextBytes, caller: requestCaller(extra) };
}

/** Runs a handler with its call's env; bad arguments become tool errors the model can correct, never protocol errors. */
export async function guarded(shared: SharedEnv, extra: HandlerExtra, run: (env: ToolEnv) => Promise<CallToolResult>): Promise<CallToolResult> {
  const env = callEnv(shared, extra);
  try {
    return await run(env);
  } catch (e) {
    // Stryker disable next-line ObjectLiteral: toolError (results.ts) answers error 'invalid-argument' when given none: named here for the reader
    if (e instanceof BadArgument) return toolError(`${e.message} Nothing was written.`, { error: 'invalid-argument' });
    throw e;
  }
}

/**
 * `derived`: the call named no version, the tool conditioned it on the agent's last read (write_file's derivedCondition).
 * `etagArgument`: the tool's argument that names the version of `path` (move_file's destination: destination_etag).
 */
// Stryker disable next-line BooleanLiteral: every tool that conditions a write passes derived; the ones that leave it unset are the reads, which send no condition, so their refusals never reach since() (refusals.ts)
export function refused(env: ToolEnv, tool: string, path: ObjectPath, failure: S3Failure, base?: string, derived = false, etagArgument = 'expected_etag'): Promise<CallToolResult> {
  // Stryker disable next-line ConditionalExpression: { base: undefined } reads as no base: refusals.ts uses ctx.base only as a value (LastReadETag ?? ctx.base)
  return refusal({ door: env.door, caller: env.caller, tool, path, ...(base !== undefined && { base }), derived, etagArgument }, failure);
}

export function tooLarge(what: string, bytes: number, max: number): CallToolResult {
  return toolError(`Refused: ${what} is ${bytes} bytes, more than the ${max} bytes these tools handle. Nothing was written.`, { error: 'too-large', bytes, max_bytes: max, written: false });
}
