/**
 * Isolation of changesets (issue 39, item 2), judged by a checker rather
 * than by eye (test/helpers/changeset-race.ts says what is raced and what is
 * judged), through one casket on the embedded store and in front of an
 * upstream (moto, or CASKET_TEST_UPSTREAM's). Several caskets sharing Redis:
 * test/changesets/shared-state.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { raceChangesets } from '../helpers/changeset-race.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from '../helpers/upstream.js';

/**
 * Rounds per writer: 50 on the embedded store; 25 in front of an upstream
 * (moto answers each request in milliseconds: 50 rounds take about 17 s on
 * an idle machine, minutes on a loaded one), or CASKET_CHANGESET_RACE_ROUNDS.
 */
const ROUNDS_FOR = { 'embedded store': 50, upstream: Number(process.env.CASKET_CHANGESET_RACE_ROUNDS ?? 25) };

const running: RunningCasket[] = [];
let upstream: Upstream | undefined;
afterAll(async () => {
  for (const c of running) await c.stop();
  await upstream?.stop();
});

describe('two writers race 5-file changesets over overlapping keys, with readers', () => {
  for (const backend of ['embedded store', 'upstream'] as const) {
    const ROUNDS = ROUNDS_FOR[backend];
    it(`${backend}: every acknowledged changeset applied whole, no refused one visible, no reader saw a mix`, async () => {
      const casket = await startCasket(backend === 'upstream' ? { upstream: (upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto')) } : {});
      running.push(casket);
      const through = { url: casket.url, cred: casket.admin };
      const r = await raceChangesets({ bucket: 'race', rounds: ROUNDS, writers: { a: through, b: through }, single: through, readers: [() => through, () => through] });
      console.log(`changesets: ${r.changesets} acknowledged, ${r.refused} refused; ${r.passes} reader passes`);
      expect(r.problems.slice(0, 10)).toEqual([]);
      expect(r.acknowledged).toBeGreaterThan(ROUNDS / 2);
    }, 300_000);
  }
});
