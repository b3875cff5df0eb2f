/**
 * docs/configuration.md, rendered from the zod schemas the program parses its environment with:
 * each variable's type, default and meaning come from the schema itself (its `.meta()`), so the
 * reference cannot list a setting the program does not read, nor miss one it does.
 */
import { z } from 'zod';
import { envSchema } from '../config/env.js';
import { COUNTRY_UPSTREAM_SETTINGS, upstreamEnvSchema } from '../config/upstream.js';
import { workersEnvSchema } from '../config/workers.js';
import { quotaEnvSchema } from '../config/quota.js';
import { rateLimitsEnvSchema } from '../config/rate-limits.js';
import { opsEnvSchema } from '../config/ops.js';
import { accountsEnvSchema } from '../config/accounts.js';
import { alertsEnvSchema } from '../config/alerts.js';
import { smtpEnvSchema } from '../config/smtp.js';
import { chartsEnvSchema } from '../config/charts.js';
import { COUNTRY_CODES } from '../config/countries.js';
import { RENAMED_SETTINGS } from '../config/renamed.js';

type Shape = Readonly<Record<string, z.ZodType>>;

interface Section {
  readonly title: string;
  readonly file: string;
  readonly intro: string;
  readonly shape: Shape;
}

/** What a variable's `.meta()` may say beyond its description. */
interface SettingMeta {
  readonly description?: string;
  /** The type as an operator writes it, where the schema's own kind says too little (a duration is a string). */
  readonly type?: string;
  /** The default as an operator would write it (`10s` rather than 10000). */
  readonly defaultText?: string;
  /** What leaving the variable unset means, where its default alone would not say (computed, or unset). */
  readonly unset?: string;
}

/** The variables loadConfig reads in env.ts itself: all of envSchema but the sections it extends with. */
function ownShape(): Shape {
  const extended = new Set(
    [
      workersEnvSchema,
      quotaEnvSchema,
      rateLimitsEnvSchema,
      opsEnvSchema,
      accountsEnvSchema,
      alertsEnvSchema,
      smtpEnvSchema,
      chartsEnvSchema,
    ].flatMap((s) => Object.keys(s.shape)),
  );
  return Object.fromEntries(Object.entries(envSchema.shape as Shape).filter(([name]) => !extended.has(name)));
}

export const SECTIONS: readonly Section[] = [
  {
    title: 'Server, storage and refresh',
    file: 'config/env.ts',
    intro: 'The HTTP server, MongoDB and Redis, logging, the countries kept and how often their products are refreshed.',
    shape: ownShape(),
  },
  {
    title: 'Upstream and simulator',
    file: 'config/upstream.ts',
    intro: 'Which adapter serves the catalogue, the Creators API, and the simulator that stands in for it ([upstream.md](upstream.md)).',
    shape: upstreamEnvSchema.shape,
  },
  {
    title: 'Quota',
    file: 'config/quota.ts',
    intro:
      "Each country's upstream quota, which the quota governor and the planner follow, and how its classes of work share it ([scheduling.md](scheduling.md)).",
    shape: quotaEnvSchema.shape,
  },
  {
    title: 'Workers and scheduler',
    file: 'config/workers.ts',
    intro: "Worker sizing, the scheduler's ticks and the forced update's wait.",
    shape: workersEnvSchema.shape,
  },
  {
    title: 'Rate limits',
    file: 'config/rate-limits.ts',
    intro: 'Requests the HTTP side accepts per client, counted in Redis so that every api process shares one count.',
    shape: rateLimitsEnvSchema.shape,
  },
  {
    title: 'Per-account caps',
    file: 'config/accounts.ts',
    intro: 'Caps that keep one account from taking the shared quota and storage from the others; a request past one changes nothing.',
    shape: accountsEnvSchema.shape,
  },
  {
    title: 'History, alerts and deliveries',
    file: 'config/alerts.ts',
    intro: 'How long price history is kept, and how alerts are delivered on every channel ([alerts.md](alerts.md)).',
    shape: alertsEnvSchema.shape,
  },
  {
    title: 'E-mail (SMTP)',
    file: 'config/smtp.ts',
    intro: 'The SMTP server e-mail alerts go through: operator configuration, trusted like `MONGODB_URI`.',
    shape: smtpEnvSchema.shape,
  },
  {
    title: 'Price charts',
    file: 'config/charts.ts',
    intro: "The threads that draw price charts off the api's event loop, and what an account may have drawn.",
    shape: chartsEnvSchema.shape,
  },
  {
    title: 'Operations: Bull Board and metrics',
    file: 'config/ops.ts',
    intro: 'What operators reach besides the API ([operations.md](operations.md)).',
    shape: opsEnvSchema.shape,
  },
];

const COUNTRY_SUFFIX = new RegExp(`_(${COUNTRY_CODES.join('|')})$`);

