import { useState } from 'preact/hooks';
import { createWebhookEndpoint, type FleetEventType, type WebhookEndpoint } from '../api/client.ts';
import { mayReadAudit } from '../audit-entry.ts';
import { AUDIT_READ_EVENT_TYPES, DEPLOYMENT_ONLY_EVENT_TYPES, FLEET_EVENT_TYPE_TEXT, FLEET_EVENT_TYPES } from '../fleet-event-types.ts';
import { useSession } from '../session.ts';
import { errorFor, FieldError, invalidProps } from './field-error.tsx';

const FIELDS = ['url', 'event_types'];

/**
 * Subscribes a URL to fleet events of the chosen types: for `customer`, or, for an operator
 * naming none, deployment-wide.
 */
export function WebhookEndpointForm({ customer, deploymentWide, onCreated }: { customer: string | undefined; deploymentWide: boolean; onCreated: (endpoint: WebhookEndpoint) => void }) {
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState<Set<FleetEventType>>(new Set(['okm.overdue', 'okm.back_online', 'rollout.paused', 'rollout.aborted']));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const session = useSession();
  const mayAudit = session !== null && mayReadAudit(session.claims);
  const offered = FLEET_EVENT_TYPES.filter((type) => (deploymentWide || !DEPLOYMENT_ONLY_EVENT_TYPES.has(type)) && (mayAudit || !AUDIT_READ_EVENT_TYPES.has(type)));

  const toggle = (type: FleetEventType, on: boolean) =>
    setTypes((previous) => {
      const next = new Set(previous);
      if (on) next.add(type);
      else next.delete(type);
      return next;
    });

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const answer = await createWebhookEndpoint({ url: url.trim(), event_types: offered.filter((type) => types.has(type)) }, customer);
      setUrl('');
      onCreated(answer.data);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card" onSubmit={submit} aria-labelledby="endpoint-form-title" noValidate>
      <h2 id="endpoint-form-title">Add an endpoint</h2>
      <p class="muted small">
        {deploymentWide ? 'Deployment-wide: it receives the events of every customer.' : `It receives the events of ${customer ?? 'your fleet'}.`} Requests are signed with the
        customer’s <code>whsec_</code> secret (Standard Webhooks).
      </p>
      <div class="field">
        <label for="endpoint-url">URL</label>
        <input id="endpoint-url" type="url" class="wide-input" value={url} placeholder="https://ops.example.com/keyfleet-events" {...invalidProps(error, 'url')} onInput={(event) => setUrl(event.currentTarget.value)} />
        <FieldError error={error} control="url" />
      </div>
      <fieldset class="field event-types" {...invalidProps(error, 'event_types')}>
        <legend>Event types</legend>
        {offered.map((type) => (
          <label class="checkbox" key={type}>
            <input type="checkbox" checked={types.has(type)} onChange={(event) => toggle(type, event.currentTarget.checked)} />
            <span>
              <code>{type}</code> <span class="muted small">{FLEET_EVENT_TYPE_TEXT[type]}</span>
            </span>
          </label>
        ))}
        <FieldError error={error} control="event_types" />
      </fieldset>
      {error !== undefined && !FIELDS.some((control) => errorFor(error, control) !== undefined) && (
        <p class="field-error" role="alert">
          {error instanceof Error ? error.message : String(error)}
        </p>
      )}
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Adding…' : 'Add endpoint'}
      </button>
    </form>
  );
}
