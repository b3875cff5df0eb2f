import { Router } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { VERSION } from '../../../version.js';
import { json, unreadable } from '../openapi/responses.js';

export const versionPaths: ZodOpenApiPathsObject = {
  '/version': {
    get: {
      tags: ['Version'],
      operationId: 'getVersion',
      summary: 'The engine version',
      responses: { 200: json('The version as a bare JSON string.', z.string().meta({ example: VERSION })), ...unreadable() },
    },
  },
};

/** The version query: the version as a bare JSON string. */
export function versionRoutes(): Router {
  const router = Router();
  router.get('/version', (_req, res) => {
    res.status(200).json(VERSION);
  });
  return router;
}
