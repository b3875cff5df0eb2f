import { afterAll, expect } from 'vitest';
import { violations } from './openapi-check.js';

// Every answer a test context's app gave in this file must keep to the OpenAPI document.
// Taken, not read: a worker runs several files, and one file's answers must not fail the next.
afterAll(() => {
  expect(violations.splice(0), 'answers that break the OpenAPI document (test/helpers/openapi-check.ts)').toEqual([]);
});
