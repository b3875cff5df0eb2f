/**
 * Deterministic fake directory content for demos and benchmarks: the n-th user or post is the same
 * on every run and on every machine (its own PRNG seeded by its number), whatever N and M are, so
 * running `seed` again rewrites the same records instead of inventing new ones. Half English, half
 * Japanese; messages are Markdown with links, lists and emphasis, so rendering and search are
 * exercised as real content would.
 */

/** mulberry32: tiny, fast, good enough for fake data, and stable across Node versions. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rand = ReturnType<typeof prng>;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const pickSome = <T>(r: Rand, xs: readonly T[], n: number): T[] => {
  const pool = [...xs];
  const out: T[] = [];
  while (out.length < n && pool.length) out.push(pool.splice(Math.floor(r() * pool.length), 1)[0]!);
  return out;
};

const EN_FIRST = [
  'Alice',
  'Ben',
  'Chloe',
  'Daniel',
  'Emma',
  'Felix',
  'Grace',
  'Hugo',
  'Isla',
  'Jack',
  'Kate',
  'Liam',
  'Maya',
  'Noah',
  'Olivia',
  'Paul',
  'Ruby',
  'Sam',
  'Tara',
  'Victor',
];
const EN_LAST = [
  'Anderson',
  'Brooks',
  'Carter',
  'Davis',
  'Evans',
  'Foster',
  'Green',
  'Hughes',
  'Irving',
  'Jones',
  'Klein',
  'Lee',
  'Morgan',
  'Nash',
  'Owens',
  'Price',
];
const JA_LAST = ['佐藤', '鈴木', '高橋', '田中', '伊藤', '渡辺', '山本', '中村', '小林', '加藤', '吉田', '山田'];
const JA_FIRST = ['翔太', '美咲', '大輔', '陽菜', '健太', 'さくら', '拓海', '結衣', '蓮', '葵', 'ひなた', '悠真'];
const EN_ROLES = [
  'Frontend engineer',
  'Backend engineer',
  'Data analyst',
  'Product designer',
  'Indie developer',
  'Illustrator',
  'Marketing lead',
  'QA engineer',
];
const JA_ROLES = [
  'フロントエンドエンジニア',
  'バックエンドエンジニア',
  'データアナリスト',
  'プロダクトデザイナー',
  '個人開発者',
  'イラストレーター',
  'マーケティング担当',
  'テストエンジニア',
];
const SKILLS = [
  'TypeScript',
  'React',
  'Vue',
  'Node.js',
  'Go',
  'Rust',
  'Python',
  'PostgreSQL',
  'MongoDB',
  'Figma',
  'Kubernetes',
  'AWS',
  'Swift',
  'Kotlin',
];
const EN_TOPICS = [
  'price tracking',
  'open data',
  'mobile games',
  'e-commerce tools',
  'accessibility',
  'home automation',
  'language learning',
];
const JA_TOPICS = ['価格調査', 'オープンデータ', 'スマホゲーム', 'ネットショップの道具', 'アクセシビリティ', 'スマートホーム', '語学学習'];
const EN_POST = [
  'Looking for a {skill} developer',
  'Hiring: part-time {role}',
  'Weekend project needs a {skill} hand',
  'Co-founder wanted for a {topic} startup',
  'Paid gig: {topic} prototype in {skill}',
];
const JA_POST = [
  '{skill}エンジニア募集',
  '{role}を探しています（副業可）',
  '週末だけ手伝ってくれる{role}募集',
  '{topic}サービスの共同創業者を募集',
  '{topic}のプロトタイプ開発（{skill}）',
];
const PLACES_EN = ['remote', 'Tokyo', 'Osaka', 'Berlin', 'London', 'New York'];
const PLACES_JA = ['フルリモート', '東京', '大阪', '福岡', '札幌', '名古屋'];

export interface FakeUser {
  readonly email: string;
  readonly name: string;
  readonly title: string;
  readonly avatar: string;
  readonly url: string;
  readonly image: string | null;
  readonly tags: string[];
  readonly message: string;
  readonly createdAt: Date;
}

export interface FakePost {
  readonly seedKey: string;
  /** Which seeded user owns it (0-based). */
  readonly owner: number;
  readonly title: string;
  readonly url: string | null;
  readonly image: string | null;
  readonly message: string;
  readonly createdAt: Date;
}

