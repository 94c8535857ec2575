import type { DriftReport, OkmRecord } from '../../api/client.ts';
import { resolverValues } from '../../resolver-values.ts';
import { LocalTime } from '../relative-time.tsx';
import { Badge } from '../state-badge.tsx';

/**
 * Configured and reported values side by side, one row per resolver in the seed's order (the
 * drift report's), the row whose correction the next poll will send highlighted.
 */
export function DriftTable({ okm, drift, pendingMessages }: { okm: OkmRecord; drift: DriftReport; pendingMessages: number }) {
  const next = drift.resolvers.find((resolver) => !resolver.in_step)?.name;
  return (
    <div class="table-wrap">
      <table data-testid="drift-table">
        <caption class="visually-hidden">Configured and reported values by resolver, in the order the poll checks them</caption>
        <thead>
          <tr>
            <th scope="col">Resolver</th>
            <th scope="col">Configured</th>
            <th scope="col">Reported</th>
            <th scope="col">Verdict</th>
          </tr>
        </thead>
        <tbody>
          {drift.resolvers.map((resolver) => {
            const values = resolverValues(resolver.name, okm, pendingMessages);
            const isNext = resolver.name === next;
            return (
              <tr key={resolver.name} class={isNext ? 'highlight' : undefined} data-resolver={resolver.name} aria-current={isNext ? 'step' : undefined}>
                <th scope="row">
                  {values.label}
                  <div class="mono small muted">{resolver.name}</div>
                </th>
                <td class="break">{values.configured}</td>
                <td class="break mono">{values.reportedTime === undefined ? values.reported : <LocalTime value={values.reportedTime} />}</td>
                <td>
                  {resolver.in_step ? (
                    <Badge kind="in_step" label="In step" />
                  ) : (
                    <>
                      <Badge kind="drifting" label={isNext ? 'Next correction' : 'Will correct'} />
                      <div class="mono small break">{JSON.stringify(resolver.correction)}</div>
                    </>
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
