import { useState } from 'preact/hooks';
import {
  deleteRoleBinding,
  listApiTokens,
  listPersonSessions,
  listRoleBindings,
  revokeApiToken,
  revokeEverySessionOf,
  revokePersonSession,
  type ApiTokenRecord,
  type PersonSessionRecord,
  type RoleBinding,
} from '../api/client.ts';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { PageHeader } from '../components/layout.tsx';
import { ApiTokensTable } from '../components/people/api-tokens-table.tsx';
import { RoleBindingForm } from '../components/people/role-binding-form.tsx';
import { RoleBindingsTable } from '../components/people/role-bindings-table.tsx';
import { personName, SessionsTable, type SessionPerson } from '../components/people/sessions-table.tsx';
import { ResourceView } from '../components/resource-view.tsx';
import { useNow } from '../components/use-now.ts';
import { useResource } from '../components/use-resource.ts';
import { actorLabel } from '../actor-label.ts';
import { BINDING_KIND_TEXT } from '../roles.ts';
import { useSession } from '../session.ts';

/** The sessions list follows people signing in and out while the page is open. */
const SESSIONS_REFRESH_MS = 15_000;

/** What waits for the administrator's confirmation. */
type Pending =
  | { what: 'binding'; binding: RoleBinding }
  | { what: 'session'; session: PersonSessionRecord }
  | { what: 'person'; person: SessionPerson; sessions: number }
  | { what: 'token'; token: ApiTokenRecord };

/**
 * Admin: who may sign in and what they may do (role bindings of IdP groups or people), who is
 * signed in (sessions, ended one by one or all of a person's at once when they leave), and the
 * API tokens the deployment signed (revoked here).
 */
export function PeoplePage() {
  const session = useSession()!;
  const now = useNow();
  const bindings = useResource(listRoleBindings, []);
  const sessions = useResource(listPersonSessions, [], SESSIONS_REFRESH_MS);
  const [includeExpired, setIncludeExpired] = useState(false);
  const tokens = useResource(() => listApiTokens(includeExpired), [includeExpired]);
  const [pending, setPending] = useState<Pending | null>(null);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<{ ok: boolean; text: string } | null>(null);

  const you = session.kind === 'person' ? Number(session.person.id) : null;
  // The people and tokens the page lists, to name who added a binding.
  const names = {
    people: new Map((sessions.data?.data ?? []).map((each) => [String(each.person.id), personName(each.person)])),
    tokens: new Map((tokens.data?.data ?? []).map((token) => [token.id, token.name])),
  };
  if (session.kind === 'person') names.people.set(session.person.id, session.person.name);

  const act = async (pendingAction: Pending) => {
    setBusy(true);
    setNotice(null);
    try {
      if (pendingAction.what === 'binding') {
        const { binding } = pendingAction;
        await deleteRoleBinding(binding.id);
        setNotice({ ok: true, text: `The binding of ${binding.value} to ${binding.role} is removed: people it bound lose that role within a second.` });
        bindings.reload();
      } else if (pendingAction.what === 'session') {
        await revokePersonSession(pendingAction.session.id);
        setNotice({ ok: true, text: `That session of ${personName(pendingAction.session.person)} has ended.` });
        sessions.reload();
      } else if (pendingAction.what === 'person') {
        const answer = await revokeEverySessionOf(pendingAction.person.id);
        setNotice({ ok: true, text: `${personName(pendingAction.person)} is signed out everywhere (${answer.data.revoked} ${answer.data.revoked === 1 ? 'session' : 'sessions'} ended).` });
        sessions.reload();
      } else {
        await revokeApiToken(pendingAction.token.id);
        setNotice({ ok: true, text: `The token ${pendingAction.token.name} is revoked: the API refuses it within a second.` });
        tokens.reload();
      }
    } catch (failure) {
      setNotice({ ok: false, text: failure instanceof Error ? failure.message : String(failure) });
    } finally {
      setBusy(false);
      setPending(null);
    }
  };

  return (
    <section>
      <PageHeader title="People & access" />
      <p class="muted">
        People sign in with single sign-on; a role binding gives an IdP group or one person a role, for every customer or one. A change applies within a
        second, a change of someone’s groups at the provider at their session’s next refresh.
      </p>
      {notice !== null && (
        <p class={`notice ${notice.ok ? 'notice-ok' : 'notice-warning'}`} role={notice.ok ? 'status' : 'alert'} data-testid="people-notice">
          {notice.text}
        </p>
      )}

      <h2 class="section-title">Role bindings</h2>
      <div class="people-layout section">
        <div>
          <ResourceView resource={bindings} isEmpty={(answer) => answer.data.length === 0} empty="No role binding yet: nobody can sign in with single sign-on. Add one with the form.">
            {(answer) => <RoleBindingsTable bindings={answer.data} addedBy={(recorded) => actorLabel(recorded, names)} onRemove={(binding) => setPending({ what: 'binding', binding })} />}
          </ResourceView>
        </div>
        <RoleBindingForm
          onCreated={(binding) => {
            setNotice({ ok: true, text: `${BINDING_KIND_TEXT[binding.kind].label} ${binding.value} is bound to ${binding.role}${binding.customer === null ? '' : ` for ${binding.customer}`}.` });
            bindings.reload();
          }}
        />
      </div>

      <h2 class="section-title">Sessions</h2>
      <div class="section">
        <ResourceView resource={sessions} isEmpty={(answer) => answer.data.length === 0} empty="Nobody is signed in with single sign-on.">
          {(answer) => (
            <SessionsTable
              sessions={answer.data}
              you={you}
              onEnd={(ended) => setPending({ what: 'session', session: ended })}
              onEndEverywhere={(person) => setPending({ what: 'person', person, sessions: answer.data.filter((each) => each.person.id === person.id).length })}
            />
          )}
        </ResourceView>
      </div>

      <div class="card-header">
        <h2 class="section-title">API tokens</h2>
        <label class="checkbox">
          <input type="checkbox" checked={includeExpired} onChange={(event) => setIncludeExpired(event.currentTarget.checked)} />
          Show expired tokens
        </label>
      </div>
      <div class="section">
        <ResourceView resource={tokens} isEmpty={(answer) => answer.data.length === 0} empty={includeExpired ? 'No token was ever issued.' : 'No token that has not expired.'}>
          {(answer) => (
            <ApiTokensTable
              tokens={answer.data}
              ownTokenId={session.kind === 'token' ? session.claims.tokenId : null}
              now={now}
              onRevoke={(token) => setPending({ what: 'token', token })}
            />
          )}
        </ResourceView>
        <p class="muted small">
          Tokens are issued with <code>keyfleet token issue</code> and <code>keyfleet console</code>.
        </p>
      </div>

      {pending !== null && <ConfirmPending pending={pending} you={you} busy={busy} onConfirm={() => void act(pending)} onCancel={() => setPending(null)} />}
    </section>
  );
}

