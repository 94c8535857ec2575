import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import {
  addUser,
  countsAfterCellChange,
  insertLock,
  matchingLocks,
  matchingUsers,
  nextPermission,
  pageOfIndex,
  permissionCounts,
  placeOfField,
  PERMISSION_TEXT,
  PIN_HASH_EXPLAINED,
  removeLock,
  removeUser,
  setPermission,
  sliceOf,
  updateUser,
  type AclModel,
  type FieldPlace,
  type Permission,
  type PermissionCounts,
} from '../acl-matrix.ts';
import { aclChanges, describeAclChanges, mergeAclEdits, type AclVersion } from '../acl-merge.ts';
import { ApiError, createAcl, deleteAcl, etagOf, getAcl, getAclOkm, listOkms, replaceAcl, VersionConflict, type Acl, type AclBody } from '../api/client.ts';
import { isAbout } from '../api/error-message.ts';
import { AclDeleteDialog } from '../components/acl-delete-dialog.tsx';
import { AclMatrixTable } from '../components/acl-matrix-table.tsx';
import { AclSlicePager } from '../components/acl-slice-pager.tsx';
import { AclUserPanel } from '../components/acl-user-panel.tsx';
import { EntityHistory } from '../components/entity-history.tsx';
import { FieldError, invalidProps } from '../components/field-error.tsx';
import { PageHeader } from '../components/layout.tsx';
import { ErrorState, Loading } from '../components/states.tsx';
import { actingCustomer } from '../components/tenant-picker.tsx';
import { useFittingColumns } from '../components/use-fitting-columns.ts';
import { useLeaveGuard } from '../components/use-leave-guard.ts';
import { VersionConflictView } from '../components/version-conflict.tsx';
import { useResource } from '../components/use-resource.ts';
import { aclHref, href, okmHref } from '../paths.ts';
import { useSession, type Session } from '../session.ts';
import { CustomerInput } from '../components/customer-input.tsx';

const USERS_PER_PAGE = 25;
/** How long the confirmation of a save stays; the save bar keeps saying "All changes saved". */
const SAVED_SHOWN_MS = 6_000;
/** The ACL's own fields, whose messages are shown at their form control rather than in the matrix. */
const FORM_FIELDS = ['name', 'customer', 'okm_id', 'user_data'];


/** An ACL as a users × locks matrix, to read and edit; `/acls/new` creates one. */
export function AclEditorPage() {
  const session = useSession()!;
  const { params } = useRoute();
  const { query } = useLocation();
  const id = params.id!;
  const customerQuery = session.claims.customer === null ? query.customer || undefined : undefined;
  const loaded = useResource(
    () => (id === 'new' ? Promise.resolve(null) : Promise.all([getAcl(id, customerQuery), getAclOkm(id, customerQuery)])),
    [id, customerQuery],
  );
  const title = id === 'new' ? 'New ACL' : 'ACL';
  const back = <a href={href(`/acls${customerQuery === undefined ? '' : `?customer=${encodeURIComponent(customerQuery)}`}`)}>← ACLs</a>;
  if (loaded.error !== undefined) {
    return (
      <section>
        <PageHeader title={title}>{back}</PageHeader>
        <ErrorState error={loaded.error} retry={loaded.reload} />
      </section>
    );
  }
  if (loaded.data === undefined) {
    return (
      <section>
        <PageHeader title={title}>{back}</PageHeader>
        <Loading what="Loading the ACL" />
      </section>
    );
  }
  const [acl, link] = loaded.data ?? [null, null];
  return (
    <AclEditor
      key={id}
      session={session}
      acl={acl?.data ?? null}
      link={link?.data.okm_id ?? null}
      customer={acl?.data.customer ?? actingCustomer(session, query)}
      customerQuery={customerQuery}
      back={back}
    />
  );
}

interface EditorProps {
  session: Session;
  /** null: a new ACL. */
  acl: Acl | null;
  link: string | null;
  customer: string;
  customerQuery: string | undefined;
  back: ComponentChildren;
}

const userDataTextOf = (acl: Acl) => (acl.user_data === undefined ? '' : JSON.stringify(acl.user_data, null, 2));

