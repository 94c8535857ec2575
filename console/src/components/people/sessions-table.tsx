import type { PersonSessionRecord } from '../../api/client.ts';
import { LocalTime, RelativeTime } from '../relative-time.tsx';

export type SessionPerson = PersonSessionRecord['person'];

export const personName = (person: SessionPerson) => person.name ?? person.email ?? person.subject;

/**
 * The sessions that have not ended, newest first: whose, since when, last active, until when.
 * Each can be ended; "Sign out everywhere" ends every session of its person (offboarding).
 * `you`: the id of the person viewing the page, whose own sessions say so.
 */
export function SessionsTable({
  sessions,
  you,
  onEnd,
  onEndEverywhere,
}: {
  sessions: PersonSessionRecord[];
  you: number | null;
  onEnd: (session: PersonSessionRecord) => void;
  onEndEverywhere: (person: SessionPerson) => void;
}) {
  const countOf = (personId: number) => sessions.filter((session) => session.person.id === personId).length;
  return (
    <div class="table-wrap">
      <table class="people-table" data-testid="sessions">
        <caption class="visually-hidden">Sessions</caption>
        <thead>
          <tr>
            <th scope="col">Person</th>
            <th scope="col">Signed in</th>
            <th scope="col" class="hide-narrow">Last active</th>
            <th scope="col" class="hide-narrow">Ends at the latest</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {sessions.map((session) => {
            const name = personName(session.person);
            return (
              <tr key={session.id}>
                <th scope="row">
                  {name}
                  {session.person.id === you && <span class="badge badge-you">you</span>}
                  {session.person.email !== null && session.person.email !== name && <div class="muted small wrap-long">{session.person.email}</div>}
                </th>
                <td data-label="Signed in">
                  <RelativeTime value={session.created_at} />
                </td>
                <td class="hide-narrow">
                  <RelativeTime value={session.seen_at} />
                </td>
                <td class="hide-narrow">
                  <LocalTime value={session.expires_at} />
                </td>
                <td class="actions">
                  <button type="button" class="danger small-button" onClick={() => onEnd(session)} aria-label={`End this session of ${name}…`}>
                    End session…
                  </button>
                  <button type="button" class="danger small-button" onClick={() => onEndEverywhere(session.person)} aria-label={`Sign ${name} out everywhere…`}>
                    Sign out everywhere{countOf(session.person.id) > 1 ? ` (${countOf(session.person.id)})` : ''}…
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
