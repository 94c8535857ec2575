/**
 * What a form shows instead of overwriting when its save meets a 412: another writer changed
 * the resource since the form loaded it (the save named that version in If-Match). Both sides'
 * changes, and the two ways on: merge (where the form can apply this person's changes on top of
 * the other writer's version, to review and save again) or reload the other writer's version.
 */
export interface VersionConflictProps {
  /** "ACL", "OKM configuration", … */
  what: string;
  /** What the other writer changed, relative to the version this form loaded; empty: unknown. */
  theirs: string[];
  /** What this person changed and has not saved. */
  yours: string[];
  /** Said under the choices: what a merge would leave out, say. */
  notes?: string[];
  /** Absent: no merge is offered (the form can only reload). */
  onMerge?: () => void;
  onReload: () => void;
}

export function VersionConflictView({ what, theirs, yours, notes = [], onMerge, onReload }: VersionConflictProps) {
  return (
    <section class="card version-conflict" role="alert" aria-labelledby="version-conflict-title" data-testid="version-conflict">
      <h2 id="version-conflict-title">Someone else changed this {what} while you were editing</h2>
      <p>Nothing of yours was saved, and nothing of theirs was overwritten. Choose how to go on.</p>
      <div class="version-conflict-sides">
        <div class="version-conflict-side">
          <h3>Their changes (saved)</h3>
          {theirs.length === 0 ? <p class="muted">Changes this page cannot describe.</p> : <ul>{theirs.map((line) => <li key={line}>{line}</li>)}</ul>}
        </div>
        <div class="version-conflict-side">
          <h3>Your changes (not saved)</h3>
          {yours.length === 0 ? <p class="muted">None.</p> : <ul>{yours.map((line) => <li key={line}>{line}</li>)}</ul>}
        </div>
      </div>
      {notes.map((note) => (
        <p class="notice notice-warning" key={note}>
          {note}
        </p>
      ))}
      <div class="form-actions">
        {onMerge && (
          <button type="button" class="primary" onClick={onMerge}>
            Merge: apply my changes on top of theirs
          </button>
        )}
        <button type="button" onClick={onReload}>
          Reload theirs (drop my changes)
        </button>
      </div>
      {onMerge && <p class="field-hint">A merge saves nothing yet: review the result, then save it.</p>}
    </section>
  );
}
