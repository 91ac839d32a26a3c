/**
 * casket_refusals_total as a test reads it from /_casket/metrics: the
 * counters by reason and enforcement, and a check that one step moved
 * exactly the one expected (test/core and test/integration refusal counters).
 */
import { expect } from 'vitest';

export async function refusals(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/_casket/metrics`)).text();
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^casket_refusals_total\{reason="([^"]+)",enforced="([^"]+)"\} (\d+)$/gm)) counts.set(`${m[1]} ${m[2]}`, Number(m[3]));
  return counts;
}

/** Runs `step` (answering `status`), then checks the counters moved by exactly one in `expected` (`reason enforced`), and nothing else. */
export async function counted(url: string, expected: string | undefined, step: () => Promise<number>, status: number): Promise<void> {
  const before = await refusals(url);
  expect(await step()).toBe(status);
  const after = await refusals(url);
  const moved: Record<string, number> = {};
  for (const [label, n] of after) if (n !== (before.get(label) ?? 0)) moved[label] = n - (before.get(label) ?? 0);
  expect(moved).toEqual(expected ? { [expected]: 1 } : {});
}