function ConfirmPending({ pending, you, busy, onConfirm, onCancel }: { pending: Pending; you: number | null; busy: boolean; onConfirm: () => void; onCancel: () => void }) {
  const common = { busy, onConfirm, onCancel };
  if (pending.what === 'binding') {
    const { binding } = pending;
    return (
      <ConfirmDialog title="Remove this role binding?" confirmLabel="Remove binding" busyLabel="Removing…" {...common}>
        <p>
          {BINDING_KIND_TEXT[binding.kind].label} <code class="break">{binding.value}</code> is no longer {binding.role}
          {binding.customer === null ? '' : ` for ${binding.customer}`}. Whoever had access only through it is refused within a second, signed in or not.
        </p>
      </ConfirmDialog>
    );
  }
  if (pending.what === 'session') {
    const mine = pending.session.person.id === you;
    return (
      <ConfirmDialog title="End this session?" confirmLabel="End session" busyLabel="Ending…" {...common}>
        <p>
          {personName(pending.session.person)}’s browser is signed out within a second and must sign in again.
          {mine && <strong> This is one of your own sessions: if it is this one, you are signed out too.</strong>}
        </p>
      </ConfirmDialog>
    );
  }
  if (pending.what === 'person') {
    const mine = pending.person.id === you;
    return (
      <ConfirmDialog title={`Sign ${personName(pending.person)} out everywhere?`} confirmLabel="Sign out everywhere" busyLabel="Signing out…" {...common}>
        <p>
          Every session of {personName(pending.person)} ends ({pending.sessions} now), in every browser, within a second. They can sign in again while a role
          binding still lets them: when someone leaves, remove their binding or their group at the provider as well.
          {mine && <strong> These are your own sessions: you are signed out too.</strong>}
        </p>
      </ConfirmDialog>
    );
  }
  return (
    <ConfirmDialog title="Revoke this token?" confirmLabel="Revoke token" busyLabel="Revoking…" {...common}>
      <p>
        <strong>{pending.token.name}</strong> ({pending.token.subject}) is refused by the API within a second, with no way back: whoever uses it needs a new
        one.
      </p>
    </ConfirmDialog>
  );
}
