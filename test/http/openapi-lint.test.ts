import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { buildTestApp, type TestApp } from '../helpers/app.ts';

/** Redocly's `recommended` warnings that the document keeps on purpose: see docs/adr/0029-openapi-document-generated-from-the-routes.md. */
const ACCEPTED_WARNINGS: Record<string, string> = {};

/** The app's own document, for one setting of device tokens (the document states the device routes' security from it). */
async function documentOf(deviceTokens: 'off' | 'required'): Promise<string> {
  const subject: TestApp = await buildTestApp('sqlite', { OKM_DEVICE_TOKENS: deviceTokens });
  try {
    return (await subject.app.inject({ method: 'GET', url: '/openapi.json' })).body;
  } finally {
    await subject.close();
  }
}

const describeProblem = (problem: { ruleId: string; message: string; location: { pointer?: string }[] }) =>
  `${problem.ruleId} at ${problem.location[0]?.pointer ?? '?'}: ${problem.message}`;

for (const deviceTokens of ['off', 'required'] as const) {
  test(`with device tokens ${deviceTokens}, Redocly's recommended rules find no error in /openapi.json, and only the accepted warnings`, async () => {
    const source = await documentOf(deviceTokens);
    const config = await createConfig({ extends: ['recommended'] });

    const problems = await lintFromString({ source, absoluteRef: '/openapi.json', config });

    const errors = problems.filter((problem) => problem.severity === 'error').map(describeProblem);
    const unexplained = problems.filter((problem) => problem.severity !== 'error' && !(problem.ruleId in ACCEPTED_WARNINGS)).map(describeProblem);
    assert.deepEqual(errors, []);
    assert.deepEqual(unexplained, []);
  });
}
