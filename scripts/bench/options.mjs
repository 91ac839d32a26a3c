/** The bench's command line: --help text and its parsing. Part of scripts/bench.mjs (the runner). */
import { resolve } from 'node:path';
import { checkPayloadModes, PAYLOAD_MODES } from './payload.mjs';
import { parseSize } from './stats.mjs';
import { MiB, RGW_PROBE_URL, answers, generated, log } from './common.mjs';
import { contended } from './contended.mjs';
import { profile } from './profile.mjs';

// ---------------------------------------------------------------- options

export const HELP = `usage: node scripts/bench.mjs [options]

  --duration S          seconds per measured run (default 3; --quick 1)
  --warmup S            seconds of unmeasured 4 KiB PUT+GET at c=8 against every server before
                        its first cell (default 10; --quick 3): a proxy that runs for days is
                        JIT-compiled, and a cold Node process is measured compiling (V8's
                        compiler threads count as its CPU: ~40% more per 4 KiB request in the
                        first seconds, measured)
  --runs N              runs per cell, alternating with the baseline (default 3, min 3)
  --quick               duration 1, concurrency 1,8, big object 64 MiB, PutObject payload
                        forms other than signed only at c=8, no moto when RGW is found
  --phases LIST         put,get,copy,cond,contended,big,mcp[,profile] (default all but profile;
                        copy: CopyObject 4 KiB and ListObjectsV2 of 1,000 keys, upstream only;
                        mcp: the MCP tools against the same work over S3, bench/mcp.mjs)
  --targets LIST        embedded,upstream (default both)
  --sizes LIST          object sizes for put/get (default 4k,8m)
  --payloads LIST       PutObject body forms: signed,unsigned,chunked-crc32 (default: all three
                        for upstream cells of 1 MiB and more, signed otherwise and on the
                        embedded store); given explicitly, every PUT cell runs each.
                        signed = hex SHA-256; unsigned = UNSIGNED-PAYLOAD + Content-Length;
                        chunked-crc32 = STREAMING-UNSIGNED-PAYLOAD-TRAILER, aws-chunked in
                        64 KiB chunks with an x-amz-checksum-crc32 trailer, sent with
                        Transfer-Encoding: chunked and no Content-Length (as SDK v3 does)
  --concurrency LIST    (default 1,8,32)
  --agents N            agents in the contended phase (default 4)
  --credentials FILE    casket credentials JSON {"credentials":[{accessKey,secretKey,agent?}]};
                        entries with an agent are the contended phase's agents
                        (default: generated, --agents of them)
  --big-size SIZE       the big object (default 1g), through casket on the embedded store and
                        through casket → RGW (when RGW is found)
  --no-moto             do not start moto
  --moto                start moto even under --quick with RGW found
  --rgw URL             also benchmark against Ceph RGW at URL (with --rgw-access-key/--rgw-secret-key,
                        or RGW_ACCESS_KEY/RGW_SECRET_KEY). Without --rgw: CASKET_BENCH_RGW_URL
                        (keys RGW_ACCESS_KEY/RGW_SECRET_KEY, default test/test) if set, else
                        ${RGW_PROBE_URL} with test/test when a GET / there answers within 1 s
                        (start one: scripts/ceph-rgw-up.sh DIR 18080)
  --no-rgw              do not look for RGW
  --signer fast|smithy  load-generator signer (default fast, checked against @smithy/signature-v4)
  --casket-arg ARG      extra casket flag, repeatable (e.g. --casket-arg=--log-level=warn)
  --profile DIR         also run casket under node --cpu-prof (a fresh casket per phase) for
                        PUT and GET at c=8 on the embedded store, and through moto and RGW
                        (those found) when the upstream target is selected; summaries go to
                        DIR/<phase>/summary.txt; PutObject once per --payloads form. In front
                        of an upstream the bare node:http proxy is profiled in the same cell
                        too, and DIR/<phase>/vs-node-proxy.txt sets the two side by side per
                        request, function by function (measured runs only, after --warmup)
  --profile-sizes LIST  object sizes to profile (default 4k)
  --profile-duration S  seconds per profiled phase (default 10)
  --json FILE           write all results as JSON
  --tmp-dir DIR         where temp dirs go (default $TMPDIR)
  --keep                keep temp dirs (logs, data)
  --max-time S          hard limit for the whole run (default 3600)
`;