function def(schema: z.ZodType): Record<string, unknown> & { type: string } {
  return (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
}

/** The metadata of `schema` and of the schemas it wraps, the outermost first. */
function metaOf(schema: z.ZodType): SettingMeta {
  const layers: SettingMeta[] = [];
  for (let s: z.ZodType | undefined = schema; s;) {
    layers.push((z.globalRegistry.get(s) ?? {}) as SettingMeta);
    const d = def(s);
    s = (d.innerType ?? d.in) as z.ZodType | undefined;
  }
  return Object.assign({}, ...layers.reverse()) as SettingMeta;
}

function typeOf(schema: z.ZodType): string {
  const own = (z.globalRegistry.get(schema) as SettingMeta | undefined)?.type;
  if (own) return own;
  const d = def(schema);
  switch (d.type) {
    case 'default':
    case 'optional':
      return typeOf(d.innerType as z.ZodType);
    case 'pipe':
      return typeOf(d.in as z.ZodType);
    case 'enum':
      return Object.values(d.entries as Record<string, string>).join(', ');
    case 'union':
      return (d.options as z.ZodType[]).map(typeOf).join(' or ');
    case 'literal':
      return (d.values as unknown[]).map(String).join(', ');
    default:
      return d.type;
  }
}

function defaultOf(schema: z.ZodType, meta: SettingMeta): string {
  if (meta.unset !== undefined) return meta.unset;
  if (meta.defaultText !== undefined) return code(meta.defaultText);
  const d = def(schema);
  if (d.type === 'default') {
    const value = d.defaultValue;
    return code(Array.isArray(value) ? value.join(',') : String(value));
  }
  return 'unset';
}

const code = (text: string): string => `\`${text}\``;
const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

interface Row {
  readonly name: string;
  readonly type: string;
  readonly default: string;
  readonly meaning: string;
}

/** A section's rows; a variable that exists once per country the product knows is one `NAME_<CC>` row. */
export function sectionRows(shape: Shape): Row[] {
  const rows: Row[] = [];
  const seen = new Set<string>();
  for (const [name, schema] of Object.entries(shape)) {
    const perCountry = COUNTRY_SUFFIX.test(name);
    const shown = perCountry ? name.replace(COUNTRY_SUFFIX, '_<CC>') : name;
    if (seen.has(shown)) continue;
    seen.add(shown);
    const meta = metaOf(schema);
    rows.push({ name: shown, type: typeOf(schema), default: defaultOf(schema, meta), meaning: meta.description ?? '' });
  }
  return rows;
}

/** The variables read once per configured country by parseUpstreamConfig. */
function countryUpstreamRows(): Row[] {
  return Object.entries(COUNTRY_UPSTREAM_SETTINGS).map(([name, s]) => ({
    name: `${name}_<CC>`,
    type: s.type,
    default: s.unset,
    meaning: s.description,
  }));
}

function table(rows: readonly Row[]): string[] {
  return [
    '| variable | type | default | meaning |',
    '| --- | --- | --- | --- |',
    ...rows.map((r) => `| \`${r.name}\` | ${cell(r.type)} | ${cell(r.default)} | ${cell(r.meaning)} |`),
  ];
}

/** Every variable the schemas leave without a description: the reference must say what each means. */
export function undescribed(): string[] {
  return SECTIONS.flatMap((s) => sectionRows(s.shape))
    .filter((r) => r.meaning.trim() === '')
    .map((r) => r.name);
}

export function renderConfigReference(): string {
  const lines = [
    '# Configuration',
    '',
    '<!-- Generated from the zod schemas under config/ by `npm run docs:config`; edit the schemas, not this file. -->',
    '',
    'shelfwatch reads its settings from environment variables, validated once at start-up. A bad value',
    'stops the program with one line per variable that names it (exit code 78); empty values count as',
    'unset. Durations are written `500ms`, `30s`, `15m`, `1h` or `1d` (a bare number is milliseconds).',
    '',
    "`<CC>` in a name stands for a country code: Amazon's 21 Creators API marketplaces, " +
      COUNTRY_CODES.map(code).join(' ') +
      '; the upstream credentials are read only for the countries of `COUNTRIES`.',
    '',
    ...SECTIONS.flatMap((s) => [
      `## ${s.title}`,
      '',
      `${s.intro} Declared in \`${s.file}\`.`,
      '',
      ...table(s.file === 'config/upstream.ts' ? [...sectionRows(s.shape), ...countryUpstreamRows()] : sectionRows(s.shape)),
      '',
    ]),
    '## Former names',
    '',
    'Read for one more release: when only the former name is set its value is used, and start-up logs',
    'a warning naming the current one; when both are set the current name wins (and the warning says',
    'to remove the former).',
    '',
    '| former name | current name |',
    '| --- | --- |',
    ...Object.entries(RENAMED_SETTINGS).map(([former, current]) => `| \`${former}\` | \`${current}\` |`),
    '',
  ];
  return lines.join('\n');
}
