import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { findCustomerById, findCustomerByName } from '../../src/customers/repository.ts';
import { createCustomer } from '../../src/customers/service.ts';
import type { HttpError } from '../../src/http/errors.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

forEachDatabase('customer repository', (kind) => {
  let t: TestApp;
  before(async () => (t = await buildTestApp(kind)));
  after(() => t.close());

  test('a created customer is found by its name and by its id', async () => {
    const created = await createCustomer(t.db, 'acme');

    assert.deepEqual(await findCustomerByName(t.db, 'acme'), created);
    assert.deepEqual(await findCustomerById(t.db, created.id), created);
  });

  test('names of 1 and 64 characters of letters, digits, dot, underscore and hyphen are accepted', async () => {
    const shortest = await createCustomer(t.db, 'x');
    const longest = await createCustomer(t.db, `Ab0._-${'z'.repeat(58)}`);

    assert.equal(shortest.name, 'x');
    assert.equal(longest.name.length, 64);
  });

  const malformedNames = [
    ['empty', ''],
    ['with a space', 'a b'],
    ['with non-ASCII letters', 'ünïcode'],
    ['with a slash', 'a/b'],
    ['of 65 characters', 'z'.repeat(65)],
  ];
  for (const [description, name] of malformedNames) {
    test(`a name ${description} is refused with 400`, async () => {
      await assert.rejects(createCustomer(t.db, name!), (error: HttpError) => {
        assert.equal(error.statusCode, 400);
        assert.match(error.message, /^name: expected 1-64 characters/);
        return true;
      });
    });
  }

  test('a second customer with a taken name is refused with 409 naming it', async () => {
    await createCustomer(t.db, 'globex');

    await assert.rejects(createCustomer(t.db, 'globex'), (error: HttpError) => {
      assert.equal(error.statusCode, 409);
      assert.equal(error.message, 'customer globex already exists');
      return true;
    });
  });

  test('looking up a customer that does not exist gives undefined', async () => {
    assert.equal(await findCustomerByName(t.db, 'nobody'), undefined);
    assert.equal(await findCustomerById(t.db, 987_654), undefined);
  });
});
