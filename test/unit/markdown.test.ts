import { describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../src/content/markdown.js';

describe('renderMarkdown', () => {
  it('renders emphasis, lists and links with rel="nofollow noopener"', () => {
    const html = renderMarkdown('**bold** and *em*\n\n- one\n- two\n\n[site](https://example.com)');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<li>one</li>');
    expect(html).toContain('<a href="https://example.com" rel="nofollow noopener">site</a>');
  });

  it('leaves no script, event handler or javascript: URL', () => {
    const html = renderMarkdown(
      '<script>alert(1)</script>\n\n<img src=x onerror="alert(1)">\n\n[x](javascript:alert(1))\n\n![i](javascript:alert(2))',
    );
    // Escaped text may still spell "onerror" (inert); what must not exist is a tag or attribute.
    expect(html).not.toMatch(/<script|<[^>]+\son\w+=|href="javascript:|src="javascript:/i);
    expect(html).toContain('&lt;script&gt;');
  });
});
