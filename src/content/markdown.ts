import { createRequire } from 'node:module';
import type MarkdownIt from 'markdown-it';
import type sanitizeHtml from 'sanitize-html';

/**
 * markdown-it and sanitize-html (with the HTML parser and CSS parser under it) are loaded when the
 * first text is rendered, not when this module is: only the processes that write a profile or a post
 * (the api, admin commands) render, and every worker and scheduler would otherwise carry them.
 * `require` keeps the renderer synchronous; both packages ship CommonJS builds.
 */
const load = createRequire(import.meta.url);
let render: ((source: string) => string) | undefined;

function renderer(): (source: string) => string {
  if (render) return render;
  const Markdown = load('markdown-it') as typeof MarkdownIt;
  const sanitize = load('sanitize-html') as typeof sanitizeHtml;
  // Raw HTML in the source is escaped by markdown-it (html: false); the sanitiser is the second wall,
  // so that a bug or an option change in one of them alone lets nothing through.
  const md = new Markdown({ html: false, linkify: true, breaks: true, typographer: false });
  const options = sanitizeOptions(sanitize);
  render = (source) => sanitize(md.render(source), options).trim();
  return render;
}

const sanitizeOptions = (sanitize: typeof sanitizeHtml): sanitizeHtml.IOptions => ({
  allowedTags: [
    'p',
    'br',
    'hr',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'blockquote',
    'pre',
    'code',
    'em',
    'strong',
    'del',
    's',
    'ul',
    'ol',
    'li',
    'a',
    'img',
    'table',
    'thead',
    'tbody',
    'tr',
    'th',
    'td',
  ],
  allowedAttributes: { a: ['href', 'title', 'rel'], img: ['src', 'alt', 'title'], ol: ['start'], th: ['style'], td: ['style'] },
  allowedStyles: { th: { 'text-align': [/^(left|right|center)$/] }, td: { 'text-align': [/^(left|right|center)$/] } },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['http', 'https'] },
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
  transformTags: {
    a: sanitize.simpleTransform('a', { rel: 'nofollow noopener' }),
  },
});

/** Markdown in, HTML that is safe to show as it is out: no script, no event handler, no javascript: URL. */
export function renderMarkdown(source: string): string {
  return renderer()(source);
}
