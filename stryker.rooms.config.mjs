// npm run mutate:rooms: the mutation score of the rooms added around the core
// (issue 43), one room per run: ROOM=console (src/console's server code, not
// its browser assets), ROOM=rollback (src/rollback), ROOM=events (src/events)
// or ROOM=mcp (src/mcp and its door, src/mcp-door.ts). Each room keeps its
// results in a file of its own, so a room is re-run without the others and a
// run cut short loses only its room. Most of the rooms' tests spawn
// dist/cli.js, which no mutant reaches, so only their in-process tests run
// here (vitest.mutate-rooms.config.ts): the score is a lower bound.
// ROOM_FILES (comma-separated paths within the room, e.g.
// ROOM_FILES=src/rollback/apply.ts,src/rollback/sources.ts) narrows a run to
// those files when the whole room does not fit the time there is: Stryker 9.6
// writes the incremental file only when a run finishes (an interrupted run
// keeps nothing), and it keeps the results of the room's other files.
// docs/architecture.md, "Mutation score".
import base from './stryker.config.mjs';

const ROOMS = {
  console: ['src/console/*.ts'],
  rollback: ['src/rollback/**/*.ts'],
  events: ['src/events/**/*.ts'],
  mcp: ['src/mcp/**/*.ts', 'src/mcp-door.ts'],
};
const room = process.env.ROOM ?? '';
if (!(room in ROOMS)) throw new Error(`ROOM must be one of ${Object.keys(ROOMS).join(', ')} (got "${room}")`);
const only = (process.env.ROOM_FILES ?? '').split(',').map((f) => f.trim()).filter((f) => f !== '');
// A glob names its folder (the part before the first *); a plain path names one file.
const inRoom = (f, glob) => (glob.includes('*') ? f.startsWith(glob.slice(0, glob.indexOf('*'))) : f === glob);
const outside = only.filter((f) => !ROOMS[room].some((glob) => inRoom(f, glob)));
if (outside.length > 0) throw new Error(`ROOM_FILES must be files of room ${room} (${ROOMS[room].join(', ')}): not ${outside.join(', ')}`);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  ...base,
  vitest: { configFile: 'vitest.mutate-rooms.config.ts' },
  mutate: only.length > 0 ? only : ROOMS[room],
  incrementalFile: `.stryker/rooms-${room}-incremental.json`,
  jsonReporter: { fileName: `.stryker/reports/rooms-${room}-mutation.json` },
  tempDirName: `.stryker/tmp-rooms-${room}`,
  // dist/ is copied too: test/rollback/changeset.test.ts runs `casket rollback`,
  // and the MCP tests mint their tokens with `casket mcp token --offline`
  // (dist/cli.js, built from the unmutated src), as clients of the casket
  // they start in-process, where the mutants are.
  ignorePatterns: ['.stryker', 'casket-data'],
  // The machine's two cores are shared with benchmarks and other runs.
  concurrency: 1,
};
