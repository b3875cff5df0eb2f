import { chmod, mkdir, mkdtemp, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEmbeddedState, writeEmbeddedState, type EmbeddedState } from '../../src/embedded/state-file.js';
import { untrustedBecause } from '../../src/embedded/private-file.js';

/**
 * The embedded mode's state file (`<STATE_DIR>/embedded.json`) carries generated secrets to admin
 * commands. Writing it must never follow a symlink planted by someone else (it would overwrite the
 * link's target, or hand them the secrets), and reading it must trust only a regular file of this
 * user that no one else may read or write (else another user could point admin commands at a
 * database of their choosing).
 */
const STATE: EmbeddedState = { pid: process.pid, mongoUri: 'mongodb://127.0.0.1:1/x', redisUrl: 'redis://:pw@127.0.0.1:2' };
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'sw-state-'));
});
afterAll(async () => {
  const { rm } = await import('node:fs/promises');
  await rm(root, { recursive: true, force: true });
});

async function freshDir(name: string): Promise<string> {
  const dir = join(root, name);
  await mkdir(dir, { mode: 0o700 });
  return dir;
}

function warnings(): { list: string[]; warn: (why: string) => void } {
  const list: string[] = [];
  return { list, warn: (why) => list.push(why) };
}

describe('writing the state file', () => {
  it('writes a 0600 file in a 0700 directory, leaving no temporary file', async () => {
    const dir = join(root, 'new', 'state');
    await writeEmbeddedState(dir, STATE);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dir, 'embedded.json'))).mode & 0o777).toBe(0o600);
    expect(await readdir(dir)).toEqual(['embedded.json']);
    expect(await readEmbeddedState(dir)).toEqual(STATE);
  });

  it('refuses a state file that is a symlink, and leaves its target alone', async () => {
    const dir = await freshDir('link-file');
    const victim = join(root, 'victim-file');
    await writeFile(victim, 'precious\n');
    await symlink(victim, join(dir, 'embedded.json'));
    await expect(writeEmbeddedState(dir, STATE)).rejects.toThrow(/symlink/);
    expect(await readFile(victim, 'utf8')).toBe('precious\n');
  });

  it('refuses a state directory that is a symlink', async () => {
    const real = await freshDir('real-dir');
    const dir = join(root, 'link-dir');
    await symlink(real, dir);
    await expect(writeEmbeddedState(dir, STATE)).rejects.toThrow(/STATE_DIR .*symlink/);
    await expect(writeEmbeddedState(`${dir}/`, STATE)).rejects.toThrow(/STATE_DIR .*symlink/);
    expect(await readdir(real)).toEqual([]);
  });

  it('tightens a pre-existing file: the secrets never sit in a file others can read', async () => {
    const dir = await freshDir('loose-existing');
    await writeFile(join(dir, 'embedded.json'), '{}', { mode: 0o644 });
    await writeEmbeddedState(dir, STATE);
    expect((await stat(join(dir, 'embedded.json'))).mode & 0o777).toBe(0o600);
  });
});

describe('reading the state file', () => {
  async function validFileIn(dir: string, mode = 0o600): Promise<string> {
    const file = join(dir, 'embedded.json');
    await writeFile(file, JSON.stringify(STATE), { mode });
    await chmod(file, mode);
    return file;
  }

  it('trusts a 0600 file of this user', async () => {
    const dir = await freshDir('good');
    await validFileIn(dir);
    const w = warnings();
    expect(await readEmbeddedState(dir, w.warn)).toEqual(STATE);
    expect(w.list).toEqual([]);
  });

  it('does not follow a symlinked state file', async () => {
    const dir = await freshDir('read-link-file');
    const elsewhere = await freshDir('read-link-target');
    await symlink(await validFileIn(elsewhere), join(dir, 'embedded.json'));
    const w = warnings();
    expect(await readEmbeddedState(dir, w.warn)).toBeUndefined();
    expect(w.list).toEqual([expect.stringMatching(/embedded\.json.*symlink/)]);
  });

  it('does not trust a symlinked state directory', async () => {
    const real = await freshDir('read-real-dir');
    await validFileIn(real);
    const dir = join(root, 'read-link-dir');
    await symlink(real, dir);
    const w = warnings();
    expect(await readEmbeddedState(dir, w.warn)).toBeUndefined();
    expect(await readEmbeddedState(`${dir}/`, w.warn)).toBeUndefined();
    expect(w.list).toEqual([expect.stringMatching(/STATE_DIR .*symlink/), expect.stringMatching(/STATE_DIR .*symlink/)]);
  });

  it.each([0o644, 0o640, 0o604, 0o660])('does not trust a file with mode %o', async (mode) => {
    const dir = await freshDir(`mode-${mode.toString(8)}`);
    await validFileIn(dir, mode);
    const w = warnings();
    expect(await readEmbeddedState(dir, w.warn)).toBeUndefined();
    expect(w.list).toEqual([expect.stringMatching(/embedded\.json.*(readable|writable) by other users.*0600/)]);
  });

  it('says nothing when there is no file', async () => {
    const w = warnings();
    expect(await readEmbeddedState(await freshDir('empty'), w.warn)).toBeUndefined();
    expect(w.list).toEqual([]);
  });
});

describe('the trust check', () => {
  const me = 1000;
  const facts = (uid: number, mode: number, kind: 'file' | 'dir' | 'link' = 'file') => ({
    uid,
    mode,
    isFile: () => kind === 'file',
    isDirectory: () => kind === 'dir',
    isSymbolicLink: () => kind === 'link',
  });

  it('trusts only what this user owns and no one else may read or write', () => {
    expect(untrustedBecause(facts(me, 0o100600), me)).toBeUndefined();
    expect(untrustedBecause(facts(me, 0o100400), me)).toBeUndefined();
    expect(untrustedBecause(facts(me + 1, 0o100600), me)).toMatch(/owned by uid 1001, not by this user \(uid 1000\)/);
    expect(untrustedBecause(facts(0, 0o100600), me)).toMatch(/owned by uid 0/);
    expect(untrustedBecause(facts(me, 0o100644), me)).toMatch(/readable by other users/);
    expect(untrustedBecause(facts(me, 0o100620), me)).toMatch(/writable by other users/);
    expect(untrustedBecause(facts(me, 0o120777, 'link'), me)).toMatch(/symlink/);
    expect(untrustedBecause(facts(me, 0o040700, 'dir'), me)).toMatch(/not a regular file/);
  });
});
