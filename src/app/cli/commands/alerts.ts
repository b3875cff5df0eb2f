import { withAdminContext } from '../runtime.js';
import { str } from '../flags.js';
import { presentAlert } from '../../../alerts/rules/present.js';
import type { Command } from './types.js';

/** One account's alerts, newest first, as one JSON object a line (for jq), with the state of each. */
export const alertsListCommand: Command = {
  name: 'alerts:list',
  options: { email: { type: 'string' } },
  required: ['email'],
  async run(flags, env) {
    return withAdminContext(env, async (ctx) => {
      const email = str(flags, 'email')!;
      const user = await ctx.users.findByEmail(email);
      if (!user) {
        console.error(`shelfwatch: no user with email ${email}`);
        return 1;
      }
      const limit = 100;
      for (let page = 1; ; page++) {
        const { items, total } = await ctx.alerts.list(user._id, { page, limit });
        for (const view of items) process.stdout.write(JSON.stringify(presentAlert(view, ctx.config.timeZone)) + '\n');
        if (page * limit >= total || items.length === 0) break;
      }
      return 0;
    });
  },
};
