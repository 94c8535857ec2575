import { useRoute } from 'preact-iso';
import { listAuditLog, type AuditEntry } from '../api/client.ts';
import { actorText, mayReadAudit } from '../audit-entry.ts';
import { EntityHistory } from '../components/entity-history.tsx';
import { PageHeader } from '../components/layout.tsx';
import { LocalTime } from '../components/relative-time.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { useResource } from '../components/use-resource.ts';
import { href } from '../paths.ts';
import { useSession } from '../session.ts';

/** What a lock's dlock.enrolled entry holds (src/dlock/locks.ts): its public data and its key certificate's validity, never its key. */
interface EnrolledLock {
  type?: string;
  customer?: string;
  certificate?: { name?: string; serial?: string };
  key_certificate?: { format?: string; valid_from?: string; valid_until?: string; fingerprint?: string };
}

/**
 * One enrolled DLock: what it was enrolled with and its history, both read from the audit trail
 * (the lock list has no single-lock read, and neither shows key material).
 */
export function LockDetailPage() {
  const serial = useRoute().params.serial ?? '';
  const session = useSession()!;
  const allowed = mayReadAudit(session.claims);
  return (
    <section>
      <p class="breadcrumb">
        <a href={href('/locks')}>Locks</a> /
      </p>
      <PageHeader
        title={
          <>
            Lock <span class="mono">{serial}</span>
          </>
        }
      />
      {allowed ? (
        <>
          <Enrolment serial={serial} />
          <EntityHistory type="dlock" id={serial} />
        </>
      ) : (
        <Empty>A lock's page shows its enrolment and its history from the audit trail, which needs the audit:read scope (the auditor role) or admin.</Empty>
      )}
    </section>
  );
}

/** The lock's latest enrolment, and whether it was deleted since. */
function Enrolment({ serial }: { serial: string }) {
  const latest = useResource(() => listAuditLog({ entity_type: 'dlock', entity_id: serial, limit: 1 }), [serial]);
  const enrolment = useResource(() => listAuditLog({ entity_type: 'dlock', entity_id: serial, action: 'dlock.enrolled', limit: 1 }), [serial]);
  if (enrolment.error !== undefined) return <ErrorState error={enrolment.error} retry={enrolment.reload} />;
  if (enrolment.data === undefined) return <Loading what="Loading the lock" />;
  const entry: AuditEntry | undefined = enrolment.data.data[0];
  if (entry === undefined) return <Empty>No enrolment of a lock {serial} is recorded.</Empty>;
  const lock = (entry.after ?? {}) as EnrolledLock;
  const deleted = latest.data?.data[0]?.action === 'dlock.deleted' ? latest.data.data[0] : undefined;
  return (
    <>
      {deleted !== undefined && (
        <p class="notice notice-warning" data-testid="lock-deleted">
          Deleted <LocalTime value={deleted.time} /> by {actorText(deleted.actor)}: its serial number is free to enrol again.
        </p>
      )}
      <dl class="kv card section facts" data-testid="lock-facts">
        <dt>Lock type</dt>
        <dd>{lock.type ?? '—'}</dd>
        <dt>Customer</dt>
        <dd>{lock.customer ?? entry.customer ?? '—'}</dd>
        <dt>Enrolled</dt>
        <dd>
          <LocalTime value={entry.time} /> <span class="muted">by {actorText(entry.actor)}</span>
        </dd>
        <dt>Certificate</dt>
        <dd>
          {lock.certificate?.name ?? '—'} {lock.certificate?.serial !== undefined && <span class="muted mono">serial {lock.certificate.serial}</span>}
        </dd>
        <dt>Key certificate</dt>
        <dd>
          {lock.key_certificate?.format ?? '—'}, valid <LocalTime value={lock.key_certificate?.valid_from} /> to <LocalTime value={lock.key_certificate?.valid_until} />
        </dd>
        <dt>Fingerprint</dt>
        <dd class="mono break">{lock.key_certificate?.fingerprint ?? '—'}</dd>
      </dl>
    </>
  );
}
