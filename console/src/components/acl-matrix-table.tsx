import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { PERMISSION_TEXT, type AclModel, type FieldPlace, type Slice } from '../acl-matrix.ts';

export interface AclMatrixProps {
  model: AclModel;
  rows: Slice;
  columns: Slice;
  selectedUser: number | null;
  selectedLock: number | null;
  /** Where the API's last message points, and the id of that message for aria-describedby. */
  problem: { place: FieldPlace; messageId: string } | null;
  readOnly: boolean;
  onToggle: (userIndex: number, lockIndex: number) => void;
  onSelectUser: (userIndex: number) => void;
  onSelectLock: (lockIndex: number) => void;
}

const MOVES: Record<string, [number, number]> = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

/**
 * One page of an ACL as a users × locks table: only the rows and columns of the page are
 * rendered, however large the ACL. A cell shows 0, 1 or 17 as a symbol (and says it to a
 * screen reader); a click or Space cycles it. The cells are one tab stop, moved through with
 * the arrow keys (Home/End: first/last of the row).
 */
export function AclMatrixTable(props: AclMatrixProps) {
  const { model, rows, columns, problem } = props;
  const [focus, setFocus] = useState({ row: 0, column: 0 });
  const body = useRef<HTMLTableSectionElement>(null);
  const moved = useRef(false);
  const row = Math.min(focus.row, Math.max(0, rows.shown.length - 1));
  const column = Math.min(focus.column, Math.max(0, columns.shown.length - 1));

  // Focus follows an arrow key in the same task as the render, not a frame later (as useEffect
  // would): a Space typed right after the arrow must land on the cell moved to.
  useLayoutEffect(() => {
    if (!moved.current) return;
    moved.current = false;
    body.current?.querySelector<HTMLButtonElement>(`[data-cell="${row}:${column}"]`)?.focus();
  }, [row, column]);

  const onKeyDown = (event: KeyboardEvent) => {
    const move = MOVES[event.key];
    let next: { row: number; column: number } | null = null;
    if (move) next = { row: row + move[0], column: column + move[1] };
    else if (event.key === 'Home') next = { row, column: 0 };
    else if (event.key === 'End') next = { row, column: columns.shown.length - 1 };
    if (next === null) return;
    event.preventDefault();
    moved.current = true;
    setFocus({ row: Math.min(Math.max(0, next.row), rows.shown.length - 1), column: Math.min(Math.max(0, next.column), columns.shown.length - 1) });
  };

  const isProblem = (userIndex: number | null, lockIndex: number | null) =>
    problem !== null && problem.place.userIndex === userIndex && problem.place.lockIndex === lockIndex;

  return (
    <div class="table-wrap acl-matrix-wrap">
      <table class="acl-matrix" aria-label="Who may open which lock" aria-rowcount={rows.total + 1} aria-colcount={columns.total + 1}>
        <thead>
          <tr>
            <th scope="col" class="acl-corner">
              User ↓ / Lock →
            </th>
            {columns.shown.map((lockIndex, position) => {
              const marked = isProblem(null, lockIndex);
              return (
                <th
                  key={lockIndex}
                  scope="col"
                  aria-colindex={columns.first + position + 1}
                  class={`acl-lock${props.selectedLock === lockIndex ? ' selected' : ''}${marked ? ' acl-problem' : ''}`}
                >
                  <button
                    type="button"
                    class="acl-lock-button"
                    title={`Lock ${model.locks[lockIndex]}`}
                    aria-pressed={props.selectedLock === lockIndex}
                    aria-describedby={marked ? problem!.messageId : undefined}
                    onClick={() => props.onSelectLock(lockIndex)}
                  >
                    <span>{model.locks[lockIndex]}</span>
                  </button>
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody ref={body} onKeyDown={onKeyDown}>
          {rows.shown.map((userIndex, rowPosition) => {
            const user = model.users[userIndex]!;
            const rowMarked = problem !== null && problem.place.userIndex === userIndex && problem.place.lockIndex === null;
            return (
              <tr key={userIndex} aria-rowindex={rows.first + rowPosition + 1} class={props.selectedUser === userIndex ? 'selected' : undefined}>
                <th scope="row" class={rowMarked ? 'acl-problem' : undefined}>
                  <button
                    type="button"
                    class="acl-user-button"
                    aria-pressed={props.selectedUser === userIndex}
                    aria-describedby={rowMarked ? problem!.messageId : undefined}
                    onClick={() => props.onSelectUser(userIndex)}
                  >
                    {Number.isFinite(user.user_id) ? user.user_id : '?'}
                  </button>
                </th>
                {columns.shown.map((lockIndex, columnPosition) => {
                  const value = user.permissions[lockIndex]!;
                  const text = PERMISSION_TEXT[value] ?? { symbol: String(value), label: `value ${value}` };
                  const marked = isProblem(userIndex, lockIndex);
                  return (
                    <td key={lockIndex} class={`acl-cell acl-cell-${value}${marked ? ' acl-problem' : ''}`}>
                      <button
                        type="button"
                        data-cell={`${rowPosition}:${columnPosition}`}
                        tabIndex={rowPosition === row && columnPosition === column ? 0 : -1}
                        disabled={props.readOnly}
                        title={`${value}: ${text.label}`}
                        aria-label={`User ${user.user_id}, lock ${model.locks[lockIndex]}: ${text.label}`}
                        aria-invalid={marked || undefined}
                        aria-describedby={marked ? problem!.messageId : undefined}
                        onClick={() => props.onToggle(userIndex, lockIndex)}
                        onFocus={() => setFocus({ row: rowPosition, column: columnPosition })}
                      >
                        {text.symbol}
                      </button>
                    </td>
                  );
                })}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
