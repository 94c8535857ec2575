import { randomUUID } from 'node:crypto';
import type { Db } from '../db/database.ts';
import type { RoleBindingKind } from '../db/schema.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { freshCopy, type FreshCopy } from '../shared/fresh-copy.ts';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import { actorText } from './actor.ts';
import { FLEET_ONLY_SCOPES, ROLE_NAMES, ROLES, isRole, type Role } from './roles.ts';

/** How stale a process's copy of the bindings may be: a binding change applies within this on every process. */
export const BINDINGS_MAX_AGE_MS = 1_000;

export const BINDING_KINDS: readonly RoleBindingKind[] = ['group', 'email', 'subject'];

export interface RoleBinding {
  id: string;
  kind: RoleBindingKind;
  value: string;
  role: Role;
  customer: { id: number; name: string } | null;
  created_at: number;
  created_by: string;
}

export interface NewRoleBinding {
  kind: string;
  value: string;
  role: string;
  /** A customer's name; absent: every customer. */
  customer?: string;
}

async function readBindings(db: Db): Promise<RoleBinding[]> {
  const rows = await db
    .selectFrom('role_bindings')
    .leftJoin('customers', 'customers.id', 'role_bindings.customer_id')
    .select(['role_bindings.id', 'kind', 'value', 'role', 'customer_id', 'customers.name as customer_name', 'role_bindings.created_at', 'created_by'])
    .orderBy('role_bindings.created_at')
    .orderBy('role_bindings.id')
    .execute();
  return rows
    .filter((row) => isRole(row.role))
    .map((row) => ({
      id: row.id,
      kind: row.kind,
      value: row.value,
      role: row.role as Role,
      customer: row.customer_id === null ? null : { id: Number(row.customer_id), name: row.customer_name! },
      created_at: Number(row.created_at),
      created_by: row.created_by,
    }));
}

export const listRoleBindings = readBindings;

/** A copy of every binding, at most BINDINGS_MAX_AGE_MS old when used: the table is small (tens of rows). */
export const currentBindings = (db: Db, clock?: () => number): FreshCopy<RoleBinding[]> => freshCopy(() => readBindings(db), BINDINGS_MAX_AGE_MS, clock);

/** What an entry records of a binding: the customer is the entry's own. */
const recordedBinding = (binding: RoleBinding) => ({ kind: binding.kind, value: binding.value, role: binding.role });

/** Binds a role, with its role_binding.created entry in the same transaction; `source.actor` is recorded as its creator too. */
export async function createRoleBinding(db: Db, binding: NewRoleBinding, { now, source }: { now: number; source: ChangeSource }): Promise<RoleBinding> {
  if (!(BINDING_KINDS as readonly string[]).includes(binding.kind)) throw badRequest(`kind: expected one of ${BINDING_KINDS.join(', ')}, got "${binding.kind}"`);
  if (!isRole(binding.role)) throw badRequest(`role: unknown role "${binding.role}" (known: ${ROLE_NAMES.join(', ')})`);
  const value = binding.kind === 'email' ? binding.value.trim().toLowerCase() : binding.value;
  if (value === '' || value.length > 256) throw badRequest('value: expected 1-256 characters');
  if (binding.customer !== undefined && binding.role === 'admin') throw badRequest('customer: the admin role acts for every customer; bind it without a customer');
  return db.transaction().execute(async (trx) => {
    let customer: RoleBinding['customer'] = null;
    if (binding.customer !== undefined) {
      const row = await trx.selectFrom('customers').select(['id', 'name']).where('name', '=', binding.customer).executeTakeFirst();
      if (!row) throw badRequest(`customer: unknown customer ${binding.customer}`);
      customer = { id: Number(row.id), name: row.name };
    }
    const created: RoleBinding = { id: randomUUID(), kind: binding.kind as RoleBindingKind, value, role: binding.role as Role, customer, created_at: now, created_by: actorText(source.actor) };
    await trx
      .insertInto('role_bindings')
      .values({ id: created.id, kind: created.kind, value, role: created.role, customer_id: customer?.id ?? null, created_at: now, created_by: created.created_by })
      .execute();
    await recordChange(trx, source, { action: 'role_binding.created', customer: customer?.name ?? null, entity: { type: 'role_binding', id: created.id }, after: recordedBinding(created) }, now);
    return created;
  });
}

/** Removes a binding, with its role_binding.deleted entry in the same transaction; 404 (and no entry) for an unknown id. Returns what was removed. */
export async function deleteRoleBinding(db: Db, id: string, { now, source }: { now: number; source: ChangeSource }): Promise<RoleBinding> {
  return db.transaction().execute(async (trx) => {
    const binding = (await readBindings(trx)).find((each) => each.id === id);
    // Counted: of two removals at once, one removes the binding and records it; the other finds it gone.
    const removed = binding && Number((await trx.deleteFrom('role_bindings').where('id', '=', id).executeTakeFirst()).numDeletedRows) === 1;
    if (!binding || !removed) throw notFound(`role binding ${id} not found`);
    await recordChange(
      trx,
      source,
      {
        action: 'role_binding.deleted',
        customer: binding.customer?.name ?? null,
        entity: { type: 'role_binding', id },
        before: { ...recordedBinding(binding), customer: binding.customer?.name ?? null, created_at: new Date(binding.created_at).toISOString(), created_by: binding.created_by },
      },
      now,
    );
    return binding;
  });
}

/** Who a person is, as bindings match them. */
export interface Identity {
  subject: string;
  email: string | null;
  groups: readonly string[];
}

/** What a person's bindings grant: the roles and scopes, for every customer or for one. */
export type Grant =
  | { ok: true; roles: Role[]; scopes: Set<string>; customer: { id: number; name: string } | null }
  | { ok: false; reason: string };

/**
 * The grant of the bindings that match the person. A person acts for the whole fleet or for one
 * customer: bindings that match them must all be fleet-wide or all for the same customer (a
 * person given roles at two customers is refused, with the bindings named, rather than given
 * one of them silently). A customer's binding grants no fleet-only scope.
 */
export function grantOf(bindings: readonly RoleBinding[], identity: Identity): Grant {
  const email = identity.email?.toLowerCase();
  const matching = bindings.filter(
    (binding) =>
      (binding.kind === 'group' && identity.groups.includes(binding.value)) ||
      (binding.kind === 'email' && email !== undefined && binding.value === email) ||
      (binding.kind === 'subject' && binding.value === identity.subject),
  );
  if (matching.length === 0) {
    return { ok: false, reason: `no role is bound to you: neither your email${email ? ` (${email})` : ''}, your subject nor any of your groups${identity.groups.length > 0 ? ` (${identity.groups.join(', ')})` : ' (the provider sent none)'}. An administrator binds one with keyfleet role bind.` };
  }
  const customers = new Map(matching.map((binding) => [binding.customer?.id ?? null, binding.customer]));
  if (customers.size > 1) {
    const names = [...customers.values()].map((customer) => customer?.name ?? 'every customer');
    return { ok: false, reason: `your roles are bound for more than one scope (${names.join(', ')}); a person acts for every customer or for one. An administrator removes one of the bindings.` };
  }
  const customer = [...customers.values()][0] ?? null;
  const roles = ROLE_NAMES.filter((role) => matching.some((binding) => binding.role === role));
  const scopes = new Set<string>(roles.flatMap((role) => ROLES[role]));
  if (customer !== null) for (const scope of FLEET_ONLY_SCOPES) scopes.delete(scope);
  return { ok: true, roles, scopes, customer };
}
