import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** What the browser tests of the account page (/app) share: the browser, axe-core, focus. */

// Debian's chromium (`apt-get install chromium`); CI installs it (.ci/run).
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const haveBrowser = existsSync(CHROMIUM);
if (!haveBrowser) console.warn(`test/browser skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
if (!haveBrowser && process.env.REQUIRE_BROWSER) throw new Error(`REQUIRE_BROWSER is set but ${CHROMIUM} does not exist`);

/** Screenshots (gitignored). */
export const ARTIFACTS = path.resolve(import.meta.dirname, '../artifacts');
export const DAY = 86_400_000;

export async function launchBrowser(): Promise<Browser> {
  await mkdir(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** axe-core's browser build, evaluated in the page through the DevTools protocol: an inline script
 * tag (addScriptTag's content) would be refused by the page's own policy, which the tests keep on. */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The element with focus: its id, tag and text. */
export function focused(page: Page): Promise<{ id: string; tag: string; text: string }> {
  return page.evaluate(() => {
    const doc = (
      globalThis as unknown as { document: { activeElement: { id: string; tagName: string; textContent: string | null } | null } }
    ).document;
    const node = doc.activeElement;
    return { id: node?.id ?? '', tag: node?.tagName ?? '', text: node?.textContent ?? '' };
  });
}

/** The serious and critical WCAG 2.1 A/AA and best-practice violations axe finds in what is shown. */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: Violation[] }> } }).axe;
    type Violation = { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] };
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id} (${v.help}): ${v.targets.slice(0, 3).join(', ')}`);
}
