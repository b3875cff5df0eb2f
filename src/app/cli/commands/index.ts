import type { Command } from './types.js';
import { allCommand, apiCommand, schedulerCommand, workerCommand } from './serve.js';
import { simulatorCommand } from './simulator.js';
import { usersCreateCommand, usersTokenCommand, usersWeightCommand } from './users.js';
import { postsCreateCommand, seedCommand } from './posts.js';
import { queuesResumeCommand, queuesStatusCommand } from './queues.js';
import { watchSyncCommand } from './watch-sync.js';
import { alertsListCommand } from './alerts.js';
import { keyGenerateCommand, openapiCommand, syncIndexesCommand, versionCommand } from './admin.js';

/** Every command of the program, by name. Roles and admin commands of later issues join here. */
export const COMMANDS: ReadonlyMap<string, Command> = new Map(
  [
    allCommand,
    apiCommand,
    workerCommand,
    schedulerCommand,
    simulatorCommand,
    usersCreateCommand,
    usersTokenCommand,
    usersWeightCommand,
    postsCreateCommand,
    seedCommand,
    queuesStatusCommand,
    queuesResumeCommand,
    watchSyncCommand,
    alertsListCommand,
    keyGenerateCommand,
    syncIndexesCommand,
    openapiCommand,
    versionCommand,
  ].map((c) => [c.name, c]),
);
