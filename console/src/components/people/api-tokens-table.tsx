import type { ApiTokenRecord } from '../../api/client.ts';
import { LocalTime } from '../relative-time.tsx';

/** Whether a token still opens the API: revoked, expired, or active. */
export function tokenState(token: ApiTokenRecord, now: number): 'revoked' | 'expired' | 'active' {
  if (token.revoked_at !== null) return 'revoked';
  return Date.parse(token.expires_at) <= now ? 'expired' : 'active';
}

const STATE_TEXT = { revoked: 'Revoked', expired: 'Expired', active: 'Active' } as const;

/**
 * The API tokens the deployment signed, newest first, each with its scopes, customer and state;
 * an active one can be revoked. `ownTokenId`: the token this console is signed in with, if any.
 */
export function ApiTokensTable({ tokens, ownTokenId, now, onRevoke }: { tokens: ApiTokenRecord[]; ownTokenId: string | null; now: number; onRevoke: (token: ApiTokenRecord) => void }) {
  return (
    <div class="table-wrap">
      <table class="people-table" data-testid="api-tokens">
        <caption class="visually-hidden">API tokens</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col" class="hide-narrow">Scopes</th>
            <th scope="col">Customer</th>
            <th scope="col" class="hide-narrow">Issued</th>
            <th scope="col">Expires</th>
            <th scope="col">State</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((token) => {
            const state = tokenState(token, now);
            return (
              <tr key={token.id}>
                <th scope="row">
                  <span class="wrap-long">{token.name}</span>
                  {token.id === ownTokenId && <span class="badge badge-you">this console</span>}
                  <div class="muted small wrap-long" title={`id ${token.id}`}>
                    {token.subject}
                  </div>
                </th>
                <td class="hide-narrow">
                  <span class="scope-list">
                    {token.scopes.map((scope) => (
                      <code key={scope}>{scope}</code>
                    ))}
                  </span>
                </td>
                <td data-label="Customer">{token.customer ?? <span class="muted">every customer</span>}</td>
                <td class="hide-narrow">
                  <LocalTime value={token.created_at} />
                </td>
                <td data-label="Expires">
                  <LocalTime value={token.expires_at} />
                </td>
                <td data-label="State">
                  <span class={`badge badge-token-${state}`} title={token.revoked_at === null ? undefined : `revoked ${token.revoked_at}`}>
                    {STATE_TEXT[state]}
                  </span>
                </td>
                <td class="actions">
                  {state === 'active' && (
                    <button type="button" class="danger small-button" onClick={() => onRevoke(token)} aria-label={`Revoke the token ${token.name}…`}>
                      Revoke…
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
