import { afterAll, expect } from 'vitest';
import { violations } from './openapi-check.js';

// Every answer a test context's app gave in this file must keep to the OpenAPI document.
afterAll(() => {
  expect(violations, 'answers that break the OpenAPI document (test/helpers/openapi-check.ts)').toEqual([]);
});
