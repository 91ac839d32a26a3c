/**
 * A well-formed tools/call answered straight from the tool the server
 * registered: the same input schema, the same handler (reminders included),
 * the same error result for a handler that throws — without the SDK's
 * per-message machinery around it.
 *
 * For one call the SDK runs its zod schemas six times, three of them over
 * the whole answer (the protocol's type guards on the request, the
 * tools/call request schema, the input, the output schema, the
 * CallToolResult schema, the transport's response guard), and an
 * AbortController and request maps besides. For a 10 KiB read_text_file that
 * was a quarter of the call's CPU beyond the GetObject it makes
 * (docs/performance.md, "MCP tools"). What is checked here:
 *
 * - the arguments, with the tool's own input schema as the SDK stored it
 *   (an argument that fails goes to the SDK, which words the refusal);
 * - nothing of the answer: casket's tools build their answers to their
 *   declared outputSchema, and the SDK's Client checks every structured
 *   answer against it (test/mcp/model-view.test.ts and every test that calls
 *   a tool through the Client), so a tool that broke it fails those tests
 *   rather than each agent's call in production.
 *
 * Anything else — an unknown or disabled tool, a task-augmented call, a
 * batch — goes the SDK's way (post-transport.ts), words and all.
 * MCP: https://modelcontextprotocol.io/specification/2025-11-25/server/tools#calling-tools
 */
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, JSONRPCRequest, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

type Handler = (args: unknown, extra: unknown) => CallToolResult | Promise<CallToolResult>;
interface Parser {
  safeParseAsync(value: unknown): Promise<{ success: true; data: unknown } | { success: false }>;
}

/** No call here is ever aborted by the transport: casket's tools run to their answer (http.ts gives up on one past its deadline). */
const NEVER = new AbortController().signal;

export class ToolCalls {
  private readonly tools = new Map<string, RegisteredTool>();

  /**
   * Keeps each tool `server` registers from now on, as the SDK stored it:
   * its handler is the one the SDK calls, the tool's wrapped with its
   * reminders (reminders.ts), whichever wrapper was installed first.
   */
  // Stryker disable next-line BlockStatement: with no tool kept, a call not answered here goes to the SDK's server, which answers it alike (direct-calls.test.ts compares the two ways): only speed tells
  capture(server: McpServer): void {
    const register = server.registerTool.bind(server) as (name: string, config: unknown, cb: unknown) => RegisteredTool;
    (server as { registerTool: unknown }).registerTool = (name: string, config: unknown, cb: unknown) => {
      const registered = register(name, config, cb);
      this.tools.set(name, registered);
      return registered;
    };
  }

  /** The call's result, or undefined when the SDK must answer it (see above). */
  async call(request: JSONRPCRequest, extra: MessageExtraInfo | undefined): Promise<CallToolResult | undefined> {
    const params = request.params as { name?: unknown; arguments?: unknown; task?: unknown } | undefined;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: a call not answered here goes to the SDK's server, which answers it alike (direct-calls.test.ts compares the two ways): only speed tells; casket's tools take no tasks
    if (typeof params?.name !== 'string' || params.task !== undefined) return undefined;
    const tool = this.tools.get(params.name);
    // Stryker disable next-line BooleanLiteral,ConditionalExpression,EqualityOperator: casket registers every tool enabled, with an input schema, requiring no task (tools/); and a call not answered here goes to the SDK's server, which answers it alike (direct-calls.test.ts compares the two ways): only speed tells
    if (!tool?.enabled || !tool.inputSchema || tool.execution?.taskSupport === 'required') return undefined;
    const args = params.arguments ?? {};
    // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator: every tool's input schema is an object's, which refuses the rest below too; and a call not answered here goes to the SDK's server, which answers it alike (direct-calls.test.ts compares the two ways): only speed tells
    if (typeof args !== 'object' || args === null || Array.isArray(args)) return undefined;
    const parsed = await (tool.inputSchema as unknown as Parser).safeParseAsync(args);
    if (!parsed.success) return undefined;
    // Stryker disable next-line BlockStatement: a call not answered here goes to the SDK's server, which answers it alike (direct-calls.test.ts compares the two ways): only speed tells
    try {
      return await (tool.handler as unknown as Handler)(parsed.data, {
        signal: NEVER,
        requestId: request.id,
        requestInfo: extra?.requestInfo,
        authInfo: extra?.authInfo,
        sendNotification: async () => {},
        // Stryker disable next-line ArrowFunction,StringLiteral: casket's tools send no requests to the client (none calls it)
        sendRequest: () => Promise.reject(new Error('casket\'s tools send no requests to the client')),
      });
    } catch (e) {
      // As the SDK's McpServer answers a handler that throws: a tool error with the message.
      return { content: [{ type: 'text', text: e instanceof Error ? e.message : String(e) }], isError: true };
    }
  }
}
