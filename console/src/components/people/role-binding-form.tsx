import { useState } from 'preact/hooks';
import { createRoleBinding, type RoleBinding, type RoleBindingKind } from '../../api/client.ts';
import { BINDING_KIND_TEXT, ROLE_NAMES, ROLE_TEXT, type RoleName } from '../../roles.ts';
import { errorFor, FieldError, invalidProps } from '../field-error.tsx';
import { CustomerInput } from '../customer-input.tsx';

const FIELDS = ['kind', 'value', 'role', 'customer'];

/**
 * Binds an IdP group or one person to a role, for every customer or one; the customer field
 * offers the customers that exist (the API refuses one that does not, and the form shows why next to it).
 */
export function RoleBindingForm({ onCreated }: { onCreated: (binding: RoleBinding) => void }) {
  const [kind, setKind] = useState<RoleBindingKind>('group');
  const [value, setValue] = useState('');
  const [role, setRole] = useState<RoleName>('viewer');
  const [customer, setCustomer] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const fleetWideOnly = role === 'admin';

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const forCustomer = fleetWideOnly ? '' : customer.trim();
      const answer = await createRoleBinding({ kind, value: value.trim(), role, ...(forCustomer === '' ? {} : { customer: forCustomer }) });
      setValue('');
      onCreated(answer.data);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card binding-form" onSubmit={submit} aria-labelledby="binding-form-title" noValidate>
      <h2 id="binding-form-title">Add a role binding</h2>
      <div class="field">
        <label for="binding-kind">Bind</label>
        <select id="binding-kind" value={kind} {...invalidProps(error, 'kind')} onChange={(event) => setKind(event.currentTarget.value as RoleBindingKind)}>
          {(Object.keys(BINDING_KIND_TEXT) as RoleBindingKind[]).map((each) => (
            <option key={each} value={each}>
              {BINDING_KIND_TEXT[each].label}
            </option>
          ))}
        </select>
        <FieldError error={error} control="kind" />
      </div>
      <div class="field">
        <label for="binding-value">{BINDING_KIND_TEXT[kind].value}</label>
        <input
          id="binding-value"
          value={value}
          autocomplete="off"
          placeholder={kind === 'group' ? 'e.g. keyfleet-operators' : kind === 'email' ? 'e.g. alice@example.com' : ''}
          {...invalidProps(error, 'value')}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
        <p class="field-hint">{BINDING_KIND_TEXT[kind].hint}</p>
        <FieldError error={error} control="value" />
      </div>
      <div class="field">
        <label for="binding-role">Role</label>
        <select id="binding-role" value={role} {...invalidProps(error, 'role')} onChange={(event) => setRole(event.currentTarget.value as RoleName)}>
          {ROLE_NAMES.map((name) => (
            <option key={name} value={name}>
              {name} — {ROLE_TEXT[name]}
            </option>
          ))}
        </select>
        <FieldError error={error} control="role" />
      </div>
      <div class="field">
        <label for="binding-customer">Customer</label>
        <CustomerInput
          id="binding-customer"
          value={fleetWideOnly ? '' : customer}
          disabled={fleetWideOnly}
          placeholder="every customer"
          aria-describedby="binding-customer-hint"
          {...invalidProps(error, 'customer')}
          onValue={setCustomer}
        />
        <p class="field-hint" id="binding-customer-hint">
          {fleetWideOnly ? 'The admin role acts for every customer.' : 'Empty: every customer. A customer’s name: that customer’s records only.'}
        </p>
        <FieldError error={error} control="customer" />
      </div>
      {error !== undefined && !FIELDS.some((control) => errorFor(error, control) !== undefined) && (
        <p class="field-error" role="alert">
          {error instanceof Error ? error.message : String(error)}
        </p>
      )}
      <button type="submit" class="primary" disabled={busy || value.trim() === ''}>
        {busy ? 'Adding…' : 'Add binding'}
      </button>
    </form>
  );
}
