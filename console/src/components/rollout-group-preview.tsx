import type { RolloutPreview } from '../api/client.ts';

/** The group sizes the server would choose now for the form's rollout, as a table. */
export function RolloutGroupPreview({ preview, loading }: { preview: RolloutPreview | undefined; loading: boolean }) {
  if (preview === undefined) {
    return (
      <p class="muted" role="status">
        {loading ? 'Counting the OKMs…' : 'Choose a release and the groups to see how many OKMs each group gets.'}
      </p>
    );
  }
  let cumulative = 0;
  return (
    <div aria-busy={loading} data-testid="rollout-preview">
      <p role="status">
        <strong>{preview.eligible.toLocaleString()}</strong> OKM{preview.eligible === 1 ? '' : 's'} would be updated
        {preview.up_to_date > 0 && <span class="muted"> ({preview.up_to_date.toLocaleString()} already run this version or newer and are left out)</span>}.
      </p>
      {preview.eligible === 0 ? (
        <p class="notice notice-warning">The rollout would reach no OKM: none matches that is below this version, has no pin of its own and is in no other unfinished rollout.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col" class="num">Reaches</th>
                <th scope="col" class="num">OKMs in the group</th>
                <th scope="col" class="num">OKMs reached</th>
              </tr>
            </thead>
            <tbody>
              {preview.groups.map((group, index) => {
                cumulative += group.okms;
                return (
                  <tr key={index}>
                    <th scope="row">Group {index + 1}</th>
                    <td class="num">{group.percent} %</td>
                    <td class="num">{group.okms.toLocaleString()}</td>
                    <td class="num">{cumulative.toLocaleString()}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
