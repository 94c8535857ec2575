import type { RoleBinding } from '../../api/client.ts';
import { BINDING_KIND_TEXT } from '../../roles.ts';
import { LocalTime } from '../relative-time.tsx';

/**
 * The role bindings, oldest first: who (a group or one person), the role, for which customers,
 * when and by whom it was added (`addedBy` names the API's `kind:id`).
 */
export function RoleBindingsTable({ bindings, addedBy, onRemove }: { bindings: RoleBinding[]; addedBy: (recorded: string) => string; onRemove: (binding: RoleBinding) => void }) {
  return (
    <div class="table-wrap">
      <table class="people-table" data-testid="role-bindings">
        <caption class="visually-hidden">Role bindings</caption>
        <thead>
          <tr>
            <th scope="col">Who</th>
            <th scope="col">Role</th>
            <th scope="col">Customer</th>
            <th scope="col" class="hide-narrow">Added</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {bindings.map((binding) => (
            <tr key={binding.id}>
              <th scope="row">
                <span class="muted small">{BINDING_KIND_TEXT[binding.kind].label}</span> <span class="mono wrap-long">{binding.value}</span>
              </th>
              <td data-label="Role">
                <span class="badge badge-role">{binding.role}</span>
              </td>
              <td data-label="Customer">{binding.customer ?? <span class="muted">every customer</span>}</td>
              <td class="hide-narrow small">
                <LocalTime value={binding.created_at} />
                <div class="muted" title={binding.created_by}>
                  by {addedBy(binding.created_by)}
                </div>
              </td>
              <td class="actions">
                <button type="button" class="danger small-button" onClick={() => onRemove(binding)} aria-label={`Remove the binding of ${binding.value} to ${binding.role}…`}>
                  Remove…
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
