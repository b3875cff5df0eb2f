/**
 * The functions a V8 CPU profile (`--cpu-prof`) spent most time in, by self time and by total
 * time (the function and what it called): `node --import tsx bench/lib/top-frames.ts FILE [N]`.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface Frame {
  readonly frame: string;
  readonly selfMs: number;
  readonly totalMs: number;
}

function nameOf(n: ProfileNode): string {
  const where = n.callFrame.url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '');
  return `${n.callFrame.functionName || '(anonymous)'} ${where}:${n.callFrame.lineNumber + 1}`;
}

/** Self and total milliseconds per function (a frame counts once per sample however often it recurs). */
export function topFrames(profile: Profile, n = 25): { self: Frame[]; total: Frame[]; sampledMs: number } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const c of node.children ?? []) parent.set(c, node.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let sampledMs = 0;
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1_000;
    sampledMs += ms;
    const leaf = byId.get(id);
    if (!leaf) return;
    self.set(nameOf(leaf), (self.get(nameOf(leaf)) ?? 0) + ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = nameOf(byId.get(at)!);
      if (seen.has(name)) continue;
      seen.add(name);
      total.set(name, (total.get(name) ?? 0) + ms);
    }
  });
  const top = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([frame]) => ({ frame, selfMs: Math.round(self.get(frame) ?? 0), totalMs: Math.round(total.get(frame) ?? 0) }));
  return { self: top(self), total: top(total), sampledMs };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: top-frames.ts PROFILE.cpuprofile [N]');
  const { self, total, sampledMs } = topFrames(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(process.argv[3] ?? 25));
  console.log(`sampled ${Math.round(sampledMs)} ms`);
  console.log('-- by self time');
  for (const f of self) console.log(`${String(f.selfMs).padStart(7)} ms  ${f.frame}`);
  console.log('-- by total time');
  for (const f of total) console.log(`${String(f.totalMs).padStart(7)} ms  ${f.frame}`);
}
