import { AUTH_TIMES, PIN_HASH_EXPLAINED, SOUNDER_VOLUMES, type AclUserModel } from '../acl-matrix.ts';
import { FieldError, invalidProps } from './field-error.tsx';

type UserChange = Partial<Omit<AclUserModel, 'permissions'>>;

/** A number input's value: NaN when it is not a number, which the API names in its message. */
const numberOf = (input: HTMLInputElement) => (input.value.trim() === '' ? Number.NaN : Number(input.value));

/** One user's settings (all but the permissions, which the matrix edits), with the API's message at each field. */
export function AclUserPanel({
  user,
  index,
  error,
  readOnly,
  onChange,
  onRemove,
  onClose,
}: {
  user: AclUserModel;
  index: number;
  error: unknown;
  readOnly: boolean;
  onChange: (change: UserChange) => void;
  onRemove: () => void;
  onClose: () => void;
}) {
  const control = (member: string) => `users[${index}].${member}`;
  const id = (member: string) => `acl-user-${member}`;
  const access = user.permissions.filter((value) => value !== 0).length;
  return (
    <section class="card acl-panel" aria-labelledby="acl-user-title">
      <div class="acl-panel-head">
        <h2 id="acl-user-title">User {Number.isFinite(user.user_id) ? user.user_id : '(no id)'}</h2>
        <button type="button" onClick={onClose} aria-label="Close the user's settings">
          ×
        </button>
      </div>
      <p class="muted small">
        users[{index}] · may open {access.toLocaleString()} of {user.permissions.length.toLocaleString()} locks
      </p>
      <fieldset disabled={readOnly} class="acl-user-fields">
        <div class="field">
          <label for={id('user_id')}>User id</label>
          <input
            id={id('user_id')}
            type="number"
            inputMode="numeric"
            value={Number.isFinite(user.user_id) ? user.user_id : ''}
            {...invalidProps(error, control('user_id'))}
            onInput={(event) => onChange({ user_id: numberOf(event.currentTarget) })}
          />
          <p class="field-hint">0–999 999 999, unique in the ACL</p>
          <FieldError error={error} control={control('user_id')} />
        </div>
        <div class="field">
          <label for={id('pin_hash')}>PIN hash</label>
          <input
            id={id('pin_hash')}
            value={user.pin_hash}
            autocomplete="off"
            spellcheck={false}
            {...invalidProps(error, control('pin_hash'))}
            onInput={(event) => onChange({ pin_hash: event.currentTarget.value })}
          />
          <details class="field-hint">
            <summary>What is this?</summary>
            {PIN_HASH_EXPLAINED}
          </details>
          <FieldError error={error} control={control('pin_hash')} />
        </div>
        <div class="field">
          <label for={id('auth_time')}>Key valid for (hours)</label>
          <select
            id={id('auth_time')}
            value={String(user.auth_time)}
            {...invalidProps(error, control('auth_time'))}
            onChange={(event) => onChange({ auth_time: Number(event.currentTarget.value) as AclUserModel['auth_time'] })}
          >
            {AUTH_TIMES.map((hours) => (
              <option key={hours} value={String(hours)}>
                {hours}
              </option>
            ))}
          </select>
          <FieldError error={error} control={control('auth_time')} />
        </div>
        <div class="field">
          <label class="checkbox">
            <input type="checkbox" checked={user.sounder} onChange={(event) => onChange({ sounder: event.currentTarget.checked })} />
            Restricted Mode (sounder)
          </label>
          <FieldError error={error} control={control('sounder')} />
        </div>
        <div class="acl-user-sounder">
          <div class="field">
            <label for={id('sounder_delay')}>Sounder delay (s)</label>
            <input
              id={id('sounder_delay')}
              type="number"
              min={0}
              max={120}
              value={Number.isFinite(user.sounder_delay) ? user.sounder_delay : ''}
              {...invalidProps(error, control('sounder_delay'))}
              onInput={(event) => onChange({ sounder_delay: numberOf(event.currentTarget) })}
            />
            <FieldError error={error} control={control('sounder_delay')} />
          </div>
          <div class="field">
            <label for={id('sounder_duration')}>Sounder duration (s)</label>
            <input
              id={id('sounder_duration')}
              type="number"
              min={0}
              max={255}
              value={Number.isFinite(user.sounder_duration) ? user.sounder_duration : ''}
              {...invalidProps(error, control('sounder_duration'))}
              onInput={(event) => onChange({ sounder_duration: numberOf(event.currentTarget) })}
            />
            <FieldError error={error} control={control('sounder_duration')} />
          </div>
          <div class="field">
            <label for={id('sounder_volume')}>Sounder volume</label>
            <select
              id={id('sounder_volume')}
              value={String(user.sounder_volume)}
              {...invalidProps(error, control('sounder_volume'))}
              onChange={(event) => onChange({ sounder_volume: Number(event.currentTarget.value) as AclUserModel['sounder_volume'] })}
            >
              {SOUNDER_VOLUMES.map(({ value, label }) => (
                <option key={value} value={String(value)}>
                  {label}
                </option>
              ))}
            </select>
            <FieldError error={error} control={control('sounder_volume')} />
          </div>
        </div>
        <button type="button" class="danger" onClick={onRemove}>
          Remove user {Number.isFinite(user.user_id) ? user.user_id : ''}
        </button>
      </fieldset>
    </section>
  );
}
