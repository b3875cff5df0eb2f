/**
 * bench:api's token-rotation scenario: one account rotates its token ROTATIONS times in WINDOW_S
 * seconds on one api process while another account's requests are timed on a second one (both
 * with RATE_LIMIT_TOKEN_ROTATION raised, so the rotations run at the pace the scenario sets).
 * Every rotation is a change notice to the second process. Its account cache must keep the other
 * account: the figure is how often that process loaded a token's account from MongoDB during the
 * window (its `shelfwatch_cache_reads_total{cache="accounts",outcome="load"}`; the rotating
 * account never asks it, so each load is the other account's token read again), beside the other
 * account's p99 (alone first, then beside the rotations) and the process's CPU per request.
 */
import autocannon from 'autocannon';
import type { Child } from './proc.js';
import { sampleProc } from './proc.js';
import { metricsText } from './metrics-text.js';
import { figure, round, type Figure } from './result.js';

const ROTATIONS = 600;
const WINDOW_S = 60;
/**
 * What the other account asks: the world list, authenticated like every account route and kept for
 * WORLD_PAGE_TTL, so that what a request costs beyond its page is mostly its token's account.
 */
const TIMED_PATH = '/api/world';
/** Seconds the other account is timed alone first, for its p99 without rotations beside. */
const QUIET_S = 15;

export interface RotationInput {
  /** Starts an api process with these settings on top of the benchmark's; resolves with its URL. */
  readonly startApi: (extra: Record<string, string>) => Promise<{ child: Child; url: string }>;
  /** Makes an account; resolves with its token. */
  readonly newAccount: (name: string) => Promise<string>;
  readonly connections: number;
}

export interface RotationResult {
  readonly figures: Figure[];
  readonly details: Record<string, unknown>;
}

/** The process's counters this scenario reads, summed over their other labels. */
async function counters(url: string): Promise<{ loads: number; hits: number; commands: number }> {
  const text = await metricsText(url);
  const one = (re: RegExp) => [...text.matchAll(re)].reduce((sum, m) => sum + Number(m[1]), 0);
  return {
    loads: one(/^shelfwatch_cache_reads_total\{[^}]*cache="accounts"[^}]*outcome="load"[^}]*\} (\S+)$/gm),
    hits: one(/^shelfwatch_cache_reads_total\{[^}]*cache="accounts"[^}]*outcome="hit"[^}]*\} (\S+)$/gm),
    commands: one(/^shelfwatch_mongo_commands_total (\S+)$/gm),
  };
}

/** Rotates `token` `count` times, spread evenly over `seconds`, each with the token the last one gave. */
async function rotate(
  url: string,
  token: string,
  count: number,
  seconds: number,
): Promise<{ done: number; refused: number; maxMs: number }> {
  const start = performance.now();
  let done = 0;
  let refused = 0;
  let maxMs = 0;
  for (let i = 0; i < count; i++) {
    const due = start + (i * seconds * 1000) / count;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const sent = performance.now();
    const res = await fetch(`${url}/api/me/token`, { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
    maxMs = Math.max(maxMs, performance.now() - sent);
    if (res.status !== 200) {
      refused++;
      await res.arrayBuffer();
      continue;
    }
    token = ((await res.json()) as { data: { api_token: string } }).data.api_token;
    done++;
  }
  return { done, refused, maxMs };
}

export async function measureTokenRotation(input: RotationInput): Promise<RotationResult> {
  const raised = { RATE_LIMIT_TOKEN_ROTATION: '1000000' };
  const rotating = await input.startApi(raised);
  const timed = await input.startApi(raised);
  try {
    const [rotatingToken, otherToken] = await Promise.all([input.newAccount('rotating'), input.newAccount('timed')]);
    const headers = { Authorization: `Bearer ${otherToken}` };
    // The other account's first request loads its account (and subscribes the process to notices).
    for (let i = 0; i < 3; i++) await (await fetch(timed.url + TIMED_PATH, { headers })).arrayBuffer();
    const quiet = await autocannon({
      url: timed.url + TIMED_PATH,
      connections: input.connections,
      duration: QUIET_S,
      headers,
      timeout: 30,
    });
    const before = await counters(timed.url);
    const cpuBefore = sampleProc(timed.child.pid);
    const [rotations, r] = await Promise.all([
      rotate(rotating.url, rotatingToken, ROTATIONS, WINDOW_S),
      autocannon({ url: timed.url + TIMED_PATH, connections: input.connections, duration: WINDOW_S, headers, timeout: 30 }),
    ]);
    const cpuAfter = sampleProc(timed.child.pid);
    const after = await counters(timed.url);
    const total = r.requests.total;
    const loads = after.loads - before.loads;
    const cpuMs = cpuBefore && cpuAfter && total ? ((cpuAfter.cpuS - cpuBefore.cpuS) * 1000) / total : null;
    const name = 'token rotation';
    const figures = [
      figure(`${name}: rotations in ${WINDOW_S} s`, rotations.done, 'rotations', { op: '==', value: ROTATIONS, source: 'issue' }),
      // Read again only when ACCOUNT_CACHE_TTL (60 s) runs out during the window (concurrent reads
      // share that load); a cache emptied by every notice would read it about once a rotation.
      figure(`${name}: other account's token loads from MongoDB`, loads, 'loads', { op: '<=', value: 2, source: 'ours' }),
      figure(`${name}: other account's p99 latency`, r.latency.p99, 'ms', { op: '<=', value: 50, source: 'ours' }),
      figure(`${name}: other account's api CPU per request`, cpuMs, 'ms', { op: '<=', value: 1, source: 'issue' }),
      figure(`${name}: other account's non-2xx or failed`, r.non2xx + r.errors + r.timeouts, 'responses', {
        op: '==',
        value: 0,
        source: 'ours',
      }),
    ];
    const details = {
      path: TIMED_PATH,
      rotationsRefused: rotations.refused,
      slowestRotationMs: round(rotations.maxMs, 1),
      otherRequests: total,
      otherRequestsPerSecond: round(total / r.duration, 1),
      quietP99Ms: quiet.latency.p99,
      quietRequestsPerSecond: round(quiet.requests.total / quiet.duration, 1),
      p50Ms: r.latency.p50,
      p99Ms: r.latency.p99,
      maxMs: r.latency.max,
      statusCodes: r.statusCodeStats,
      errors: r.errors,
      timeouts: r.timeouts,
      accountCacheHits: after.hits - before.hits,
      accountCacheLoads: loads,
      timedProcessCommands: after.commands - before.commands,
    };
    console.log(`api: ${name}: ${rotations.done} rotations, other account ${loads} token loads, p99 ${r.latency.p99} ms`);
    return { figures, details };
  } finally {
    await Promise.all([rotating.child.stop(), timed.child.stop()]);
  }
}