// A fixed moment, so the dates are as reproducible as the text.
const EPOCH = Date.UTC(2026, 0, 1);
const YEAR_MS = 365 * 24 * 3600 * 1000;
const pad = (n: number): string => String(n).padStart(6, '0');
const fill = (template: string, vars: Record<string, string>): string => template.replace(/\{(\w+)\}/g, (_, k: string) => vars[k] ?? k);

export function seedEmail(i: number): string {
  return `seed-user-${pad(i)}@seed.example.com`;
}

export function fakeUser(i: number): FakeUser {
  const r = prng(0x5eed0000 + i);
  const ja = r() < 0.5;
  const skills = pickSome(r, SKILLS, 2 + Math.floor(r() * 3));
  const name = ja ? `${pick(r, JA_LAST)} ${pick(r, JA_FIRST)}` : `${pick(r, EN_FIRST)} ${pick(r, EN_LAST)}`;
  const title = ja ? pick(r, JA_ROLES) : pick(r, EN_ROLES);
  const topic = ja ? pick(r, JA_TOPICS) : pick(r, EN_TOPICS);
  const site = `https://example.com/~user${i}`;
  const message = ja
    ? [
        `**${title}**として${pick(r, PLACES_JA)}で働いています。最近は*${topic}*に夢中です。`,
        '',
        '得意なこと:',
        '',
        ...skills.map((s) => `- ${s}`),
        '',
        `ポートフォリオは[こちら](${site})。お気軽にどうぞ！`,
      ].join('\n')
    : [
        `I am a **${title.toLowerCase()}** based in ${pick(r, PLACES_EN)}, currently into *${topic}*.`,
        '',
        'What I work with:',
        '',
        ...skills.map((s) => `- ${s}`),
        '',
        `See my work at [my site](${site}) or say hi.`,
      ].join('\n');
  return {
    email: seedEmail(i),
    name,
    title,
    avatar: `https://example.com/avatars/${i % 64}.png`,
    url: site,
    image: r() < 0.5 ? `https://example.com/covers/${i % 32}.jpg` : null,
    tags: skills.map((s) => s.toLowerCase()),
    message,
    createdAt: new Date(EPOCH - Math.floor(r() * YEAR_MS)),
  };
}

export function fakePost(i: number, users: number): FakePost {
  const r = prng(0x9057000 + i);
  const ja = r() < 0.5;
  const skill = pick(r, SKILLS);
  const vars = {
    skill,
    role: ja ? pick(r, JA_ROLES) : pick(r, EN_ROLES).toLowerCase(),
    topic: ja ? pick(r, JA_TOPICS) : pick(r, EN_TOPICS),
  };
  const title = fill(pick(r, ja ? JA_POST : EN_POST), vars);
  const extra = pickSome(
    r,
    SKILLS.filter((s) => s !== skill),
    2,
  );
  const apply = `https://example.com/jobs/${i}`;
  const message = ja
    ? [
        `${pick(r, PLACES_JA)}の小さなチームです。**${skill}**の経験がある方を探しています。`,
        '',
        '歓迎するスキル:',
        '',
        ...extra.map((s, n) => `${n + 1}. ${s}`),
        '',
        `報酬は*応相談*。詳細と応募は[募集ページ](${apply})から。`,
      ].join('\n')
    : [
        `We are a small team (${pick(r, PLACES_EN)}) and need someone comfortable with **${skill}**.`,
        '',
        'Nice to have:',
        '',
        ...extra.map((s) => `- ${s}`),
        '',
        `Pay is *negotiable*. Details and how to apply: [the job page](${apply}).`,
      ].join('\n');
  return {
    seedKey: `seed-post-${pad(i)}`,
    owner: Math.floor(r() * users),
    title,
    url: apply,
    image: r() < 0.3 ? `https://example.com/posts/${i % 32}.jpg` : null,
    message,
    createdAt: new Date(EPOCH - Math.floor(r() * YEAR_MS)),
  };
}
