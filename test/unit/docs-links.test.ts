import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The folders whose files the docs name by path (`src/…`, `jobs/…`): a name there must exist. */
const CODE_FOLDERS = ['src', 'jobs', 'workers', 'config', 'scripts', 'bench', 'test'];

/** Folders the product writes into and git ignores (`bench/results/`): their files are named before they exist. */
function generatedFolders(): string[] {
  return readFileSync(join(root, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.endsWith('/') && !line.startsWith('#'));
}

/** README.md and every document under docs/, as paths from the repository root. */
function documents(): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

/** Every file under the code folders and at the root, as paths from the root (for names given without their folder). */
function repoFiles(): string[] {
  const files = readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => e.name);
  for (const folder of CODE_FOLDERS) {
    for (const entry of readdirSync(join(root, folder), { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) files.push(relative(root, join(entry.parentPath, entry.name)).split('\\').join('/'));
    }
  }
  return files;
}

/** Relative targets of inline links and images, and of reference definitions, without their #anchor. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
  const inline = [...prose.matchAll(/!?\[[^\]]*\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
  const defined = [...prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/gm)].map((m) => m[1]!);
  return [...inline, ...defined]
    .filter((target) => !/^(?:[a-z][a-z0-9+.-]*:|#|\/\/)/i.test(target))
    .map((target) => decodeURIComponent(target.replace(/[#?].*$/, '')))
    .filter((target) => target !== '');
}

/** What the text shows as code: fenced blocks and inline spans, where file names are written. */
function codeText(markdown: string): string[] {
  const fenced = [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
  const spans = [...prose.matchAll(/(`+)([^`]+?)\1(?!`)/g)].map((m) => m[2]!);
  return [...fenced, ...spans];
}

/**
 * The repository paths the code text names. `src/…`, `jobs/…` and the other code folders' names are
 * taken from the root (a trailing `/` names a folder); a glob or placeholder (`*`, `{`, `<`) keeps
 * only the folders before it. A `.ts` file named without a code folder (`routes/alerts.ts`,
 * `kind.ts`) is returned with a leading `…/`: some file must end so. Prose outside code counts
 * only a code folder's file named with its extension.
 */
function namedPaths(markdown: string): string[] {
  const found: string[] = [];
  const rooted = new RegExp(`(?<![\\w./@~$-])((?:${CODE_FOLDERS.join('|')})/[\\w./-]*)([*{<\\[]?)`, 'g');
  const partial = /(?<![\w./@~$-])((?:[\w-]+\/)*[\w-]+(?:\.[\w-]+)*\.ts)(?![\w/-])/g;
  for (const text of codeText(markdown)) {
    for (const [, path, glob] of text.matchAll(rooted)) {
      let name = path!.replace(/\.+$/, '');
      if (glob) name = name.slice(0, name.lastIndexOf('/') + 1);
      found.push(name);
    }
    for (const [, path] of text.matchAll(partial)) {
      if (CODE_FOLDERS.some((folder) => path!.startsWith(`${folder}/`))) continue;
      found.push(`…/${path}`);
    }
  }
  // Prose names files too (`in src/catalog/writes.ts`); there only a name with an extension counts,
  // since "jobs/workers" in a sentence means both folders.
  const prose = markdown
    .replace(/^```[^\n]*\n[\s\S]*?^```/gm, '')
    .replace(/(`+)[^`]+?\1(?!`)/g, '')
    .replace(/\]\([^)]*\)/g, ']');
  const file = new RegExp(`(?<![\\w./@~$-])((?:${CODE_FOLDERS.join('|')})/[\\w./-]*\\.[a-z]+)(?![\\w/-])`, 'g');
  for (const [, path] of prose.matchAll(file)) found.push(path!.replace(/\.+$/, ''));
  return found;
}

/** Which of a document's links and named paths point at nothing, given the repository's files. */
function brokenReferences(
  doc: string,
  markdown: string,
  files: readonly string[],
  exists: (path: string) => boolean,
  generated: readonly string[] = [],
): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(markdown)) {
    const path = posix.normalize(posix.join(posix.dirname(doc), target));
    if (!exists(path)) broken.push(`${doc}: link to ${target}`);
  }
  for (const name of namedPaths(markdown)) {
    if (name.startsWith('…/')) {
      const tail = name.slice(2);
      if (!files.some((file) => file === tail || file.endsWith(`/${tail}`))) broken.push(`${doc}: names \`${tail}\``);
    } else if (!exists(name) && !generated.some((folder) => name.startsWith(folder))) {
      broken.push(`${doc}: names \`${name}\``);
    }
  }
  return [...new Set(broken)];
}

describe('paths the docs name', () => {
  it('are found in text as links and as code', () => {
    const markdown = [
      'See [alerts](alerts.md#rules), [the key](../src/core/keys.ts) and ![a picture](images/x.png "t").',
      'Not [a site](https://example.com), [a mail](mailto:a@b.c) or [a heading](#top).',
      'The rules are `src/alerts/rules/service.ts`, the jobs under `jobs/`, each `src/alerts/{rules,endpoints}`,',
      'run `npx vitest run test/unit/a.test.ts`; `routes/alerts.ts` and `kind.ts` carry no folder; `config.workers` is no path.',
      'In prose src/catalog/writes.ts is a file, jobs/workers two folders.',
      '```sh',
      'node dist/src/main.js && tsx scripts/config-reference.ts',
      '```',
    ].join('\n');
    expect(linkTargets(markdown)).toEqual(['alerts.md', '../src/core/keys.ts', 'images/x.png']);
    expect(namedPaths(markdown).sort()).toEqual(
      [
        'scripts/config-reference.ts',
        'src/alerts/rules/service.ts',
        'src/catalog/writes.ts',
        'jobs/',
        'src/alerts/',
        'test/unit/a.test.ts',
        '…/routes/alerts.ts',
        '…/kind.ts',
      ].sort(),
    );
  });

  it('are reported when nothing is there', () => {
    const files = ['src/alerts/rules/service.ts', 'src/app/http/routes/alerts.ts'];
    const exists = (path: string) =>
      ['docs/alerts.md', 'src', 'src/alerts', 'src/alerts/rules/service.ts'].includes(path.replace(/\/$/, ''));
    const markdown = [
      '[alerts](alerts.md), [gone](scaling.md), `src/alerts/rules/service.ts`, `src/alerts/service.ts`,',
      '`routes/alerts.ts`, `models/webhook-endpoint.ts`, `src/alerts/`, `jobs/`, `bench/results/a.json`.',
    ].join('\n');
    expect(brokenReferences('docs/x.md', markdown, files, exists, ['bench/results/'])).toEqual([
      'docs/x.md: link to scaling.md',
      'docs/x.md: names `src/alerts/service.ts`',
      'docs/x.md: names `models/webhook-endpoint.ts`',
      'docs/x.md: names `jobs/`',
    ]);
  });

  it('exist, in README.md and every document under docs/', () => {
    const files = repoFiles();
    const exists = (path: string) => existsSync(join(root, path));
    const generated = generatedFolders();
    const docs = documents();
    expect(docs.length).toBeGreaterThan(5);
    const broken = docs.flatMap((doc) => brokenReferences(doc, readFileSync(join(root, doc), 'utf8'), files, exists, generated));
    expect(broken, 'point these at files that exist (or say what replaced them)').toEqual([]);
  });
});
