import { Router } from 'express';
import { VERSION } from '../../version.js';

/** Area A: the version as a bare JSON string. */
export function versionRoutes(): Router {
  const router = Router();
  router.get('/version', (_req, res) => {
    res.status(200).json(VERSION);
  });
  return router;
}