export function parseOptions(argv) {
  const o = {
    duration: 3, runs: 3, phases: ['put', 'get', 'copy', 'cond', 'contended', 'big', 'mcp'], targets: ['embedded', 'upstream'],
    sizes: [4 * 1024, 8 * MiB], concurrency: [1, 8, 32], agents: 4, bigSize: 1024 * MiB, moto: true,
    signer: 'fast', casketArgs: [], profileDuration: 10, profileSizes: [4 * 1024], maxTime: 3600, keep: false, quick: false, warmup: 10,
    payloads: undefined, rgwProbe: true,
  };
  const explicit = new Set();
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let v;
    if (a.includes('=')) [a, v] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)];
    const next = () => v ?? argv[++i] ?? (() => { throw new Error(`${a} needs a value`); })();
    explicit.add(a);
    switch (a) {
      case '--help': case '-h': process.stdout.write(HELP); process.exit(0);
      case '--duration': o.duration = Number(next()); break;
      case '--warmup': o.warmup = Number(next()); break;
      case '--runs': o.runs = Math.max(3, Number(next())); break;
      case '--quick': o.quick = true; break;
      case '--phases': o.phases = next().split(','); break;
      case '--targets': o.targets = next().split(','); break;
      case '--sizes': o.sizes = next().split(',').map(parseSize); break;
      case '--concurrency': o.concurrency = next().split(',').map(Number); break;
      case '--agents': o.agents = Number(next()); break;
      case '--credentials': o.credentials = next(); break;
      case '--big-size': o.bigSize = parseSize(next()); break;
      case '--no-moto': o.moto = false; break;
      case '--moto': o.moto = true; break;
      case '--rgw': o.rgw = next(); break;
      case '--no-rgw': o.rgwProbe = false; break;
      case '--payloads': o.payloads = next().split(','); break;
      case '--rgw-access-key': o.rgwAccessKey = next(); break;
      case '--rgw-secret-key': o.rgwSecretKey = next(); break;
      case '--signer': o.signer = next(); break;
      case '--casket-arg': o.casketArgs.push(next()); break;
      case '--profile': o.profile = resolve(next()); break;
      case '--profile-duration': o.profileDuration = Number(next()); break;
      case '--profile-sizes': o.profileSizes = next().split(',').map(parseSize); break;
      case '--json': o.json = resolve(next()); break;
      case '--tmp-dir': o.tmpDir = resolve(next()); break;
      case '--keep': o.keep = true; break;
      case '--max-time': o.maxTime = Number(next()); break;
      default: throw new Error(`unknown option ${argv[i]} (see --help)`);
    }
  }
  if (o.quick) {
    if (!explicit.has('--duration')) o.duration = 1;
    if (!explicit.has('--warmup')) o.warmup = 3;
    if (!explicit.has('--concurrency')) o.concurrency = [1, 8];
    if (!explicit.has('--big-size')) o.bigSize = 64 * MiB;
  }
  o.explicit = explicit;
  if (o.profile && !o.phases.includes('profile')) o.phases.push('profile');
  checkPayloadModes(o.payloads ?? PAYLOAD_MODES);
  if (o.rgw && (!o.rgwAccessKey || !o.rgwSecretKey)) {
    o.rgwAccessKey ??= process.env.RGW_ACCESS_KEY;
    o.rgwSecretKey ??= process.env.RGW_SECRET_KEY;
    if (!o.rgwAccessKey || !o.rgwSecretKey) throw new Error('--rgw needs --rgw-access-key and --rgw-secret-key (or RGW_ACCESS_KEY/RGW_SECRET_KEY)');
  }
  return o;
}
