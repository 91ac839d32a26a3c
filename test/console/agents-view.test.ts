/**
 * The console's agents view (src/console/api.ts agents) lists agents by
 * name, whatever order their keys are configured in or their writes came
 * (views.test.ts configures and writes them in name order already).
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { consoleLogin } from './login.js';

let c: InProcessCasket;
beforeAll(async () => {
  // Keys configured out of name order.
  c = await startInProcess({ agents: ['zed', 'mia', 'amy'], keys: ['person'] });
});
afterAll(async () => {
  await c?.stop();
});

describe('console agents view', () => {
  it('lists agents by name: those with keys and those only seen writing', async () => {
    await sdk(c.url, c.admin).send(new CreateBucketCommand({ Bucket: 'agents' }));
    // Agents without keys of their own, seen writing out of name order.
    for (const agent of ['yan', 'bea']) {
      const s3 = sdk(c.url, c.keys.person!, { agentHeader: agent });
      await s3.send(new PutObjectCommand({ Bucket: 'agents', Key: `${agent}.txt`, Body: agent, IfNoneMatch: '*' }));
      s3.destroy();
    }
    const res = await fetch(`${c.url}/_casket/console/api/agents`, { headers: { cookie: await consoleLogin(c.url, c.admin) } });
    expect(res.status).toBe(200);
    const { agents } = (await res.json()) as { agents: Array<{ agent: string; writes: number }> };
    expect(agents.map((a) => [a.agent, a.writes])).toEqual([['amy', 0], ['bea', 1], ['mia', 0], ['yan', 1], ['zed', 0]]);
  });
});
