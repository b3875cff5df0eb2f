import type { AppContext } from '../context.js';
import { SealedSecretError } from '../../core/errors.js';

export const DEMO_EMAIL = 'demo@shelfwatch.invalid';

/**
 * On the embedded default, a demo account so that a new user can call the account API at once. Its token is
 * written to stdout for the person at the terminal, never to the log.
 */
export async function ensureDemoAccount(ctx: AppContext, baseUrl: string, board?: { user: string; password: string }): Promise<void> {
  const existing = await ctx.users.findByEmail(DEMO_EMAIL);
  const token = existing
    ? await ctx.users.revealToken(existing._id).catch((err: unknown) => {
        // A copy sealed under another APP_KEY cannot be shown again: the demo account gets a new token.
        if (err instanceof SealedSecretError) return ctx.users.rotateToken(existing._id);
        throw err;
      })
    : (await ctx.users.create({ name: 'Demo', email: DEMO_EMAIL, title: 'Demo account of the embedded default' })).token;
  process.stdout.write(
    `\nshelfwatch is running on embedded parts at ${baseUrl}\n` +
      `demo account ${DEMO_EMAIL}, API token:\n  ${token}\n` +
      `try: curl -H 'Authorization: Bearer ${token}' ${baseUrl}/api/me\n` +
      (board ? `queues: ${baseUrl}/admin/queues (user ${board.user}, password ${board.password})\n` : '') +
      '\n',
  );
}