/** An ACL as the merge compares it: its lists and the fields the editor sends. */
const versionOf = (acl: Acl, link: string | null): AclVersion => ({ model: { locks: acl.locks, users: acl.users }, fields: { name: acl.name ?? null, okm_id: link, user_data: userDataTextOf(acl) } });

/** A save that met a 412: the other writer's version, its ETag, and what each side changed. */
interface Conflict {
  theirs: AclVersion | null;
  etag: string | null;
  theirLines: string[];
  yourLines: string[];
}

function describePlace(model: AclModel, place: FieldPlace): string {
  const parts: string[] = [];
  if (place.userIndex !== null) parts.push(`user ${model.users[place.userIndex]?.user_id ?? `#${place.userIndex + 1}`}`);
  if (place.lockIndex !== null) parts.push(`lock ${model.locks[place.lockIndex] ?? `#${place.lockIndex + 1}`}`);
  return parts.join(' × ');
}

function AclEditor({ session, acl, link: savedLink, customer: initialCustomer, customerQuery, back }: EditorProps) {
  const { route } = useLocation();
  const { claims } = session;
  const isNew = acl === null;
  const readOnly = !claims.isAdmin && !claims.scopes.includes('acl:create');
  const canDelete = !isNew && (claims.isAdmin || claims.scopes.includes('acl:delete'));
  const mayListOkms = claims.isAdmin || claims.scopes.includes('okm:read');

  const [model, setModel] = useState<AclModel>(() => ({ locks: acl?.locks ?? [], users: acl?.users ?? [] }));
  const [customer, setCustomer] = useState(initialCustomer);
  const [link, setLink] = useState(savedLink);
  const [okmInput, setOkmInput] = useState(savedLink ?? '');
  const [savedName, setSavedName] = useState(acl?.name ?? null);
  const [nameText, setNameText] = useState(acl?.name ?? '');
  const [userDataText, setUserDataText] = useState(acl?.user_data === undefined ? '' : JSON.stringify(acl.user_data, null, 2));
  const [error, setError] = useState<unknown>(undefined);
  const [status, setStatus] = useState<'unchanged' | 'changed' | 'saving' | 'saved'>('unchanged');
  const [userFilter, setUserFilter] = useState('');
  const [lockFilter, setLockFilter] = useState('');
  const [userPage, setUserPage] = useState(1);
  const [lockPage, setLockPage] = useState(1);
  const [selectedUser, setSelectedUser] = useState<number | null>(null);
  const [selectedLock, setSelectedLock] = useState<number | null>(null);
  const [newUserId, setNewUserId] = useState('');
  const [newPin, setNewPin] = useState('');
  const [newLock, setNewLock] = useState('');
  const [addProblem, setAddProblem] = useState<{ field: 'user' | 'lock'; message: string } | null>(null);
  const [confirmingDelete, setConfirmingDelete] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [savedShown, setSavedShown] = useState(false);
  const [saves, setSaves] = useState(0);
  // The version the edits are made on: its ETag goes with every save (If-Match), so that a save
  // never overwrites what another writer saved meanwhile; a 412 opens the conflict view instead.
  const [etag, setEtag] = useState<string | null>(() => etagOf(acl));
  const [base, setBase] = useState<AclVersion | null>(() => (acl === null ? null : versionOf(acl, savedLink)));
  const [conflict, setConflict] = useState<Conflict | null>(null);
  const [mergeNotes, setMergeNotes] = useState<string[] | null>(null);
  useEffect(() => {
    if (!savedShown) return undefined;
    const timer = setTimeout(() => setSavedShown(false), SAVED_SHOWN_MS);
    return () => clearTimeout(timer);
  }, [savedShown]);
  useLeaveGuard((status === 'changed' || status === 'saving') && !deleting, isNew ? 'the new ACL' : 'this ACL');

  const okms = useResource(
    () => (mayListOkms && customer !== '' ? listOkms({ customer: claims.isAdmin ? customer : undefined, limit: 100 }) : Promise.resolve(undefined)),
    [customer],
  );

  const matrixCard = useRef<HTMLDivElement>(null);
  const perPage = useFittingColumns(matrixCard);
  const userIndices = useMemo(() => matchingUsers(model, userFilter), [model.users, userFilter]);
  const lockIndices = useMemo(() => matchingLocks(model, lockFilter), [model.locks, lockFilter]);
  const rows = sliceOf(userIndices, userPage, USERS_PER_PAGE);
  const columns = sliceOf(lockIndices, lockPage, perPage);
  const [counts, setCounts] = useState(() => permissionCounts(model));

  /** `counted`: the counts after the edit when the caller knows them, else they are counted again. */
  const edit = (next: AclModel, counted?: PermissionCounts) => {
    setModel(next);
    setCounts(counted ?? permissionCounts(next));
    setStatus('changed');
  };

  const field = error instanceof ApiError ? error.field : null;
  const atForm = FORM_FIELDS.some((control) => isAbout(field, control));
  const place = atForm ? null : placeOfField(field);
  const matrixPlace = place !== null && (place.userIndex !== null || place.lockIndex !== null) ? place : null;
  const shownInPanel = matrixPlace !== null && matrixPlace.userIndex !== null && matrixPlace.lockIndex === null && matrixPlace.member !== null && matrixPlace.member !== 'permissions';

  /** Brings the user and lock an API message names into view. */
  function reveal(where: FieldPlace | null) {
    if (where === null) return;
    if (where.userIndex !== null && where.userIndex < model.users.length) {
      setUserFilter('');
      setUserPage(pageOfIndex(model.users.map((_, index) => index), where.userIndex, USERS_PER_PAGE) ?? 1);
      setSelectedUser(where.userIndex);
    }
    if (where.lockIndex !== null && where.lockIndex < model.locks.length) {
      setLockFilter('');
      setLockPage(Math.floor(where.lockIndex / perPage) + 1);
      if (where.userIndex === null) setSelectedLock(where.lockIndex);
    }
  }

  async function save() {
    let userData: Record<string, unknown> | undefined;
    if (userDataText.trim() !== '') {
      try {
        userData = JSON.parse(userDataText) as Record<string, unknown>;
      } catch {
        setError(new ApiError(400, 'BAD_REQUEST', 'is not JSON: write a JSON object, or leave it empty', 'user_data'));
        return;
      }
    }
    const requestedLink = okmInput.trim() === '' ? null : okmInput.trim();
    const requestedName = nameText.trim() === '' ? null : nameText.trim();
    const body: AclBody = {
      // An emptied name is removed (null); a name never given is simply not sent.
      ...(requestedName === null ? (savedName === null ? {} : { name: null }) : { name: requestedName }),
      customer: customer.trim(),
      users: model.users,
      locks: model.locks,
      ...(userData === undefined ? {} : { user_data: userData }),
      ...(requestedLink === link ? {} : { okm_id: requestedLink }),
    };
    setStatus('saving');
    setError(undefined);
    setMergeNotes(null);
    try {
      const saved = isNew ? await createAcl(body) : await replaceAcl(acl.id, body, etag);
      setLink(requestedLink);
      setSavedName(requestedName);
      setEtag(etagOf(saved.data));
      setBase(versionOf(saved.data, requestedLink));
      setStatus('saved');
      setSavedShown(true);
      setSaves((count) => count + 1);
      if (isNew) route(aclHref(saved.data.id, claims.customer === null ? body.customer : undefined));
    } catch (failure) {
      setStatus('changed');
      if (failure instanceof VersionConflict) {
        await openConflict(failure, { model, fields: { name: requestedName, okm_id: requestedLink, user_data: userDataText.trim() === '' ? '' : userDataText } });
        return;
      }
      setError(failure);
      if (failure instanceof ApiError && !FORM_FIELDS.some((control) => isAbout(failure.field, control))) reveal(placeOfField(failure.field));
    }
  }

  async function remove() {
    setDeleting(true);
    try {
      await deleteAcl(acl!.id, customerQuery, etag);
      route(href(`/acls${customerQuery === undefined ? '' : `?customer=${encodeURIComponent(customerQuery)}`}`));
    } catch (failure) {
      setDeleting(false);
      setConfirmingDelete(false);
      if (failure instanceof VersionConflict) await openConflict(failure, null);
      else setError(failure);
    }
  }

  /** The other writer's version (the 412's), with its link, read now: the ACL itself never shows okm_id. */
  async function openConflict(failure: VersionConflict, yours: AclVersion | null) {
    const theirAcl = failure.current as Acl | null;
    let theirLink: string | null = null;
    if (theirAcl !== null) {
      try {
        theirLink = (await getAclOkm(theirAcl.id, customerQuery)).data.okm_id;
      } catch {
        theirLink = link;
      }
    }
    const theirs = theirAcl === null ? null : versionOf(theirAcl, theirLink);
    setConflict({
      theirs,
      etag: failure.etag,
      theirLines: theirs === null ? ['Deleted the ACL'] : base === null ? [] : describeAclChanges(aclChanges(base, theirs)),
      yourLines: yours === null ? ['Delete the ACL'] : base === null ? [] : describeAclChanges(aclChanges(base, yours)),
    });
  }

  /** Shows `version` as saved: the editor starts again from it. */
  function startFrom(version: AclVersion, versionEtag: string | null) {
    setModel(version.model);
    setCounts(permissionCounts(version.model));
    setNameText(version.fields.name ?? '');
    setSavedName(version.fields.name);
    setLink(version.fields.okm_id);
    setOkmInput(version.fields.okm_id ?? '');
    setUserDataText(version.fields.user_data);
    setBase(version);
    setEtag(versionEtag);
    setError(undefined);
    setConflict(null);
  }

  function reloadTheirs() {
    if (conflict?.theirs == null) {
      route(href(`/acls${customerQuery === undefined ? '' : `?customer=${encodeURIComponent(customerQuery)}`}`));
      return;
    }
    startFrom(conflict.theirs, conflict.etag);
    setMergeNotes(null);
    setStatus('unchanged');
  }

  /** Your edits re-applied on top of their version, unsaved: to review, then save (with their ETag). */
  function mergeOntoTheirs() {
    if (conflict?.theirs == null || base === null) return;
    const yours: AclVersion = { model, fields: { name: nameText.trim() === '' ? null : nameText.trim(), okm_id: okmInput.trim() === '' ? null : okmInput.trim(), user_data: userDataText.trim() === '' ? '' : userDataText } };
    const merged = mergeAclEdits(base, yours, conflict.theirs);
    const theirs = conflict.theirs;
    startFrom(theirs, conflict.etag);
    setModel(merged.model);
    setCounts(permissionCounts(merged.model));
    setNameText(merged.fields.name ?? '');
    setOkmInput(merged.fields.okm_id ?? '');
    setUserDataText(merged.fields.user_data);
    setMergeNotes(merged.dropped.map((place) => `Not applied: your edit of ${place}.`));
    setStatus('changed');
  }

  const addUserSubmit = (event: Event) => {
    event.preventDefault();
    const userId = newUserId.trim() === '' ? Number.NaN : Number(newUserId);
    if (!Number.isInteger(userId)) {
      setAddProblem({ field: 'user', message: 'Enter the vendor-assigned user id (a whole number).' });
      return;
    }
    const next = addUser(model, userId, newPin.trim());
    edit(next);
    setAddProblem(null);
    setNewUserId('');
    setNewPin('');
    setUserFilter('');
    setUserPage(Math.ceil(next.users.length / USERS_PER_PAGE));
    setSelectedUser(next.users.length - 1);
  };

  const addLockSubmit = (event: Event) => {
    event.preventDefault();
    const serial = newLock.trim();
    if (serial === '') {
      setAddProblem({ field: 'lock', message: 'Enter the lock\'s serial number.' });
      return;
    }
    const insertion = insertLock(model, serial);
    if (insertion.added) edit(insertion.model);
    setAddProblem(insertion.added ? null : { field: 'lock', message: `Lock ${serial} is in the list already.` });
    setNewLock('');
    setLockFilter('');
    setLockPage(Math.floor(insertion.index / perPage) + 1);
    setSelectedLock(insertion.index);
  };

  const toggle = (userIndex: number, lockIndex: number) => {
    const user = model.users[userIndex]!;
    const value = nextPermission(user.permissions[lockIndex]!);
    edit(setPermission(model, userIndex, lockIndex, value), countsAfterCellChange(counts, user, lockIndex, value));
  };

  const lockUsers = useMemo(() => {
    if (selectedLock === null) return null;
    let access = 0;
    let dual = 0;
    for (const user of model.users) {
      const value = user.permissions[selectedLock];
      if (value === 1) access++;
      else if (value === 17) dual++;
    }
    return { access, dual };
  }, [model, selectedLock]);

  const okmOptions = okms.data?.data ?? [];

  return (
    <section class="acl-editor">
      <PageHeader title={isNew ? 'New ACL' : savedName !== null ? `ACL ${savedName}` : <span>ACL <span class="mono acl-id">{acl.id}</span></span>}>
        {back}
        {canDelete && (
          <button type="button" class="danger" onClick={() => setConfirmingDelete(true)}>
            Delete ACL
          </button>
        )}
      </PageHeader>

      {conflict !== null && (
        <VersionConflictView
          what="ACL"
          theirs={conflict.theirLines}
          yours={conflict.yourLines}
          {...(conflict.theirs !== null && conflict.yourLines[0] !== 'Delete the ACL' ? { onMerge: mergeOntoTheirs } : {})}
          onReload={reloadTheirs}
        />
      )}
      {mergeNotes !== null && status === 'changed' && (
        <div class="notice notice-warning" role="status" data-testid="merge-notice">
          <p>Merged: your changes are applied on top of the other writer's version. Nothing is saved yet: review, then Save ACL.</p>
          {mergeNotes.map((note) => (
            <p key={note}>{note}</p>
          ))}
        </div>
      )}
      {status === 'saved' && savedShown && (
        <p class="notice notice-ok" role="status">
          Saved.{link !== null && ` OKM ${link} gets the new lists on its next poll.`}
        </p>
      )}
      {error !== undefined && (field === null || (place !== null && matrixPlace === null && !atForm)) && (
        <div class="state state-error" role="alert">
          <p>
            <strong>{error instanceof ApiError && error.status === 400 ? 'Not saved:' : 'Failed:'}</strong> {field !== null && <code>{field}</code>}{' '}
            {error instanceof Error ? error.message : String(error)}
          </p>
        </div>
      )}

      <div class="card acl-settings">
        <div class="field">
          <label for="acl-name">Name</label>
          <input
            id="acl-name"
            value={nameText}
            maxLength={100}
            autocomplete="off"
            placeholder="e.g. Store 412"
            disabled={readOnly}
            {...invalidProps(error, 'name')}
            aria-describedby={isAbout(field, 'name') ? 'error-name' : 'acl-name-hint'}
            onInput={(event) => {
              setNameText(event.currentTarget.value);
              setStatus('changed');
            }}
          />
          <p class="field-hint" id="acl-name-hint">
            {isNew || acl === null ? "A label for people, such as the site's name: the ACL list shows it and finds the ACL by it." : <>A label for people: the list shows it and finds the ACL by it. Id <span class="mono">{acl.id}</span></>}
          </p>
          <FieldError error={error} control="name" />
        </div>
        <div class="field">
          <label for="acl-customer">Customer</label>
          {isNew && claims.customer === null ? (
            <CustomerInput id="acl-customer" value={customer} {...invalidProps(error, 'customer')} onValue={setCustomer} />
          ) : (
            <input id="acl-customer" value={customer} readOnly class="readonly" />
          )}
          <FieldError error={error} control="customer" />
        </div>
        <div class="field">
          <label for="acl-okm">Linked OKM (serial number)</label>
          <input
            id="acl-okm"
            value={okmInput}
            list="acl-okm-options"
            autocomplete="off"
            spellcheck={false}
            placeholder="none"
            disabled={readOnly}
            {...invalidProps(error, 'okm_id')}
            aria-describedby={isAbout(field, 'okm_id') ? 'error-okm_id' : 'acl-okm-hint'}
            onInput={(event) => {
              setOkmInput(event.currentTarget.value);
              setStatus('changed');
            }}
          />
          <datalist id="acl-okm-options">
            {okmOptions.map((okm) => (
              <option key={okm.serial_number} value={okm.serial_number} />
            ))}
          </datalist>
          <p class="field-hint" id="acl-okm-hint">
            {link === null ? 'Not linked.' : <>Linked to <a href={okmHref(link)}>{link}</a>.</>} The linked OKM's polls send this ACL's locks and users; empty the field
            to unlink (the OKM then gets a delete-assets message).
          </p>
          <FieldError error={error} control="okm_id" />
        </div>
        <details class="field acl-user-data" open={isAbout(field, 'user_data') || undefined}>
          <summary>User data (JSON, optional)</summary>
          <label for="acl-user-data" class="visually-hidden">
            User data
          </label>
          <textarea
            id="acl-user-data"
            rows={4}
            value={userDataText}
            disabled={readOnly}
            spellcheck={false}
            {...invalidProps(error, 'user_data')}
            onInput={(event) => {
              setUserDataText(event.currentTarget.value);
              setStatus('changed');
            }}
          />
          <FieldError error={error} control="user_data" />
        </details>
      </div>

      <div class="acl-body">
        <div class="card acl-matrix-card" ref={matrixCard}>
          <div class="acl-summary">
            <h2>Who may open what</h2>
            <p class="muted small" data-testid="acl-counts">
              {model.users.length.toLocaleString()} users × {model.locks.length.toLocaleString()} locks · {counts.usersWithAccess.toLocaleString()} users may open a
              lock · {counts.dual.toLocaleString()} dual-authentication cells
            </p>
            <ul class="acl-legend" aria-label="Legend">
              {([0, 1, 17] as Permission[]).map((value) => (
                <li key={value}>
                  <span class={`acl-swatch acl-cell-${value}`} aria-hidden="true">
                    {PERMISSION_TEXT[value].symbol}
                  </span>
                  {value} {PERMISSION_TEXT[value].label}
                </li>
              ))}
            </ul>
          </div>

          <div class="acl-tools">
            <div class="acl-find">
              <div class="field">
                <label for="acl-find-user">Find user (id begins with)</label>
                <input
                  id="acl-find-user"
                  inputMode="numeric"
                  value={userFilter}
                  onInput={(event) => {
                    setUserFilter(event.currentTarget.value);
                    setUserPage(1);
                  }}
                />
              </div>
              <div class="field">
                <label for="acl-find-lock">Find lock (serial contains)</label>
                <input
                  id="acl-find-lock"
                  value={lockFilter}
                  onInput={(event) => {
                    setLockFilter(event.currentTarget.value);
                    setLockPage(1);
                  }}
                />
              </div>
            </div>
            {!readOnly && (
              <>
                <form class="acl-add" onSubmit={addUserSubmit} aria-label="Add a user">
                  <div class="field">
                    <label for="acl-new-user">New user id</label>
                    <input
                      id="acl-new-user"
                      inputMode="numeric"
                      value={newUserId}
                      aria-invalid={addProblem?.field === 'user' || undefined}
                      onInput={(event) => setNewUserId(event.currentTarget.value)}
                    />
                  </div>
                  <div class="field">
                    <label for="acl-new-pin">PIN hash</label>
                    <input
                      id="acl-new-pin"
                      value={newPin}
                      autocomplete="off"
                      spellcheck={false}
                      aria-describedby="acl-new-pin-hint"
                      onInput={(event) => setNewPin(event.currentTarget.value)}
                    />
                  </div>
                  <button type="submit">Add user</button>
                </form>
                <p class="field-hint acl-pin-hint" id="acl-new-pin-hint">
                  {PIN_HASH_EXPLAINED}
                </p>
                <form class="acl-add" onSubmit={addLockSubmit} aria-label="Add a lock">
                  <div class="field">
                    <label for="acl-new-lock">New lock serial</label>
                    <input
                      id="acl-new-lock"
                      value={newLock}
                      spellcheck={false}
                      aria-invalid={addProblem?.field === 'lock' || undefined}
                      onInput={(event) => setNewLock(event.currentTarget.value)}
                    />
                  </div>
                  <button type="submit">Add lock</button>
                </form>
              </>
            )}
          </div>
          {addProblem !== null && (
            <p class="field-error" role="alert">
              {addProblem.message}
            </p>
          )}

          <div class="acl-pagers">
            <AclSlicePager slice={rows} noun="users" onPage={setUserPage} />
            <AclSlicePager slice={columns} noun="locks" onPage={setLockPage} />
          </div>
          {matrixPlace !== null && error instanceof ApiError && (
            <p class="field-error acl-problem-message" id="acl-problem" role={shownInPanel ? undefined : 'alert'}>
              <strong>{describePlace(model, matrixPlace)}</strong> (<code>{field}</code>): {error.message}
            </p>
          )}
          {model.users.length === 0 || model.locks.length === 0 ? (
            <p class="state state-empty">
              {model.users.length === 0 && model.locks.length === 0
                ? 'No users and no locks yet: add them above.'
                : model.users.length === 0
                  ? 'No users yet: add one above.'
                  : 'No locks yet: add one above.'}
            </p>
          ) : rows.total === 0 || columns.total === 0 ? (
            <p class="state state-empty">No {rows.total === 0 ? 'user' : 'lock'} matches the filter.</p>
          ) : (
            <AclMatrixTable
              model={model}
              rows={rows}
              columns={columns}
              selectedUser={selectedUser}
              selectedLock={selectedLock}
              problem={matrixPlace === null ? null : { place: matrixPlace, messageId: 'acl-problem' }}
              readOnly={readOnly}
              onToggle={toggle}
              onSelectUser={(index) => setSelectedUser(index === selectedUser ? null : index)}
              onSelectLock={(index) => setSelectedLock(index === selectedLock ? null : index)}
            />
          )}
        </div>

        {(selectedUser !== null && model.users[selectedUser]) || (selectedLock !== null && model.locks[selectedLock] !== undefined) ? (
          <div class="acl-side">
            {selectedUser !== null && model.users[selectedUser] && (
              <AclUserPanel
                user={model.users[selectedUser]}
                index={selectedUser}
                error={error}
                readOnly={readOnly}
                onChange={(change) => edit(updateUser(model, selectedUser, change))}
                onRemove={() => {
                  edit(removeUser(model, selectedUser));
                  setSelectedUser(null);
                }}
                onClose={() => setSelectedUser(null)}
              />
            )}
            {selectedLock !== null && model.locks[selectedLock] !== undefined && lockUsers !== null && (
              <section class="card acl-panel" aria-labelledby="acl-lock-title">
                <div class="acl-panel-head">
                  <h2 id="acl-lock-title">
                    Lock <span class="mono">{model.locks[selectedLock]}</span>
                  </h2>
                  <button type="button" onClick={() => setSelectedLock(null)} aria-label="Close the lock's details">
                    ×
                  </button>
                </div>
                <p class="muted small">locks[{selectedLock}]</p>
                <p>
                  {lockUsers.access.toLocaleString()} users may open it alone, {lockUsers.dual.toLocaleString()} with dual authentication.
                </p>
                {!readOnly && (
                  <button
                    type="button"
                    class="danger"
                    onClick={() => {
                      edit(removeLock(model, selectedLock));
                      setSelectedLock(null);
                    }}
                  >
                    Remove lock {model.locks[selectedLock]}
                  </button>
                )}
              </section>
            )}
          </div>
        ) : null}
      </div>

      {acl !== null && <EntityHistory type="acl" id={acl.id} version={saves} />}

      {!readOnly && (
        <div class="acl-savebar" role="region" aria-label="Save">
          <span class="muted">
            {status === 'changed' ? 'Unsaved changes' : status === 'saving' ? 'Saving…' : status === 'saved' ? 'All changes saved' : 'No changes'}
          </span>
          <button type="button" class="primary" disabled={status === 'saving' || conflict !== null || (status !== 'changed' && !isNew)} onClick={() => void save()}>
            {isNew ? 'Create ACL' : 'Save ACL'}
          </button>
        </div>
      )}

      {confirmingDelete && acl !== null && (
        <AclDeleteDialog
          aclId={acl.id}
          linkedOkm={link}
          users={model.users.length}
          deleting={deleting}
          onConfirm={() => void remove()}
          onCancel={() => setConfirmingDelete(false)}
        />
      )}
    </section>
  );
}
